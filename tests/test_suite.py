"""Import of the real redis-benchmarks-specification suite files in
tests/data/fixtures/bench-suites (verbatim copies, see SOURCES.md there)."""
from __future__ import annotations

from pathlib import Path

import pytest

from commands import cases as cases_cli
from collectors.workload.cases import load_case
from collectors.workload.memtier_args import parse_memtier
from collectors.workload.suite import SuiteError, import_suite, write_case_yaml


def _suite(fixtures_dir: Path, name: str) -> Path:
    return fixtures_dir / "bench-suites" / f"memtier_benchmark-{name}.yml"


def _roundtrip(res, tmp_path: Path, size: str = "default"):
    p = tmp_path / "imported.yaml"
    p.write_text(write_case_yaml(res))
    return load_case(str(p), size)


def test_every_fixture_suite_imports_and_loads(fixtures_dir, tmp_path):
    files = sorted((fixtures_dir / "bench-suites").glob("*.yml"))
    assert len(files) == 4
    for f in files:
        res = import_suite(f)
        for size in ("small", "default"):
            case = _roundtrip(res, tmp_path, size)
            assert case.workload.tool == "memtier"
            assert case.notes == res.notes and res.notes


def test_mset_50keys_10m(fixtures_dir, tmp_path):
    res = import_suite(_suite(fixtures_dir, "10Mkeys-load-string-mset-50-keys-with-10B-values"))
    assert res.case["workload"]["command"] == ["MSET", {"repeat": 50, "words": ["key:__rand_int__", "__data__"]}]
    case = _roundtrip(res, tmp_path)
    assert case.name == "10mkeys-load-string-mset-50-keys-with-10b-values"
    cmd = case.workload.command
    assert cmd[0] == "MSET" and len(cmd) == 101
    assert cmd[1::2] == ["key:__rand_int__"] * 50 and cmd[2::2] == ["x" * 10] * 50
    assert (case.dataset.kind, case.dataset.keys, case.dataset.value_size) == ("strings", 10_000_000, 10)
    assert case.dataset.expect_encoding == "embstr"
    assert case.workload.keyspace == 10_000_000
    assert (case.workload.clients, case.workload.threads, case.workload.pipeline) == (400, 8, 1)
    assert case.workload.duration_s == 180.0
    assert (case.server.cluster, case.server.persistence, case.server.config) == (False, False, {})
    assert "msetGenericCommand" in case.focus
    assert any("memtier -c 50 -t 8 = 400 connections" in n for n in res.notes)
    assert any("clipped to 10000000" in n for n in res.notes)
    assert any("--command-key-pattern P" in n and "preload arguments not carried over" in n for n in res.notes)
    small = _roundtrip(res, tmp_path, "tiny")
    assert (small.dataset.keys, small.workload.keyspace, small.workload.duration_s) == (200_000, 200_000, 3.0)


def test_mget_100keys_5m(fixtures_dir, tmp_path):
    res = import_suite(_suite(fixtures_dir, "5Mkeys-string-mget-100B-100keys"))
    case = _roundtrip(res, tmp_path)
    # memtier's default prefix is kept; only the number is padded (what __rand_int__ can spell)
    assert case.workload.command == ["MGET"] + ["memtier-__rand_int__"] * 100
    assert case.dataset.key_prefix == "memtier-" and case.dataset.key_name(0) == "memtier-000000000000"
    assert (case.dataset.keys, case.dataset.value_size, case.dataset.expect_encoding) == (5_000_000, 100, "raw")
    assert case.workload.keyspace == 5_000_000
    assert any("memtier key range [1, 5000000] -> redis-benchmark -r 5000000" in n for n in res.notes)
    assert any("--random-data" in n and "'x' * data-size" in n for n in res.notes)
    assert any("--ratio 1:0 --requests allkeys" in n for n in res.notes)
    assert "mgetCommand" in case.focus


def test_hgetall_50_fields_listpack(fixtures_dir, tmp_path):
    res = import_suite(_suite(fixtures_dir, "1Mkeys-hash-hgetall-50-fields-10B-values"))
    case = _roundtrip(res, tmp_path)
    ds = case.dataset
    assert (ds.kind, ds.keys, ds.fields, ds.value_size) == ("hashes", 1_000_000, 50, 10)
    assert ds.expect_encoding == "listpack"  # 50 fields x 10 B: under both listpack limits
    assert case.workload.command == ["HGETALL", "memtier-__rand_int__"]
    assert (case.workload.clients, case.workload.threads, case.workload.duration_s) == (200, 4, 120.0)
    small = _roundtrip(res, tmp_path, "tiny")
    assert small.dataset.keys == 2000 and small.workload.keyspace == 2000


def test_hgetall_1key_1k_fields_from_init_commands(fixtures_dir, tmp_path):
    res = import_suite(_suite(fixtures_dir, "1key-hash-1K-fields-hgetall"))
    case = _roundtrip(res, tmp_path)
    ds = case.dataset
    assert (ds.kind, ds.keys, ds.fields, ds.value_size, ds.expect_encoding) == ("hashes", 1, 1000, 5, "hashtable")
    # the literal key is spelled as the dataset's one key: no -r needed
    assert case.workload.command == ["HGETALL", "hash:000000000000"] and case.workload.keyspace == 0
    assert any("literal key names translated" in n and "hash:1000 -> hash:000000000000" in n for n in res.notes)
    assert any("1000 literal fields" in n for n in res.notes)


def test_cli_import_writes_a_loadable_case(fixtures_dir, tmp_path, capsys):
    out = tmp_path / "x.yaml"
    rc = cases_cli.main(["import", str(_suite(fixtures_dir, "5Mkeys-string-mget-100B-100keys")), "-o", str(out)])
    assert rc == 0
    err = capsys.readouterr().err
    assert "note: memtier -c 50 -t 8 = 400 connections" in err
    assert out.read_text().startswith("# Imported from redis-benchmarks-specification")


def test_bad_suite_files_name_the_file(tmp_path, capsys):
    bad = tmp_path / "bad.yml"
    bad.write_text("name: x\nclientconfig: {tool: memtier_benchmark\n")
    with pytest.raises(SuiteError, match=r"bad.yml:\d+: malformed YAML"):
        import_suite(bad)
    bad.write_text("name: x\n")
    with pytest.raises(SuiteError, match="bad.yml:1: not a redis-benchmarks-specification test-suite file"):
        import_suite(bad)
    bad.write_text("name: x\nclientconfig:\n  tool: memtier_benchmark\n  arguments: --test-time 10 --ratio 0:0\n")
    assert cases_cli.main(["import", str(bad)]) == 2
    assert "bad.yml:2: memtier --ratio 0:0 sends nothing" in capsys.readouterr().err


def test_memtier_gaussian_and_data_size_range_are_named(tmp_path):
    p = tmp_path / "g.yml"
    p.write_text("name: memtier_benchmark-g\ndbconfig:\n  check: {keyspacelen: 1000}\n  preload_tool:\n"
                 "    tool: memtier_benchmark\n    arguments: --key-minimum 0 --key-maximum 999 --data-size 20\n"
                 "clientconfig:\n  tool: memtier_benchmark\n  arguments: --command \"GET __key__\" "
                 "--command-key-pattern G --key-minimum 0 --key-maximum 999 --data-size-range 10-100 -c 5 -t 2\n")
    res = import_suite(p)
    # memtier's deviation defaults to range/6 = 166.5 keys; the uniform window of equal entropy
    # is deviation * sqrt(2 pi e) = 688 keys
    assert res.case["workload"]["clients"] == 10 and res.case["workload"]["keyspace"] == 688
    assert any(n.startswith("memtier key pattern G (gaussian, deviation 166 keys") and "-r 688" in n
               for n in res.notes)
    assert "memtier --data-size-range 10-100 has no redis-benchmark equivalent; ignored" in res.notes


def test_parse_memtier_forms():
    a = parse_memtier('"--data-size" "10" --command="SET __key__ __data__" -c 2 --hide-histogram -t 3', "x")
    assert a.opts == {"data-size": ["10"], "command": ["SET __key__ __data__"], "clients": ["2"],
                      "hide-histogram": [""], "threads": ["3"]}
