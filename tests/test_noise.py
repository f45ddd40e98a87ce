"""This host's noise, kept by finished runs (collectors/host/noise.py) and used by the plans of
sweeps and experiments (collectors/sweep/noise_plan.py), from the recorded paired runs of
tests/data/runs/noise-* (their per-rep log ratios are real)."""
from __future__ import annotations

import dataclasses
import json
import math
import statistics
from pathlib import Path

import pytest

from analysis.inputs.host import HostSummary
from analysis import power
from analysis.compare.options import CompareOptions
from analysis.compare.throughput import main_log_ratios
from analysis.inputs.rundir import load_run
from analysis.sweep.sweep_options import SweepOptions
from collectors.host import noise
from collectors.runner import noise_log
from collectors.runner.new_manifest import rep_seconds
from collectors.sweep.noise_plan import noise_lines
from collectors.sweep.plan import make_plan

DATA = Path(__file__).parent / "data" / "runs"
RUNS = ("noise-paired-12reps-16pairs", "noise-paired-8reps-48pairs")


def keep(path: Path, name: str) -> dict:
    run = load_run(DATA / name)
    m = run.manifest
    ratios = main_log_ratios(run, "base", "prefetch")
    secs = [rep_seconds(r) for r in m.schedule if r.kind == "paired"]
    e = noise.entry(m.run_id, "servers", False, ratios, [s for s in secs if s], m.created)
    assert noise.record(m.host, "mset-50keys", "default", e, path)
    return e


def test_a_run_is_kept_per_host_and_case(tmp_path):
    store = tmp_path / "noise.json"
    e = keep(store, RUNS[0])
    ratios = main_log_ratios(load_run(DATA / RUNS[0]), "base", "prefetch")
    assert e["units"] == 12 and e["sd"] == pytest.approx(statistics.stdev(ratios), abs=1e-6)
    assert e["at"] == "2026-11-23T21:07:36Z" and 50 < e["unit_s"] < 90
    host = load_run(DATA / RUNS[0]).manifest.host
    got = noise.lookup(host, "mset-50keys", "default", path=store)
    assert got.runs == 1 and got.source == "this case" and got.sd == pytest.approx(e["sd"], abs=1e-6)
    # the same run again replaces itself; a second run is pooled by degrees of freedom
    keep(store, RUNS[0])
    f = keep(store, RUNS[1])
    both = noise.lookup(host, "mset-50keys", "default", path=store)
    pooled = math.sqrt((11 * e["sd"] ** 2 + 7 * f["sd"] ** 2) / 18)
    assert both.runs == 2 and both.sd == pytest.approx(pooled)
    # another case on this host falls back to this host's runs, and says so
    other = noise.lookup(host, "mget-100keys", "default", path=store)
    assert other.source == "other cases on this host" and other.sd == pytest.approx(pooled)
    # another machine has measured nothing; unpaired runs are a different kind of noise
    assert noise.lookup(dataclasses.replace(host, cpu_model="Other CPU"), "mset-50keys", "default", path=store) is None
    # a guest whose CPU name is the same on another L3 is another machine (its sizes are
    # other key counts): the Xeon guests of 480 and 260 MiB both say "Intel(R) Xeon(R) Processor"
    assert host.l3_bytes and f"| {round(host.l3_bytes / 2**20)} MiB L3" in noise.host_key(host)
    assert noise.lookup(dataclasses.replace(host, l3_bytes=host.l3_bytes // 2), "mset-50keys", "default",
                        path=store) is None
    assert noise.lookup(host, "mset-50keys", "default", paired=False, path=store) is None


def test_too_few_units_say_nothing(tmp_path):
    store = tmp_path / "noise.json"
    assert not noise.record(HostSummary(cpu_model="x"), "c", "small",
                            noise.entry("r", "servers", False, [0.1, 0.2], [60.0]), store)
    assert not store.exists()


def test_units_to_detect_solves_the_detectable_size():
    """The fewest paired units whose planned size (the method a run of n pairs decides with,
    analysis/power.py) reaches the change; more than the normal-theory count would say."""
    n = power.units_to_detect(0.043, 0.0345, 0.95)
    target = math.log1p(0.043)
    assert power.planned_size(n, 0.0345, 0.95) <= target < power.planned_size(n - 1, 0.0345, 0.95)
    from scipy import stats as sps
    q = lambda k: sps.t.ppf(0.975, k - 1) + sps.t.ppf(0.8, k - 1)   # noqa: E731
    assert q(n) * 0.0345 / math.sqrt(n) <= target            # the old count was fewer
    assert power.units_to_detect(0.0, 0.03, 0.95) is None


def test_the_plan_says_how_many_reps_the_seeds_change_needs(tmp_path, monkeypatch):
    store = tmp_path / "noise.json"
    monkeypatch.setattr(noise, "store_path", lambda: store)
    host = load_run(DATA / RUNS[0]).manifest.host
    plan = make_plan("mset-50keys", "default",
                     ["base=debsrc:redis@8.0", "cand=debsrc:redis@8.0+patch=cases/patches/mset-bucket-prefetch.patch"],
                     ["keys=1M,10M"], {}, SweepOptions(reps=5), host)
    lines = noise_lines(plan, lambda p: 0.043)
    assert lines == ["  noise: none measured on this host yet; an A/A run measures it (`stallscope run "
                     "CASE --variant a=SPEC --variant b=SPEC`), as does any paired run or `make bench`"]
    keep(store, RUNS[0])
    lines = noise_lines(plan, lambda p: 0.043)
    need = power.units_to_detect(0.043, noise.lookup(host, "x", "default", path=store).sd, 0.95)
    assert lines[0].startswith("  noise here: sd 0.03") and "1 run(s) of other cases on this host" in lines[0]
    assert len(lines) == 3 and all(f"the seed's +4.3% needs {need} reps, about " in x for x in lines[1:])
    # no seed: what the point's own reps could see
    plain = noise_lines(plan)
    assert all("5 reps see changes of about ±" in x for x in plain[1:])


@pytest.mark.parametrize("confidence", [0.90, 0.99])
def test_the_plans_detectable_size_is_at_the_confidence_the_report_judges_with(tmp_path, monkeypatch,
                                                                               confidence):
    """The sizes a plan promises are analysis/power.py's at the comparison's confidence
    (CompareOptions.confidence), not a 95% written into the plan: at 90% a point's reps see a
    smaller change than at 95%, at 99% a larger one, and a seed's change needs fewer or
    more reps."""
    store = tmp_path / "noise.json"
    monkeypatch.setattr(noise, "store_path", lambda: store)
    host = load_run(DATA / RUNS[0]).manifest.host
    plan = make_plan("mset-50keys", "default", ["base=debsrc:redis@8.0", "cand=debsrc:redis@8.0"],
                     ["keys=1M"], {}, SweepOptions(reps=8), host)
    keep(store, RUNS[0])
    sd = noise.lookup(host, "x", "default", path=store).sd
    at95, at = noise_lines(plan), noise_lines(plan, opts=CompareOptions(confidence=confidence))
    assert "; 95% confidence, 80% power:" in at95[0] and f"; {confidence:.0%} confidence, 80% power:" in at[0]
    size = power.planned_change(8, sd, confidence)
    assert size != power.planned_change(8, sd, 0.95)
    assert f"8 reps see changes of about ±{size:.1%} or more" in at[1] and at[1] != at95[1]
    seed95 = noise_lines(plan, lambda p: 0.043)[1]
    seed = noise_lines(plan, lambda p: 0.043, CompareOptions(confidence=confidence))[1]
    assert f"needs {power.units_to_detect(0.043, sd, confidence)} reps" in seed and seed != seed95


def test_the_in_cache_controls_of_successive_runs_add_up(tmp_path):
    """A control's run id is its directory's name, "incache", for every run: kept under it,
    each control replaced the last, and the controls never had the 3 A/A runs their own
    spread between runs needs (collectors/runner/noise_log.record_id)."""
    store, host = tmp_path / "noise.json", HostSummary(cpu_model="x", l3_bytes=480 * 2**20)
    recorded = json.loads((DATA.parent / "noise" / "xeon480-aa-default.json").read_text())
    entries = next(iter(next(iter(recorded["hosts"].values())).values()))[:3]
    for e in entries:           # three recorded A/A entries, as three runs' controls
        ctl = tmp_path / e["run"] / "incache"
        rid = noise_log.record_id(ctl, "incache")
        assert rid == f"{e['run']}/incache" and noise_log.size_key(ctl, "default") == "incache"
        assert noise.record(host, "mset-50keys", "incache", dict(e, run=rid), store)
    got = noise.lookup(host, "mset-50keys", "incache", path=store)
    assert got.runs == 3 and not got.between.borrowed      # its own spread between runs
    # a run's own id is kept as it is
    assert noise_log.record_id(tmp_path / "20261207-051242-mset-50keys", "20261207-051242-mset-50keys") \
        == "20261207-051242-mset-50keys"
