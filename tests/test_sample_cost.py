"""The sampling rate, chosen by what a perf sample cost on this host (collectors/host/
sample_cost.py): the store, the bound of the next run's cost (random effects, per case), the
rule's error rate against the naive median and against the fixed-effect bound it replaced
(replayed on the recorded stores in tests/data/sample-cost: bench/sample_cost.py), and which
runs may teach it (recorded runs in tests/data/runs)."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from scipy import stats as sps

from analysis.inputs.host import HostSummary
from analysis.inputs.rundir import load_run
from bench import sample_cost as replay
from collectors.host import sample_cost
from collectors.runner.noise_log import measured_cost

DATA = Path(__file__).parent / "data" / "runs"
HOST = HostSummary(cpu_model="AMD EPYC", logical_cpus=2, memory_bytes=24 * 2**30)
OTHER = HostSummary(cpu_model="Intel Xeon", logical_cpus=2, memory_bytes=24 * 2**30)


def test_a_host_that_measured_nothing_samples_at_the_starting_costs_bound(tmp_path):
    r = sample_cost.choose(HOST, tmp_path / "none.json")
    assert (r.hz, r.runs) == (199, 0)
    assert r.predicted <= sample_cost.BUDGET < 249 * r.us_per_sample * 1e-6
    assert "this host has measured none yet" in r.why() and "199 Hz" in r.why()


def test_runs_are_kept_per_host_and_close_the_bound_on_the_hosts_cost(tmp_path):
    path = tmp_path / "sample_cost.json"
    # a host whose sample costs 8 µs, measured at 199 Hz with ±0.4% (s.e. 0.2%) a run
    for i in range(12):
        assert sample_cost.record(HOST, f"r{i}", 199, 199 * 8e-6, 0.002, path)
    doc = json.loads(path.read_text())
    assert list(doc["hosts"]) == [HOST.key()] and len(doc["hosts"][HOST.key()]) == 12
    r = sample_cost.choose(HOST, path)
    assert r.runs == 12 and 8.0 < r.us_per_sample < 15.0 and r.hz == 599      # 0.82%
    assert r.tau == 0.0                       # the runs agree: the fixed-effect bound
    assert sample_cost.choose(OTHER, path).hz == 199          # another host: the starting cost
    for i in range(30):
        sample_cost.record(HOST, f"s{i}", 199, 199 * 8e-6, 0.002, path, case="mset-50keys")
    sample_cost.record(HOST, "t", 199, 199 * 8e-6, 0.002, path, case="mget-100keys")
    kept = json.loads(path.read_text())["hosts"][HOST.key()]
    # per case: the case's last MAX_KEPT, the other cases' runs stay
    assert sum(e.get("case") == "mset-50keys" for e in kept) == sample_cost.MAX_KEPT
    assert len(kept) == 12 + sample_cost.MAX_KEPT + 1 and kept[-1]["case"] == "mget-100keys"


def test_a_negative_overhead_is_kept_as_measured_and_nothing_unmeasured_is(tmp_path):
    path = tmp_path / "s.json"
    assert sample_cost.record(HOST, "r", 249, -0.004, 0.003, path)
    e = json.loads(path.read_text())["hosts"][HOST.key()][0]
    assert e["us_per_sample"] < 0 and e["se_us"] > 0      # unbiased: not clipped to 0
    assert not sample_cost.record(HOST, "r", 0, 0.01, 0.003, path)
    assert not sample_cost.record(HOST, "r", 249, 0.01, 0.0, path)
    assert not sample_cost.record(HOST, "r", 249, float("nan"), 0.003, path)
    (tmp_path / "bad.json").write_text("{not json")
    assert sample_cost.choose(HOST, tmp_path / "bad.json").hz == 199


def _naive(costs: list[float]) -> int:
    """The first rule: the median of the runs' costs, negatives clipped to 0."""
    us = sorted(max(c, 0.0) for c in costs)[len(costs) // 2]
    fits = [r for r in sample_cost.RATES if r * us * 1e-6 <= sample_cost.BUDGET]
    return max(fits) if fits else min(sample_cost.RATES)


@pytest.mark.heavy
def test_the_bound_keeps_perf_near_its_budget_where_the_median_did_not(tmp_path):
    """Simulated hosts whose true cost is the recorded A/A run's spread around 37 µs a sample
    (the cost measured at 999 Hz on the CI guest): one to five runs of history each, noise
    as the A/A run's (its overhead interval ±0.43% at 99 Hz: s.e. 22 µs a sample). A chosen
    rate whose true cost exceeds 1.5% of the server is a failure."""
    run = load_run(DATA / "mset-aa-default")
    hz, _, se = measured_cost(run, "a", "b")
    se_us = se / hz * 1e6
    rng = random.Random(7)
    true_us, fails = 37.0, {"naive": 0, "bound": 0}
    trials = 400
    for t in range(trials):
        path = tmp_path / f"h{t}.json"
        costs = [rng.gauss(true_us, se_us) for _ in range(rng.randint(1, 5))]
        for i, c in enumerate(costs):
            sample_cost.record(HOST, f"r{i}", hz, c * hz * 1e-6, se, path)
        chosen = {"naive": _naive(costs), "bound": sample_cost.choose(HOST, path).hz}
        for k, rate in chosen.items():
            fails[k] += rate * true_us * 1e-6 > 0.015
    # the median sent one host in ten to 499 Hz or more (≥ 1.85%); the bound none
    assert fails["naive"] / trials > 0.06, fails
    assert fails["bound"] / trials < 0.01, fails


def test_only_a_server_bound_run_with_measured_windows_teaches_the_rate():
    aa = load_run(DATA / "mset-aa-default")          # main threads 99% busy, 99 Hz windows
    hz, overhead, se = measured_cost(aa, "a", "b")
    assert hz == 99 and -0.01 < overhead < 0.01 and 0 < se < 0.01
    # the p1 GET run waited for its client (main thread 54% busy): perf's cost cannot show
    p1 = load_run(DATA / "valkey-get-p1-default")
    assert measured_cost(p1, "pf0", "pf16") is None


def test_a_case_with_enough_runs_is_pooled_alone_and_old_entries_by_their_run_id(tmp_path):
    path = tmp_path / "s.json"
    # entries without a case field: the case is in the run id only
    old = [{"run": f"20261127-14490{i}-mget-100keys_pipeline=16", "at": "x", "hz": 999,
                "estimator": sample_cost.ESTIMATOR,
            "overhead": 0.045, "us_per_sample": 45.0, "se_us": 8.0} for i in range(4)]
    path.write_text(json.dumps({"schema": 1, "hosts": {HOST.key(): old}}))
    for i in range(6):
        assert sample_cost.record(HOST, f"20261127-15000{i}-mset-50keys", 799,
                                  799 * 3e-6, 799 * 8e-6, path, case="mset-50keys")
    assert json.loads(path.read_text())["hosts"][HOST.key()][-1]["case"] == "mset-50keys"
    mset = sample_cost.choose(HOST, path, case="mset-50keys")
    assert (mset.case, mset.runs) == ("mset-50keys", 6) and "6 run(s) of mset-50keys" in mset.why()
    # the MGET case has 4 runs (< MIN_CASE_RUNS): all of the host's, whose spread is wide
    mget = sample_cost.choose(HOST, path, case="mget-100keys@pipeline=16")
    assert (mget.case, mget.runs) == (None, 10) and "all 10 run(s)" in mget.why()
    assert mget.tau > 10 and mget.hz < mset.hz
    old.append(dict(old[0], run="20261127-150000-mget-100keys_pipeline=16"))
    path.write_text(json.dumps({"schema": 1, "hosts": {HOST.key(): old}}))
    own = sample_cost.choose(HOST, path, case="mget-100keys@pipeline=16")   # '@' as in the id
    assert own.case == "mget-100keys@pipeline=16" and own.runs == 5
    assert own.predicted <= sample_cost.BUDGET < 249 * 45e-6


def test_runs_that_disagree_beyond_their_errors_widen_the_bound_to_the_next_runs_cost():
    # two kinds of runs, 40 and 0 µs a sample, each measured within ±5: the mean is ~20,
    # the next run may cost 40
    pairs = [(40.0 + (i % 3 - 1), 5.0) if i % 2 else (0.0 + (i % 3 - 1), 5.0) for i in range(16)]
    fixed, nxt = sample_cost.pool(pairs, random=False), sample_cost.pool(pairs)
    assert fixed.tau == 0 and 15 < fixed.mean < 25 and fixed.bound < 25
    assert nxt.tau > 15 and nxt.bound > 40
    assert sample_cost.rate_for(fixed.bound) >= 399 and sample_cost.rate_for(nxt.bound) <= 249
    # negative measurements pool as measured
    assert sample_cost.pool([(-20.0, 5.0)] * 8).mean < 0


def _stores():
    return [es for path in replay.STORES for es in replay.entries(path)]


def test_the_recorded_stores_are_the_real_hosts_runs():
    stores = _stores()
    assert len(stores) == 2 and all(len(es) == 20 for es in stores)
    cases = {sample_cost.entry_case(e) for es in stores for e in es}
    assert {"mget-100keys_pipeline=16", "mset-50keys"} <= cases


def test_replayed_on_the_recorded_stores_the_bound_holds_its_rate_and_the_costly_case_its_budget():
    """bench/sample_cost.py figure 11: each recorded run predicted from the runs before it.
    The next-run bound is exceeded (its measurement's noise allowed for) about as often as
    its nominal 10%; on a case whose cost the store knows within ±10 µs and that is costly
    (over 20 µs: 499 Hz costs more than 1%), the fixed-effect bound's rates cost clearly over
    the 1% budget at that cost, the new ones not."""
    steps = {r: [s for es in _stores() for s in replay.replay(es, r)] for r in replay.RULES}
    k, n, _, _ = replay.exceedance(steps["next"])
    assert sps.binomtest(k, n, 0.10).pvalue > 0.05, (k, n)
    assert replay.exceedance(steps["fixed"])[0] >= k
    costly = 0
    for es in _stores():
        for case, (us, se) in replay.hindsight(es).items():
            if se > replay.MAX_SE or us * 499e-6 <= sample_cost.BUDGET:
                continue                     # not known well enough, or 499 Hz within budget
            costly += 1
            over = {r: replay.case_overheads(replay.replay(es, r), {case: (us, se)})[case]
                    for r in replay.RULES}
            assert over["fixed"][1] - sample_cost.BUDGET > sample_cost.UPPER_Z * over["fixed"][2]
            assert over["next"][1] <= sample_cost.BUDGET, over
    assert costly >= 1


def test_on_stores_drawn_from_the_recorded_ones_the_fixed_bound_is_exceeded_far_more_often():
    """Figure 11b: simulated stores whose cases cost what the recorded store measured."""
    steps, cost = replay.simulate(replay.entries(replay.STORES[0])[0], hosts=150, seed=3)
    assert len(cost) >= 2
    fixed, nxt = replay.per_store(steps["fixed"]), replay.per_store(steps["next"])
    assert 0.05 < nxt[0] < 0.15 and fixed[0] > 0.15 and fixed[0] - nxt[0] > 2 * (fixed[1] + nxt[1])
    assert replay.over_budget(steps["next"], cost) < 0.10
    assert replay.over_budget(steps["fixed"], cost) > 0.20


def test_costs_measured_by_the_drifting_estimator_are_not_pooled(tmp_path):
    """Entries without `estimator` were measured against the block before alone, biased
    toward perf being free (analysis/compare/profiler_cost.sandwiches): the starting cost decides."""
    path = tmp_path / "s.json"
    biased = [{"run": f"20261127-17000{i}-mset-50keys", "at": "x", "hz": 299, "overhead": -0.03,
               "us_per_sample": -100.0, "se_us": 50.0} for i in range(8)]
    path.write_text(json.dumps({"schema": 1, "hosts": {HOST.key(): biased}}))
    r = sample_cost.choose(HOST, path, case="mset-50keys")
    assert r.runs == 0 and r.hz == sample_cost.choose(HOST, tmp_path / "none.json").hz
    assert sample_cost.record(HOST, "20261127-171000-mset-50keys", 199, 0.004, 0.003, path, case="mset-50keys")
    assert sample_cost.choose(HOST, path, case="mset-50keys").runs == 1


def test_the_suites_runs_keep_their_records_out_of_the_hosts(monkeypatch, tmp_path):
    """The records a run is planned from are the host's (the build cache) unless
    STALLSCOPE_RECORDS names another place, and this suite names one of its own (conftest):
    its runs, made beside other tests, once lowered a user's next rate to 99 Hz."""
    from collectors.host import noise
    from collectors.variants.builder import cache_dir
    assert sample_cost.store_path().parent != cache_dir()        # this session's own
    monkeypatch.delenv("STALLSCOPE_RECORDS")
    monkeypatch.setenv("STALLSCOPE_CACHE", str(tmp_path / "cache"))
    assert sample_cost.store_path() == noise.store_path().with_name("sample_cost.json") == \
        tmp_path / "cache" / "sample_cost.json"
    monkeypatch.setenv("STALLSCOPE_RECORDS", str(tmp_path / "records"))
    assert sample_cost.store_path() == tmp_path / "records" / "sample_cost.json"


def test_a_case_is_pooled_at_its_own_size(tmp_path):
    """A dataset that fits in cache costs a sample differently: the demo's small size must
    not pool with its default one. Entries stored without a size join only the host's pool."""
    path = tmp_path / "s.json"
    for i in range(6):
        sample_cost.record(HOST, f"d{i}", 999, 999 * 40e-6, 0.002, path, case="mset-50keys", size="default")
        sample_cost.record(HOST, f"s{i}", 999, 999 * 5e-6, 0.002, path, case="mset-50keys", size="small")
        sample_cost.record(HOST, f"o{i}", 999, 999 * 5e-6, 0.002, path, case="mset-50keys")
    kept = json.loads(path.read_text())["hosts"][HOST.key()]
    assert {e.get("size") for e in kept} == {"default", "small", None}
    big = sample_cost.choose(HOST, path, case="mset-50keys", size="default", need_hz=1999)
    small = sample_cost.choose(HOST, path, case="mset-50keys", size="small", need_hz=1999)
    assert (big.runs, big.size, small.runs, small.size) == (6, "default", 6, "small")
    assert big.us_per_sample > 30 > 10 > small.us_per_sample
    assert "6 run(s) of mset-50keys at size default" in big.why()
    assert sample_cost.choose(HOST, path, case="mset-50keys", size="large").case is None  # the host's
    # what a run that names no size pools is unchanged: the case's runs at every size
    assert sample_cost.choose(HOST, path, case="mset-50keys").runs == 18


def test_the_rates_line_says_its_prediction_is_a_bound_not_a_cap(tmp_path):
    """At 1999 Hz a run predicted under 5% measured 5.1% [4.4, 6.2]: a 90% bound of the next
    run's cost is exceeded by about one run in ten."""
    r = sample_cost.choose(HOST, tmp_path / "none.json", need_hz=200)
    assert "not a cap" in r.why() and "one run in ten" in r.why()
    assert "within the" not in r.why()


def test_the_suite_keeps_its_records_apart_even_from_a_users_exported_directory(tmp_path):
    """A user who exported STALLSCOPE_RECORDS (their records kept apart from the build cache)
    runs the suite: its runs still write to the session's own directory, never theirs."""
    import os
    import subprocess
    import sys
    from tests.conftest import REPO
    probe = tmp_path / "test_probe.py"
    probe.write_text("import os\n\ndef test_probe():\n    print('RECORDS=' + os.environ['STALLSCOPE_RECORDS'])\n")
    mine = tmp_path / "users-records"
    env = dict(os.environ, STALLSCOPE_RECORDS=str(mine))
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "tests.conftest",
                        "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(probe)],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    got = next(line.split("=", 1)[1] for line in p.stdout.splitlines() if line.startswith("RECORDS="))
    assert got != str(mine) and "stallscope-test-records-" in got
    assert not mine.exists()


def test_make_bench_keeps_its_real_runs_out_of_the_hosts_records(monkeypatch, tmp_path):
    """bench/precision.py runs real A/B runs (the demo's +40%): their spread and sample costs
    go to records of the bench's own, never to the host's that plan a user's runs."""
    from bench import precision
    from collectors.host import noise
    seen = {}

    def fake_one(how, reps, size, runs):
        seen["noise"], seen["cost"] = noise.store_path(), sample_cost.store_path()
        raise SystemExit(0)
    monkeypatch.setenv("STALLSCOPE_RECORDS", str(tmp_path / "hosts-records"))
    monkeypatch.setattr(precision, "one", fake_one)
    with pytest.raises(SystemExit):
        precision.main(["--size", "small", "--runs", str(tmp_path / "runs")])
    assert seen["noise"].parent == seen["cost"].parent == (tmp_path / "runs" / "records").resolve()
