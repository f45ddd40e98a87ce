"""A/A runs: the same build on both sides, so every difference is the host's noise. The
report must say it is an A/A run and must not call anything a change: with the function
verdicts judged together (docs/statistics.md, "Many comparisons at once") an A/A report of
the demo case has no ✅ or ❌ anywhere.

Two runs: one recorded at the demo's default size on this project's VM
(tests/data/runs/mset-aa-default, its SOURCES.md says how), read as it is: no mark in its
report; and one live at CI size. A live A/A run calls its throughput a change 5% of the
time and any function row at most 5% (that is what the levels mean), so the live test
checks what must hold every time: the run knows it is A/A, says so, and every verdict
follows from its interval; the rate of false verdicts is checked on recorded data
(tests/test_twostage.py, tests/test_multiplicity.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from analysis.compare.engine import analyse
from analysis.compare.options import CompareOptions
from analysis.compare.perf_blocks import rep_ratios
from analysis.inputs.rundir import load_run
from analysis.report import markdown
from collectors.abba import block_schedule
from tests.conftest import REPO
from tests.conftest_run import BASE_SPEC, built, cli_env

RECORDED = Path(__file__).parent / "data" / "runs" / "mset-aa-default"
MARKS = ("✅", "❌")


def check_aa(run_dir: Path, calls_nothing: bool) -> tuple[str, object]:
    r = analyse(load_run(run_dir), CompareOptions())
    md = markdown.render(r)
    assert r.measurement.aa and "> A/A run: both sides run the same binary with the same config" in md
    c = r.paired[0].change
    assert c.rel_ci_low <= c.rel <= c.rel_ci_high and c.detectable is not None
    if c.verdict == "improvement":
        assert c.rel_ci_low > 0
    elif c.verdict == "regression":
        assert c.rel_ci_high < 0
    if calls_nothing:
        found = [line for line in md.splitlines() if any(m in line for m in MARKS)]
        assert not found, f"an A/A report called something a change: {found[:3]}"
        assert c.verdict in ("no change", "unstable")
    return md, r


@pytest.mark.heavy
def test_the_recorded_aa_run_of_the_demo_case_calls_nothing_a_change():
    md, r = check_aa(RECORDED, calls_nothing=True)
    m = load_run(RECORDED).manifest
    assert m.case.name == "mset-50keys" and m.size == "default"
    assert m.variants["a"].binary_sha256 == m.variants["b"].binary_sha256
    # the interval holds 0, and the report says how large a change it could have seen
    c = r.paired[0].change
    assert c.rel_ci_low <= 0 <= c.rel_ci_high and c.detectable is not None
    assert "no change, could see " in md and "% (80% power)" in md
    # many function rows were judged, together: the focus family and the top movers'
    fam, movers = r.profile.fdr, r.profile.movers_fdr
    assert fam.comparisons >= 3 and movers.comparisons >= 10
    assert fam.discoveries == 0 and movers.discoveries == 0


@pytest.mark.heavy
def test_the_recorded_aa_at_the_budget_that_holds_13_reps_meets_every_target():
    """tests/data/runs/aa-default-13reps-xeon480: the default-size A/A on the 480 MiB-L3 Xeon
    guest whose 15-minute default holds 7 reps, run at the budget the default run named for
    13 (`--budget 23m`). Read at its last look's level, as the run read it: nothing decided
    anywhere, the throughput within ±2%, every focus function of 5% of the samples or more
    within ±5% (lookupKey's own cost at ~10% of the samples included) and no row marked as
    having missed its target; perf's cost cancels in the ratio (the blocks agree)."""
    run_dir = RECORDED.parent / "aa-default-13reps-xeon480"
    m = load_run(run_dir).manifest
    p = m.precision
    assert (p.planned, p.looks, p.ended_by, p.look) == (13, [4, 6, 10, 13], "answered", 4)
    assert m.options.perf_share == 0.75 and len(m.reps(kind="paired")) == 13
    md, r = check_aa(run_dir, calls_nothing=True)
    c = r.paired[0].change
    assert c.detectable <= 0.02 and r.measurement.missed == []
    big = [f for f in r.profile.focus if f.flat_verdict is not None and f.flat_verdict.target == 0.05]
    assert {f.name for f in big} >= {"dictFindByHash", "lookupKey"}
    for f in big:
        assert f.flat_verdict.target_missed is False, f.name
    assert r.profile.fdr.discoveries == 0 and r.profile.movers_fdr.discoveries == 0
    assert r.profiler_cost.on_off.rel_ci_low > -0.02 and r.profiler_cost.on_off.rel_ci_high < 0.02


@pytest.mark.slow
def test_a_live_aa_run_at_ci_size(tmp_path):
    built("a", BASE_SPEC)
    p = subprocess.run([sys.executable, "-m", "collectors", "run", "mset-50keys", "--size", "tiny",
                        "--variant", f"a={BASE_SPEC}", "--variant", f"b={BASE_SPEC}",
                        # 32 windows a paired rep (half the default 64): what is checked here
                        # holds at any number of windows; the rate of false verdicts is checked
                        # on recorded runs, and 3 reps keep the interval over reps. perf in 3/4
                        # of the blocks (--perf-share, what a run that decides may plan): one
                        # whole period of 8 blocks, so the perf-off blocks are still there
                        "--reps", "3", "--paired-windows", "32", "--perf-share", "3/4",
                        "--out", str(tmp_path), "--no-progress"],
                       cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "stallscope run: paired: A/A run: two servers of the same build loaded at once" in p.stderr
    run_dir = Path(p.stdout.strip().splitlines()[-1])
    run = load_run(run_dir)
    assert run.manifest.pairing.aa
    # perf followed the share's schedule (collectors/abba.py) and the flag is kept
    assert run.manifest.options.perf_share == 0.75
    assert run.manifest.command[run.manifest.command.index("--perf-share") + 1] == "3/4"
    for rep in run.manifest.reps(kind="paired"):
        doc = json.loads((run.rep_dir(rep) / "paired.json").read_text())
        assert [w["perf"] for w in doc["windows"]] == block_schedule(32, Fraction(3, 4))
    # the perf-off blocks left still check the tilt, one ratio a rep
    pairs = rep_ratios(run, "a", "b")
    assert len(pairs) == 3 and all(0.8 < on / off < 1.25 for off, on in pairs)
    md, r = check_aa(run_dir, calls_nothing=False)
    # the function rows, from the paired windows' profiles (the run's default: no separate
    # profile reps), are judged together, at the level the table prints
    assert r.profile.paired
    fam = r.profile.fdr
    assert fam is not None and f"These {fam.comparisons} focus function verdicts are judged together" in md
