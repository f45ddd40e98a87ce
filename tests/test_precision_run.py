"""`stallscope run --precision`, for real at CI size: the first stage's spread plans the
reps, the budget ends a run that cannot reach its precision, the progress lines show the
interval and what is left, and the report says which ended the run."""
from __future__ import annotations

import math
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from analysis import twostage
from analysis.compare.engine import analyse
from analysis.compare.options import CompareOptions
from analysis.compare.throughput import main_log_ratios
from analysis.inputs.rundir import load_run
from analysis.report import markdown
from tests.conftest import REPO
from tests.conftest_run import BASE_SPEC, CAND_SPEC, built, cli_env

pytestmark = pytest.mark.slow


def run(tmp_path: Path, *extra: str) -> tuple[Path, str]:
    built("base", BASE_SPEC), built("cand", CAND_SPEC)
    r = subprocess.run([sys.executable, "-m", "collectors", "run", "mset-50keys", "--size", "tiny",
                        "--variant", f"base={BASE_SPEC}", "--variant", f"cand={CAND_SPEC}",
                        "--profile", "off", "--paired-windows", "16", "--out", str(tmp_path),
                        "--no-progress", *extra],
                       cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return Path(r.stdout.strip().splitlines()[-1]), r.stderr


def test_a_reachable_precision_runs_the_reps_its_first_stage_plans(tmp_path):
    run_dir, err = run(tmp_path, "--precision", "30%", "--reps", "3")
    m = load_run(run_dir).manifest
    p = m.precision
    assert (m.options.precision, m.pilot, p.ended_by) == (0.3, 3, "precision")
    assert not {"target", "budget_s", "pilot", "on"} & set(p.to_json())   # in options only (schema 4)
    x = main_log_ratios(load_run(run_dir), "base", "cand")
    # Stein's N from the first stage's spread alone, and the run ran exactly that many
    assert p.pilot_sd == pytest.approx(statistics.stdev(x[:3]), abs=1e-6)
    assert p.planned == twostage.planned_reps(p.pilot_sd, 3, math.log1p(0.3)) == len(x)
    assert [r.status for r in m.schedule if r.kind == "paired"] == ["ok"] * p.planned
    assert "stallscope run: precision: first stage 1 of 3 paired reps done" in err
    assert f"stallscope run: precision: {p.planned} paired reps, change " in err and "0 more planned" in err
    r = analyse(load_run(run_dir), CompareOptions())
    row = r.paired[0]
    assert "two-stage" in row.change.method and row.base.n == p.planned
    # the interval is as narrow as asked: t * s0 / sqrt(N) <= log(1.3) by Stein's N
    assert r.measurement.ended_by == "precision" and r.measurement.half_width <= 0.3
    assert f"reached with {p.planned} paired reps as planned" in markdown.render(r)


def test_the_budget_ends_a_run_that_cannot_reach_its_precision(tmp_path):
    # ±0.3% needs far more reps than 45 seconds allow (the first stage alone may spend them)
    run_dir, err = run(tmp_path, "--precision", "0.3%", "--reps", "3", "--budget", "45s")
    m = load_run(run_dir).manifest
    p = m.precision
    paired = [r for r in m.schedule if r.kind == "paired"]
    assert p.ended_by == "budget" and p.planned > len(paired) >= 3
    assert all(r.status == "ok" for r in paired)               # the rest were never scheduled
    assert "budget of 45s spent after" in p.note and p.spent_s <= 45 + 60
    assert "stallscope run: precision: budget of 45s spent after" in err
    r = analyse(load_run(run_dir), CompareOptions())
    assert r.measurement.ended_by == "budget" and r.measurement.half_width > 0.003
    assert f"the budget ended the run after {len(paired)} of {p.planned} planned paired reps" \
        in r.measurement.precision
