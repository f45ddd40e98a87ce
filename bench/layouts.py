"""`make bench` figure 14: how much code layout alone moves Redis's and Valkey's throughput.

The same source linked in two orders (`+layout=SEED`, docs/variants.md) and compared in
paired reps: any change is the layout's. Each recorded pair (layout a against layout b, its
own run) gives the mean of its reps' log ratios m_k and their spread. Layouts are
exchangeable, so m_k has mean 0 and variance 2·σ_L² + σ_r²/n (σ_L the layout spread of one
build, σ_r the rep-to-rep sd, n reps); K independent pairs give

  σ_L  = sqrt(max(0, (Σ m_k² / K − s_r²/n) / 2))            (method of moments)
  upper 95% bound from Σ m_k² / (2σ_L² + σ_r²/n) ~ χ²_K       (s_r taken as known)

and a test of "no layout effect": Σ m_k² / (s_r²/n) against χ²_K (each pair's mean, scaled
by its own reps' spread, is then a unit normal).

The figure reads bench/data/layout_spread.json (each pair's per-rep log ratios, where and
when they were recorded); `--record RUN_DIR ...` writes it from run directories of
`stallscope run CASE --variant a=SRC+layout=A --variant b=SRC+layout=B` (docs/statistics.md,
"Code layout", gives the commands).

    .venv/bin/python bench/layouts.py [--data FILE]
    .venv/bin/python bench/layouts.py --record runs/DIR1 runs/DIR2 ... [--note TEXT]
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

from scipy import stats as sps

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis.compare import pair_clusters  # noqa: E402
from analysis.compare.throughput import paired_units  # noqa: E402
from analysis.intervals import paired_t_interval  # noqa: E402
from analysis.inputs.rundir import load_run  # noqa: E402

DATA = ROOT / "bench" / "data" / "layout_spread.json"
SEED = re.compile(r"\+layout=(\d+)")


def record(dirs: list[str], note: str) -> dict:
    """Each run directory's per-rep log ratios (cand/base) and which layouts they compare."""
    pairs = []
    for d in dirs:
        run = load_run(Path(d))
        m = run.manifest
        names = list(m.variants)
        base, cand = names[0], names[1]
        specs = {n: m.variants[n].spec for n in names}
        seeds = [int(SEED.search(specs[n]).group(1)) if SEED.search(specs[n]) else 0 for n in (base, cand)]
        units = pair_clusters.rep_units(paired_units(run, base, cand))
        pairs.append({"run_id": m.run_id, "case": m.case.name, "size": m.options.size,
                      "source": SEED.sub("", specs[base]),
                      "version": m.variants[base].version, "layouts": seeds,
                      "log_ratios": [math.log(u.cand / u.base) for u in units]})
    return {"note": note, "pairs": pairs}


def figure(doc: dict, where: str) -> None:
    print(f"== 14. code layout: the same source in two link orders, paired ({where})")
    if doc.get("note"):
        print(f"   {doc['note']}")
    by: dict[str, list[dict]] = {}
    for p in doc["pairs"]:
        by.setdefault(f"{p['source']} ({p['version']}), {p['case']} {p['size']}", []).append(p)
    for what, pairs in by.items():
        print(f"-- {what}")
        means, var_sum, df_sum, n_all = [], 0.0, 0, []
        for p in pairs:
            x = p["log_ratios"]
            n = len(x)
            mean = sum(x) / n
            var = sum((v - mean) ** 2 for v in x) / (n - 1)
            lo, hi, _ = paired_t_interval(x, 0.95)       # the interval compare prints
            a, b = p["layouts"]
            print(f"   layout {b} vs {a}: {math.expm1(mean):+.2%} [{math.expm1(lo):+.2%}, "
                  f"{math.expm1(hi):+.2%}] over {n} paired reps (rep sd {math.sqrt(var):.2%})")
            means.append(mean)
            var_sum += var * (n - 1)
            df_sum += n - 1
            n_all.append(n)
        k, s2 = len(means), var_sum / df_sum
        n_h = k / sum(1 / n for n in n_all)                  # harmonic mean of the reps a pair
        ss = sum(m * m for m in means)
        sigma = math.sqrt(max(0.0, (ss / k - s2 / n_h) / 2))
        upper = math.sqrt(max(0.0, (ss / sps.chi2.ppf(0.05, k) - s2 / n_h) / 2))
        p_none = float(sps.chi2.sf(ss / (s2 / n_h), k))
        print(f"   layout spread of one build: sd {sigma:.2%} (95% upper bound {upper:.2%}) from "
              f"{k} independent pairs; rep-to-rep sd {math.sqrt(s2):.2%} ({df_sum} df); "
              f"no layout effect: p = {p_none:.2g}")


def main() -> int:
    ap = argparse.ArgumentParser(prog="bench/layouts.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(DATA), help="the recorded pairs (default: %(default)s)")
    ap.add_argument("--record", nargs="+", metavar="RUN_DIR", help="write --data from these runs")
    ap.add_argument("--note", default="", help="with --record: where and when, as one line")
    a = ap.parse_args()
    if a.record:
        Path(a.data).parent.mkdir(parents=True, exist_ok=True)
        Path(a.data).write_text(json.dumps(record(a.record, a.note), indent=1) + "\n")
        print(f"wrote {a.data}")
    figure(json.loads(Path(a.data).read_text()), a.data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
