"""`make bench` figure 7: false verdicts in a report's function tables, with and without
the false discovery rate control (analysis/compare/multiplicity.py), on recorded profiles.

An A/A run of the demo case (tests/data/runs/mset-aa-default: one build on both sides,
eight profile reps each) holds 16 profile reps of one build: no function truly changed
between any two groups of them. Each simulated run draws 3 + 3 of them at random (the
default --profile-reps), calls the first three "a" and the others "b", and builds the
report's profile section as `stallscope compare` does. Every row it then calls an
"improvement" or a "regression" is a false verdict:

- naive: each row judged alone at 95% (the rule before the control);
- controlled: the rows of each function family judged together (Benjamini-Hochberg at
  5%, intervals at the false-coverage-rate level), what stallscope ships. The families
  (analysis/compare/families.py): the focus functions the case declares (both thread
  views, the thread groups, the whole profile's CPU time per operation), and the top-mover
  candidates.

The figure is the share of simulated runs with at least one false verdict in the focus
family, in the top-mover family, and anywhere in the function tables: the controlled rule
promises at most 5% per family (so at most about 10% anywhere).

  .venv/bin/python bench/fdr.py
  .venv/bin/python bench/fdr.py --runs 400 --seed 7
"""
from __future__ import annotations

import argparse
import math
import sys
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from unittest import mock

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis import stats  # noqa: E402
from analysis.compare import profile_reps, profiles as profiles_mod  # noqa: E402
from analysis.compare.options import CompareOptions  # noqa: E402
from analysis.compare.results import ProfileSection  # noqa: E402
from analysis.inputs.rundir import RunDir, load_run  # noqa: E402

RUN = REPO / "tests" / "data" / "runs" / "mset-aa-default"
PER_SIDE = 3
CALLED = stats.DECIDED      # a minor change is a decided one too


@dataclass
class Outcome:
    rule: str
    runs: int
    with_false: int                  # runs with at least one false verdict
    false_rows: int                  # false verdicts over all runs
    rows: float                      # statistical rows per run, on average
    with_false_focus: int = 0        # runs with a false verdict among the focus rows
    with_false_movers: int = 0       # runs with a false verdict among the top movers

    @property
    def rate(self) -> float:
        return self.with_false / self.runs

    def interval(self) -> tuple[float, float]:
        """Wilson 95% interval of the rate (the runs share reps, so it is a little narrow)."""
        n, p, z = self.runs, self.rate, 1.96
        mid = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return max(0.0, mid - half), min(1.0, mid + half)


def called(sec: ProfileSection) -> tuple[list[str], list[str], int]:
    """(the focus family's rows the section calls a change, the top movers' rows it calls
    a change, how many rows had a statistic)."""
    out, movers, judged = [], [], 0
    for rows, found in ((sec.focus + sec.focus_other_view, out), (sec.movers, movers)):
        for r in rows:
            for k in ("flat", "cum"):
                j = getattr(r, f"{k}_verdict")
                if j is not None and j.basis:
                    judged += 1
                    if j.verdict in CALLED:
                        found.append(f"{r.name} ({k}, {r.thread}): {j.verdict}")
    for t in sec.threads:
        judged += 1
        if t.change.verdict in CALLED:
            out.append(f"thread {t.group}: {t.change.verdict}")
    tot = sec.per_op_total
    if tot is not None and tot.change is not None:
        judged += 1
        if tot.change.verdict in CALLED:
            out.append(f"CPU time per operation: {tot.change.verdict}")
    return out, movers, judged


@contextmanager
def _split(a: list[profile_reps.ProfileRep], b: list[profile_reps.ProfileRep], controlled: bool):
    """profiles() reading these reps as variants a and b (rep numbers 1..n each side)."""
    sides = {"a": [replace(r, rep=i + 1) for i, r in enumerate(a)],
             "b": [replace(r, rep=i + 1) for i, r in enumerate(b)]}
    with mock.patch.object(profiles_mod.profile_reps, "load", lambda run, variants: sides):
        if controlled:
            yield
        else:
            with mock.patch.object(profiles_mod, "function_fdr",
                                   lambda sec, opts, candidates=(): (None, None)):
                yield


def simulate(run: RunDir, runs: int, seed: int, per_side: int = PER_SIDE
             ) -> tuple[Outcome, Outcome, list[str]]:
    """(naive, controlled, an example of the naive rule's false verdicts)."""
    names = tuple(run.manifest.variants)
    pool = [r for v, reps in profile_reps.load(run, names).items() for r in reps]
    if len(pool) < 2 * per_side:
        raise SystemExit(f"{run.path}: {len(pool)} profile reps, {2 * per_side} needed")
    focus = list(run.manifest.case.focus or [])
    opts = CompareOptions()
    rng = np.random.default_rng(seed)
    tallies = {True: [0, 0, 0, 0, 0], False: [0, 0, 0, 0, 0]}
    example: list[str] = []
    for _ in range(runs):
        pick = rng.choice(len(pool), 2 * per_side, replace=False)
        a, b = [pool[i] for i in pick[:per_side]], [pool[i] for i in pick[per_side:]]
        for controlled in (False, True):
            with _split(a, b, controlled):
                sec, _ = profiles_mod.profiles(run, "a", "b", focus, opts)
            focus_found, movers_found, judged = called(sec)
            found = focus_found + movers_found
            t = tallies[controlled]
            t[0] += bool(found)
            t[1] += len(found)
            t[2] += judged
            t[3] += bool(focus_found)
            t[4] += bool(movers_found)
            if found and not controlled and not example:
                example = found
    out = [Outcome(rule, runs, t[0], t[1], t[2] / runs, t[3], t[4])
           for rule, t in (("naive (each row at 95%)", tallies[False]),
                           ("controlled (BH 5%, FCR intervals)", tallies[True]))]
    return out[0], out[1], example


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", type=Path, default=RUN, help="an A/A run directory (default: %(default)s)")
    ap.add_argument("--runs", type=int, default=300, help="simulated runs (default %(default)s)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    run = load_run(args.run)
    naive, ctrl, example = simulate(run, args.runs, args.seed)
    print(f"figure 7: false verdicts in the function tables of A/A splits "
          f"({PER_SIDE}+{PER_SIDE} of the {args.run.name} profile reps, {args.runs} runs)")
    for o in (naive, ctrl):
        lo, hi = o.interval()
        print(f"  {o.rule:36s} runs with a false verdict {100 * o.rate:5.1f}% "
              f"[{100 * lo:.1f}, {100 * hi:.1f}]; {o.false_rows / o.runs:.2f} false verdicts "
              f"per run over {o.rows:.1f} statistical rows (focus family {100 * o.with_false_focus / o.runs:.1f}%, "
              f"top movers {100 * o.with_false_movers / o.runs:.1f}%)")
    if example:
        print("  e.g. the naive rule called: " + "; ".join(example[:3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
