"""Imported suites keep their meaning: literal keys name keys the dataset holds, mixes and
key patterns run as documented or are refused with the reason.

The suites are verbatim upstream files (tests/data/suites/SOURCES.md and
tests/data/fixtures/bench-suites). The real tests preload a redis-server on 127.0.0.1 with
the imported case's dataset, run the case's command with the real redis-benchmark, and
read the server's INFO stats keyspace_hits / keyspace_misses."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from collectors.workload.cases import load_case
from collectors.workload.command_keys import key_words, record, recorded_from, table
from collectors.workload.dataset import preload, verify
from collectors.workload.suite import SuiteError, import_suite, write_case_yaml
from tests.test_dataset import redis_bins, server_for  # noqa: F401  (pytest fixtures)

SUITES = Path(__file__).parent / "data" / "suites"
IMPORTED = {  # upstream file -> what the import must give
    "1Mkeys-string-mget-1KiB": "case", "10keys-bitmap-50B-bitop-xor-pipeline-10": "case",
    "1Mkeys-string-setget200c-1KiB-pipeline-10": "case", "1Mkeys-string-get-10B-pipeline-10": "case",
    "1Mkeys-string-int-encoding-strlen-pipeline-10": "case", "1Mkeys-10B-expire-use-case": "case",
    "1Mkeys-load-string-with-10B-values": "case",
    "multiple-hll-pfcount-100B-values":
        r"PFCOUNT reads key 'memtier-1' \(argument 1\), which the dataset cannot hold: the suite preloads "
        r"them with PFADD .* The imported case would measure PFCOUNT on a missing key",
    "1Mkeys-hash-transactions-multi-exec-pipeline-20":
        r"the commands form a transaction \(MULTI HSETNX HEXISTS HGET HDEL EXEC\)",
    "10Mkeys-string-incrby-multitenant-tagged":
        r"INCRBY reads keys \{T:<n>\}_metric_.* text after the number",
    "1key-zrank-1M-elements-pipeline-1":
        r"ZRANK reads key 'lb' .* the suite's preload builds the key 'lb' from many memtier requests",
    "playbook-session-caching-string-100k-sessions": r"memtier key pattern Z \(zipfian\) for GET",
    "2keys-set-10-100-elements-sdiff":
        r"SDIFF reads key 'set:100' .* init_commands SADD",
}


def _suite(name: str) -> Path:
    return SUITES / f"memtier_benchmark-{name}.yml"


def _load(res, tmp_path: Path, size: str = "tiny", variant: str = "", sets=None):
    p = tmp_path / "imported.yaml"
    p.write_text(write_case_yaml(res))
    return load_case(f"{p}{variant}", size, sets)


def _stats(client) -> tuple[int, int]:
    s = client.info("stats")
    return s["keyspace_hits"], s["keyspace_misses"]


def test_every_suite_imports_to_a_case_or_a_clear_refusal(fixtures_dir, tmp_path):
    files = sorted(SUITES.glob("*.yml")) + sorted((fixtures_dir / "bench-suites").glob("*.yml"))
    assert len(files) == len(IMPORTED) + 4
    for f in files:
        want = IMPORTED.get(f.stem.removeprefix("memtier_benchmark-"), "case")
        if want == "case":
            res = import_suite(f)
            for v in [""] + [f"@op={k}" for k in res.case.get("matrix", {}).get("op", {})]:
                for size in ("small", "default"):
                    _load(res, tmp_path, size, v)
        else:
            with pytest.raises(SuiteError, match=want) as e:
                import_suite(f)
            assert str(e.value).startswith(f"{f}:")  # names the file and the clientconfig line


def test_literal_keys_become_the_dataset_names_and_are_hit(server_for, redis_bins, tmp_path):
    """MGET __key__ 1 2 ... 9 over keys 1..1M named without prefix: the literals are the
    suite's keys 1..9, the dataset's key:000000000000 .. key:000000000008."""
    res = import_suite(_suite("1Mkeys-string-mget-1KiB"))
    case = _load(res, tmp_path, "tiny", sets={"dataset.keys": 3000})  # keyspace follows: 3000 x 1 KB
    assert case.workload.command == ["MGET", "key:__rand_int__"] + [f"key:{i:012d}" for i in range(9)]
    assert case.workload.keyspace == 3000
    assert any("1 -> key:000000000000, 2 -> key:000000000001" in n for n in case.notes)
    srv = server_for(case)
    preload(case, srv.client, redis_bins, tmp_path / "dataset")
    verify(case, srv.client)
    # The suite's own spelling of the same keys misses on the dataset: what the import used to send.
    h0, m0 = _stats(srv.client)
    srv.client.execute_command("MGET", "1", "2", "3", "4", "5", "6", "7", "8", "9")
    h1, m1 = _stats(srv.client)
    assert (h1 - h0, m1 - m0) == (0, 9)
    n = 2000
    subprocess.run([redis_bins.benchmark_bin, "-h", "127.0.0.1", "-p", str(srv.port), "-c", "4", "-n", str(n),
                    "-r", str(case.workload.keyspace), *case.workload.command],
                   check=True, capture_output=True, timeout=60)
    h2, m2 = _stats(srv.client)
    assert (h2 - h1, m2 - m1) == (10 * n, 0)   # ten keys per MGET, every one found


def test_literal_only_command_hits_and_keeps_its_destination(server_for, redis_bins, tmp_path):
    """BITOP XOR tmp key:1 .. key:10: the ten sources are preloaded keys, tmp is written."""
    res = import_suite(_suite("10keys-bitmap-50B-bitop-xor-pipeline-10"))
    case = _load(res, tmp_path)
    assert case.workload.command == ["BITOP", "XOR", "tmp"] + [f"key:{i:012d}" for i in range(10)]
    assert case.workload.keyspace == 0 and case.dataset.keys == 10 and case.dataset.value_size == 50
    assert any("literal keys kept as written (written by the command, not read: it creates them): tmp" in n
               for n in case.notes)
    srv = server_for(case)
    preload(case, srv.client, redis_bins, tmp_path / "dataset")
    verify(case, srv.client)
    h0, m0 = _stats(srv.client)
    subprocess.run([redis_bins.benchmark_bin, "-h", "127.0.0.1", "-p", str(srv.port), "-c", "1", "-P", "10",
                    "-n", "500", *case.workload.command], check=True, capture_output=True, timeout=60)
    h1, m1 = _stats(srv.client)
    assert (h1 - h0, m1 - m0) == (10 * 500, 0)
    assert srv.client.strlen("tmp") == 50


def test_ratio_mix_is_a_matrix_of_its_commands(tmp_path):
    res = import_suite(_suite("1Mkeys-string-setget200c-1KiB-pipeline-10"))
    get, set_ = _load(res, tmp_path, "default"), _load(res, tmp_path, "default", "@op=set")
    assert get.workload.command == ["GET", "memtier-__rand_int__"] and get.workload.keyspace == 1_000_000
    assert set_.workload.command == ["SET", "memtier-__rand_int__", "x" * 1000]
    assert get.dataset.key_name(0) == "memtier-000000000000" and get.dataset.keys == 1_000_000
    note = next(n for n in res.notes if n.startswith("memtier --ratio 1:10 (SET:GET)"))
    assert "matrix axis op (set, get)" in note and "base case being get (91% of the suite's requests)" in note
    assert "set 1/11 : get 10/11" in note
    only_get = import_suite(_suite("1Mkeys-string-get-10B-pipeline-10"))
    assert "matrix" not in only_get.case and only_get.case["workload"]["command"] == ["GET", "memtier-__rand_int__"]


def test_command_mix_and_patterns(tmp_path):
    res = import_suite(_suite("1Mkeys-10B-expire-use-case"))
    assert list(res.case["matrix"]["op"]) == ["setex", "set", "get", "del"]
    assert _load(res, tmp_path, "tiny", "@op=del").workload.command == ["DEL", "memtier-__rand_int__"]
    strlen = import_suite(_suite("1Mkeys-string-int-encoding-strlen-pipeline-10"))
    # G over [2, 1000000]: deviation 166666 keys -> the entropy-matched window, 688787 keys
    assert strlen.case["workload"]["keyspace"] == 688_787
    assert any("-r 688787" in n and "no hot middle" in n for n in strlen.notes)
    load = import_suite(_suite("1Mkeys-load-string-with-10B-values"))
    assert load.case["dataset"]["kind"] == "none"
    assert load.case["workload"]["command"] == ["SET", "memtier-__rand_int__", "__data__"]
    assert any("memtier key pattern P (parallel" in n and "63%" in n for n in load.notes)


def test_key_words_follow_the_servers_key_specs(server_for, redis_bins):
    """The recorded table answers like the server it came from (COMMAND GETKEYS)."""
    srv = server_for(load_case("mset-50keys", "tiny"))
    version = srv.client.info("server")["redis_version"]
    lines = [["MGET", "a", "1", "2"], ["BITOP", "XOR", "tmp", "k1", "k2"], ["XREAD", "STREAMS", "s1", "s2", "0", "0"],
             ["ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2"], ["EVAL", "return 1", "2", "k1", "k2", "x"],
             ["HEXPIRE", "h", "60", "FIELDS", "1", "f"], ["GEODIST", "key", "1", "2"], ["OBJECT", "ENCODING", "k"]]
    for words in lines:
        got = [words[i] for i in sorted(key_words(words).flags)]
        assert got == [k.decode() if isinstance(k, bytes) else k for k in srv.client.command_getkeys(*words)], words
    assert key_words(["BITOP", "XOR", "tmp", "k1"]).writes_only(2)
    assert not key_words(["BITOP", "XOR", "tmp", "k1"]).writes_only(3)
    if recorded_from().endswith(version):
        assert record(srv.client)["commands"] == table()
