"""The five seed experiments (cases/experiments/*.yaml), each run end to end at tiny size
with `stallscope experiment NAME --size tiny`: real builds (cached, shared with
tests/test_patches.py), real servers and load generators on 127.0.0.1. The report must
carry the seed's numbers beside ours and the agreement of the directions; the experiment
files are checked like case files (errors name file and line)."""
from __future__ import annotations

import html
import json
import re
import subprocess
import sys

import pytest

from collectors.sweep.experiment import experiment_files, load_experiment
from collectors.workload.casefile import CaseError
from tests.conftest import REPO
from tests.conftest_run import cli_env
from tests.test_report_html import CHROMIUM, PROBE, dump_dom

SEEDS = {"mset-15043": "redis/redis#15043", "hgetall-14988": "redis/redis#14988",
         "rdb-load-2311": "valkey-io/valkey#2311", "zrange-2867": "valkey-io/valkey#2867",
         "prefetch-batch-amortization": "Valkey blog"}
AGREES = ("yes", "no", "below", "undecided")


def test_every_seed_has_an_experiment_with_its_numbers_and_run_time():
    assert set(experiment_files()) == set(SEEDS)
    for name, seed in SEEDS.items():
        exp = load_experiment(name)
        assert exp.seed.startswith(seed) and len(exp.variants) == 2
        assert "2-core" in exp.default_run_time
        rows = [r for p in exp.parts for r in p.seed_rows]
        assert rows and all(r.setup and r.gain is not None for r in rows)
        assert "tiny" in exp.sizes
    doc = (REPO / "docs" / "experiments.md").read_text()
    readme = (REPO / "README.md").read_text()
    for name in SEEDS:
        assert f"stallscope experiment {name}" in doc
        # the README's run time is the experiment file's (what `experiment list` prints)
        row = next(l for l in readme.splitlines() if l.startswith(f"| `stallscope experiment {name}` |"))
        cell = row.rstrip(" |").rsplit("|", 1)[1].strip()
        assert cell and load_experiment(name).default_run_time.startswith(cell), (name, cell)


def test_a_seed_row_stands_beside_points_that_share_an_axis():
    from analysis.sweep.seeds import match
    mset50 = load_experiment("mset-15043").parts[1].seed_rows
    assert [r.setup for r in mset50][:2] == ["50 keys, 10M x 10 B", "50 keys, 10M x 100 B"]
    # default size: both axes named; the closest row wins
    assert match(mset50, {"value": "100", "keys": "10M"}).setup == "50 keys, 10M x 100 B"
    assert match(mset50, {"value": "10", "keys": "1M"}).setup.startswith("1M x 10 B")
    assert match(mset50, {"value": "1000", "keys": "10M"}) is None      # the seed has no such row
    # small size: key counts differ, the value still places the row
    assert match(mset50, {"value": "100"}).setup == "50 keys, 10M x 100 B"
    # a point on an axis no row names has no seed beside it (it used to take the first row)
    assert match(mset50, {"dataset.keys": "20K"}) is None


def test_a_minor_change_is_flat_beside_the_seed():
    """A decided change under our 3% line reads flat, on the seeds' own 3% waterline: beside
    the seed's 10.9% faster load it disagrees when our interval leaves the seed's change out,
    and is undecided when the interval still holds it (CI met both at tiny size)."""
    from types import SimpleNamespace as NS
    from analysis.sweep.seeds import SeedRow, agreement
    seed = SeedRow(at={"value": "10"}, setup="8 B", base=84.954, cand=75.715, gain=0.109, unit="s")

    def point(verdict, lo, hi):
        ch = NS(verdict=verdict, rel_ci_low=lo, rel_ci_high=hi, detectable=0.02)
        return NS(metric=NS(change=ch, higher_is_better=False))
    # load time -1.5% [-2.5, -0.5]: decided, minor, and far from the seed's -10.9%
    assert agreement(point("minor improvement", -0.025, -0.005), seed) == "no"
    # the same verdict with an interval that reaches -10.9% cannot tell them apart
    assert agreement(point("minor improvement", -0.12, -0.005), seed) == "undecided"
    assert agreement(point("improvement", -0.12, -0.05), seed) == "yes"
    assert agreement(point("regression", 0.05, 0.12), seed) == "no"


def test_experiment_file_errors_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    text = (REPO / "cases" / "experiments" / "zrange-2867.yaml").read_text()
    bad.write_text(text.replace("name: zrange-2867", "name: bad").replace("gain: 0.027", "gain: lots"))
    with pytest.raises(CaseError) as e:
        load_experiment(str(bad))
    line = next(i for i, l in enumerate(bad.read_text().splitlines(), 1) if "gain: lots" in l)
    assert str(e.value).startswith(f"{bad}:{line}: parts.0.seed_rows.1.gain: expected")
    bad.write_text(text.replace("name: zrange-2867", "name: bad").replace("  - id: sets", "  - id: sets\n    colour: red"))
    with pytest.raises(CaseError, match=r"bad.yaml:\d+: parts.0.colour: unknown key"):
        load_experiment(str(bad))
    # a bool is not a count, and a count is not a bool
    for was, now, msg in (("reps: 5", "reps: true", "options.reps: expected int, got True"),
                          ("skip_unfit: true", "skip_unfit: 1", "options.skip_unfit: expected bool, got 1")):
        bad.write_text(text.replace("name: zrange-2867", "name: bad").replace(was, now, 1))
        with pytest.raises(CaseError, match=rf"bad.yaml:\d+: {msg}"):
            load_experiment(str(bad))


@pytest.mark.heavy
def test_cli_list_and_plan():
    p = subprocess.run([sys.executable, "-m", "collectors", "experiment", "list"], cwd=REPO,
                       env=cli_env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and all(n in p.stdout for n in SEEDS)
    p = subprocess.run([sys.executable, "-m", "collectors", "experiment", "zrange-2867", "--plan"],
                       cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "5 points over dataset.keys (5)" in p.stderr and "p04-keys-1M" in p.stderr
    # the seed's 2M sets (about 34 GiB with the server's overhead): listed as not run where
    # they do not fit, and the plan is not refused (the file sets skip_unfit)
    line = next(l for l in p.stderr.splitlines() if "p05-keys-2M" in l)
    from collectors.sweep.directory import host_summary
    if (host_summary().memory_bytes or 0) < 32 * 2**30:
        assert "NOT RUN: needs about" in line
    assert "zrange-2867 at size default: about" in p.stderr


def run_small(name: str, tmp_path) -> tuple[dict, str, str]:
    out, rep = tmp_path / "exp", tmp_path / "report"
    p = subprocess.run([sys.executable, "-m", "collectors", "experiment", name, "--size", "tiny",
                        "--no-progress", "--out", str(out), "--report-out", str(rep)],
                       cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=1500)
    assert p.returncode == 0, p.stderr[-4000:]
    # progress across the whole experiment: each part starts with the time left in all
    assert "part 1/" in p.stderr and "; the experiment about " in p.stderr
    res = json.loads((rep / "results.json").read_text())
    md = (rep / "report.md").read_text()
    assert res["schema"] == "stallscope.experiment-results/1" and res["status"] == "complete"
    assert res["seed"].startswith(SEEDS[name]) and f"Seed: {SEEDS[name]}".replace("#", "\\#") in md
    for part in res["parts"]:
        points = part["sweep"]["points"]
        assert points and all(p["status"] == "complete" and p["metric"] for p in points)
        for p, s in zip(points, part["seed_rows"]):
            assert s["point"] == p["id"]
            if s["seed"] is not None:
                assert s["agrees"] in AGREES
                # the row beside the point names at least one of its axes and agrees on all,
                # or names none at all (a seed with one number for every point)
                at = s["seed"]["at"]
                shared = [k for k in at if k in p["labels"]]
                assert (shared or not at) and all(p["labels"][k] == at[k] for k in shared)
                # the agreement is our verdict against the seed's direction; a decided change
                # under our 3% line is flat, as the seeds call one under their 3% waterline
                ours = {"improvement": "gain", "regression": "loss", "no change": "flat",
                        "minor improvement": "flat", "minor regression": "flat"}.get(
                    p["metric"]["change"]["verdict"])
                gain = s["seed"]["gain"]
                seed_dir = "gain" if gain >= 0.03 else "loss" if gain <= -0.03 else "flat"
                # "no change" that cannot tell the seed's change from none is undecided
                ch, sd = p["metric"]["change"], s["seed"]
                seed_rel = (sd["cand"] / sd["base"] - 1 if sd.get("base") and sd.get("cand")
                            else gain if p["metric"]["higher_is_better"] else -gain)
                holds = ch["rel_ci_low"] is not None and ch["rel_ci_low"] <= seed_rel <= ch["rel_ci_high"]
                if ours == "flat" and seed_dir != "flat" and holds:
                    ours = None
                # a seed's change smaller than what our run could see is "below" it
                below = ch.get("detectable") is not None and abs(seed_rel) < ch["detectable"]
                want = ("below" if below else "undecided") if ours is None else \
                    "yes" if ours == seed_dir else "no"
                assert s["agrees"] == want
            assert (rep / p["report"] / "report.html").is_file()
    assert "| Seed | Agrees | Report |" in md
    return res, md, str(rep)


@pytest.mark.slow
def test_mset_15043_small(tmp_path):
    res, md, rep = run_small("mset-15043", tmp_path)
    assert [p["id"] for p in res["parts"]] == ["mset10", "mset50"]
    # the seed's 10 keys x 100 B row stands beside our value=100 point, with its numbers
    assert "+3.7% (10 keys, 10M x 100 B: 127,689 → 132,416 ops/s)" in md
    mset50 = res["parts"][1]["sweep"]
    assert [p["labels"] for p in mset50["points"]] == [{"value": "10"}, {"value": "100"}]
    # beside each, the seed's 50-keys row of its value size (10M keys: the seed's own size)
    assert [s["seed"]["setup"] for s in res["parts"][1]["seed_rows"]] == \
        ["50 keys, 10M x 10 B", "50 keys, 10M x 100 B"]
    assert all(p["method"] == "paired windows, two servers loaded at once" for p in mset50["points"])
    if CHROMIUM is None:
        pytest.fail("chromium not found: install it with `apt-get install -y chromium` (or `make setup`)")
    from pathlib import Path
    page = (Path(rep) / "report.html").read_text()
    probe = Path(rep) / "probe.html"
    probe.write_text(page.replace("<head>", "<head>\n" + PROBE, 1))
    dom, _ = dump_dom(probe)
    data = json.loads(html.unescape(dom.split('<pre id="probe">', 1)[1].split("</pre>", 1)[0]))
    assert data["errors"] == [] and len(data["plots"]) == 2          # a crossover plot per part
    assert all(w > 400 and h > 200 for w, h in data["plots"])
    assert dom.count('<th>Seed</th>') == 2 and "agree-" in dom


@pytest.mark.slow
def test_hgetall_14988_small(tmp_path):
    res, md, _ = run_small("hgetall-14988", tmp_path)
    fields, onekey = res["parts"]
    assert [p["labels"]["fields"] for p in fields["sweep"]["points"]] == ["100", "500"]
    assert "+42.6% (10K hashes x 500 fields x 100 B, x86: 14,750 → 21,033 ops/s)" in md
    # no profile reps at small size: no empty lookup column, a line that says why instead
    assert "CPU per operation" not in md and "No lookup column: no profile reps" in md
    assert [s["seed"]["setup"] for s in onekey["seed_rows"]] == [
        "1key-hash-1K-fields-hgetall, x86", "1key-hash-1K-fields-hgetall-pipeline-10, x86"]


@pytest.mark.slow
def test_rdb_load_2311_small(tmp_path):
    res, md, _ = run_small("rdb-load-2311", tmp_path)
    (part,) = res["parts"]
    for p in part["sweep"]["points"]:
        m = p["metric"]
        assert m["metric"] == "load time" and m["unit"] == "s" and not m["higher_is_better"]
        assert m["base"]["n"] == m["cand"]["n"] == 3
        # the best (min-of-N, as the seed reports) beside the median
        assert 0 < p["best"]["base"] <= m["base"]["median"] and 0 < p["best"]["prefetch"] <= m["cand"]["median"]
    assert "| best base | best prefetch | Seed | Agrees | Report |" in md
    assert "8 B x 134,217,728 = 1 GB, min of 5: 84.954 → 75.715 s" in md


@pytest.mark.slow
def test_zrange_2867_small(tmp_path):
    res, md, _ = run_small("zrange-2867", tmp_path)
    sweep = res["parts"][0]["sweep"]
    assert (sweep["base"], sweep["cand"]) == ("unembedded", "embedded")
    assert sweep["sets"]["workload.command"] == ["ZRANGE", "zset:__rand_int__", "0", "0"]
    # 10K sets: the seed's row is there; 2K sets has none at that size
    assert [s["seed"]["setup"] if s["seed"] else None for s in res["parts"][0]["seed_rows"]] == \
        [None, "10,000 sets, best of 5"]


@pytest.mark.slow
def test_prefetch_batch_amortization_small(tmp_path):
    res, md, _ = run_small("prefetch-batch-amortization", tmp_path)
    for part in res["parts"]:
        (p,) = part["sweep"]["points"]
        assert p["labels"] == {"pipeline": "16"}
        assert p["method"] == "paired windows, one server process (CONFIG SET between windows)"
    assert res["parts"][1]["sweep"]["sets"] == {"server.io_threads": 2}
    assert "+52.6% (SET 512 B, 3M keys, io-threads 9, 16-core Graviton 3: 780,000 → 1,190,000 SET/s)" in md


@pytest.mark.slow
def test_interrupted_experiment_resumes_to_the_same_report(tmp_path):
    import os
    import signal
    import time
    from tests.conftest_run import descendants, still_alive, wait_for
    out, rep = tmp_path / "exp", tmp_path / "report"
    proc = subprocess.Popen([sys.executable, "-m", "collectors", "experiment", "rdb-load-2311",
                             "--size", "tiny", "--no-progress", "--out", str(out)],
                            cwd=REPO, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)

    def running():
        for f in out.glob("*/load/sweep.json"):
            pts = json.loads(f.read_text())["points"]
            if pts[0]["status"] == "running" and pts[0].get("run_dir"):
                return f.parent.parent
        return None
    exp_dir = wait_for(running, 300, "the first point to start", poll_s=0.2)
    time.sleep(1)
    kids = descendants(proc.pid)
    os.killpg(proc.pid, signal.SIGINT)
    log = proc.communicate(timeout=120)[0].decode()
    assert proc.returncode == 130, log[-3000:]
    assert f"stallscope experiment --resume {exp_dir}" in log
    time.sleep(1)
    assert still_alive(kids) == []
    assert json.loads((exp_dir / "experiment.json").read_text())["status"] == "interrupted"
    p = subprocess.run([sys.executable, "-m", "collectors", "experiment", "--resume", str(exp_dir),
                        "--no-progress", "--report-out", str(rep)], cwd=REPO, env=cli_env(),
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    d = json.loads((exp_dir / "experiment.json").read_text())
    assert d["status"] == "complete" and len(d["resumes"]) == 1
    res = json.loads((rep / "results.json").read_text())
    assert [pt["status"] for pt in res["parts"][0]["sweep"]["points"]] == ["complete", "complete"]


@pytest.mark.heavy
def test_only_narrows_the_plan_to_named_rows():
    """--only PART[:AXIS=VALUE,...]: the plan (and so the run) holds just those points; a part
    or value that does not exist is refused with what does."""
    def plan(*only):
        args = [a for o in only for a in ("--only", o)]
        return subprocess.run([sys.executable, "-m", "collectors", "experiment", "mset-15043",
                               "--plan", *args], cwd=REPO, env=cli_env(), capture_output=True,
                              text=True, timeout=120)
    p = plan("mset10:value=1000,keys=10M", "mset50:value=10")
    assert p.returncode == 0, p.stderr
    # the plan's point lines: id, then the key count
    points = re.findall(r"experiment:\s+(p\d\d-\S+)\s+[\d,]+\s", p.stderr)
    assert points == ["p06-value-1000-keys-10M", "p01-value-10-keys-1M", "p02-value-10-keys-10M"]
    assert "(only mset10:value=1000,keys=10M, mset50:value=10)" in p.stderr
    p = plan("mset10:value=10,keys=10M")
    assert p.returncode == 0 and "part mset50" not in p.stderr and "part mset10" in p.stderr
    bad = plan("nope")
    assert bad.returncode == 2 and "no part 'nope' (parts: mset10, mset50)" in bad.stderr
    bad = plan("mset10:value=7")
    assert bad.returncode == 2 and "no point of part 'mset10' has those values" in bad.stderr
    assert "value=1000,keys=10M" in bad.stderr
    bad = plan("mset10:value")
    assert bad.returncode == 2 and "'value' is not AXIS=VALUE" in bad.stderr
    # a kept point whose dataset a left-out point would have written writes it itself
    both, one = (subprocess.run([sys.executable, "-m", "collectors", "experiment", "hgetall-14988",
                                 "--plan", "--only", sel], cwd=REPO, env=cli_env(),
                                capture_output=True, text=True, timeout=120)
                 for sel in ("onekey", "onekey:workload.pipeline=10"))
    assert both.returncode == one.returncode == 0, one.stderr
    line = lambda p: next(l for l in p.stderr.splitlines() if "p02-pipeline-10 " in l and "B " in l)
    assert "(data of p01-pipeline-1)" in line(both) and "(data of" not in line(one)


@pytest.mark.slow
def test_one_row_again_until_its_interval_is_narrow(tmp_path):
    """What docs/experiments.md's re-runs do: one row of an experiment with --precision; the
    report holds that row only, with its seed row, and the run records why it ended."""
    out, rep = tmp_path / "exp", tmp_path / "report"
    p = subprocess.run([sys.executable, "-m", "collectors", "experiment", "rdb-load-2311",
                        "--size", "tiny", "--only", "load:value=100", "--precision", "5%",
                        "--budget", "1m", "--no-progress", "--out", str(out), "--report-out",
                        str(rep)], cwd=REPO, env=cli_env(), capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stderr[-4000:]
    res = json.loads((rep / "results.json").read_text())
    (part,) = res["parts"]
    (point,) = part["sweep"]["points"]
    assert point["labels"]["value"] == "100" and point["status"] == "complete"
    (row,) = part["seed_rows"]
    assert row["seed"]["setup"] == "32 B x 33,554,432 = 1 GB, min of 5"
    exp_dir = next(out.glob("*/experiment.json")).parent
    assert json.loads((exp_dir / "experiment.json").read_text())["only"] == ["load:value=100"]
    run = json.loads((exp_dir / "load" / point["run_dir"] / "manifest.json").read_text())
    prec = run["precision"]
    assert run["options"]["precision"] == 0.05 and "target" not in prec
    assert prec["ended_by"] in ("precision", "budget")
    ch = point["metric"]["change"]
    # with 3 loads per side a run either decides or says what it could have seen
    if ch["verdict"] not in ("improvement", "regression"):
        assert ch["detectable"] is not None and ch["detectable"] > 0
