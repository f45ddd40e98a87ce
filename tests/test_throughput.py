"""Throughput parsing against real redis-benchmark 7.0.15 outputs (tests/data/SOURCES.md)."""
import json
import shutil
from pathlib import Path

import pytest

from analysis.inputs.bench import (ThroughputError, load_rep, parse_memtier_json,
                                 parse_redis_benchmark_csv, parse_redis_benchmark_text)

DATA = Path(__file__).parent / "data" / "throughput"


def test_csv_7x_all_columns():
    rows = parse_redis_benchmark_csv(DATA / "redis-benchmark-7.0.15.csv")
    assert [r.test for r in rows] == ["SET", "GET", "MSET (10 keys)"]
    assert rows[0].ops_per_sec == 200000.0
    assert rows[2].ops_per_sec == 68728.52
    assert rows[1].latency_ms == {"avg": 0.629, "min": 0.28, "p50": 0.631, "p95": 0.879,
                                  "p99": 1.039, "max": 2.103}


def test_plain_text_summary_blocks():
    rows = parse_redis_benchmark_text(DATA / "redis-benchmark-7.0.15.txt")
    assert [(r.test, r.ops_per_sec) for r in rows] == [("SET", 43103.45), ("GET", 113636.37)]
    assert rows[1].latency_ms == {"avg": 1.338, "min": 0.336, "p50": 0.807, "p95": 3.799,
                                  "p99": 8.767, "max": 28.767}


def test_quiet_text():
    (r,) = parse_redis_benchmark_text(DATA / "redis-benchmark-7.0.15-q.txt")
    assert (r.test, r.ops_per_sec, r.latency_ms) == ("GET", 25252.53, {"p50": 0.463})


def test_load_rep_prefers_csv_and_picks_test(tmp_path):
    shutil.copy(DATA / "redis-benchmark-7.0.15.csv", tmp_path / "bench.csv")
    shutil.copy(DATA / "redis-benchmark-7.0.15.txt", tmp_path / "bench.txt")
    assert load_rep(tmp_path, test="get").ops_per_sec == 215053.77
    with pytest.raises(ThroughputError, match="3 tests"):
        load_rep(tmp_path)
    (tmp_path / "bench.csv").unlink()
    assert load_rep(tmp_path, test="GET").ops_per_sec == 113636.37


def test_bad_inputs_name_the_file(tmp_path):
    with pytest.raises(ThroughputError, match="no bench.csv"):
        load_rep(tmp_path)
    bad = tmp_path / "bench.csv"
    bad.write_text('"test","rps"\n"SET","fast"\n')
    with pytest.raises(ThroughputError, match=r"bench.csv:2: 'fast' is not a number"):
        parse_redis_benchmark_csv(bad)
    bad.write_text("hello\n")
    with pytest.raises(ThroughputError, match=r"bench.csv:1: expected a header"):
        parse_redis_benchmark_csv(bad)
    j = tmp_path / "bench.json"
    j.write_text("{\n  \"x\": \n")
    with pytest.raises(ThroughputError, match=r"bench.json:3: malformed JSON"):
        parse_memtier_json(j)
    j.write_text(json.dumps({"configuration": {}}))
    with pytest.raises(ThroughputError, match="ALL STATS"):
        parse_memtier_json(j)
    bad.unlink()
    j.write_text(json.dumps({"ALL STATS": {"Totals": {"Latency": 1.0}}}))
    with pytest.raises(ThroughputError, match=r"bench.json: no \"Ops/sec\""):
        load_rep(tmp_path)                 # was an IndexError
    j.write_text(json.dumps({"ALL STATS": {"Totals": {"Ops/sec": "n/a"}}}))
    with pytest.raises(ThroughputError, match=r"bench.json: \"Totals\" Ops/sec: 'n/a' is not"):
        parse_memtier_json(j)
