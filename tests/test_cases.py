"""The case loader: every shipped case loads at every size; bad files fail with file:line."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from commands import cases as cases_cli
from collectors.workload.cases import CASES_DIR, CaseError, list_cases, load_case, sizes_of
from analysis.inputs.case import Case
from collectors.workload.working_set import Llc


def test_every_case_and_matrix_variant_loads_at_every_size():
    names = list_cases()
    assert len(names) >= 50
    for name in names:
        sizes = sizes_of(name)
        assert {"tiny", "small", "default"} <= set(sizes), name
        for size in sizes:
            case = load_case(name, size)
            assert case.name == name and case.size == size
            assert case.focus and case.description
            # JSON round trip: the manifest stores the resolved case.
            assert Case.from_json(json.loads(json.dumps(case.to_json()))) == case


def test_required_cases_exist():
    names = set(list_cases())
    for n in ["mset-50keys", "mset-10keys@value=1000,keys=10M", "mset-50keys@value=100,keys=1M",
              "mget-30keys@pipeline=1", "mget-100keys@pipeline=16", "hgetall@fields=500",
              "hgetall-1key-1kfields", "get-iothreads@io=2,pipeline=16", "set-iothreads",
              "rdb-load@value=10,keys=10M,cluster=on", "zrange-129members@sets=10K",
              "zrange-129members@sets=2M"]:
        assert n in names, n


def test_mset_50keys_resolved_values():
    c = load_case("mset-50keys", llc=Llc(32 * 2**20))    # a 32 MB L3: the case's own 10M keys
    assert (c.dataset.kind, c.dataset.keys, c.dataset.value_size) == ("strings", 10_000_000, 10)
    assert c.workload.command[0] == "MSET" and len(c.workload.command) == 101
    assert c.workload.command[1:3] == ["key:__rand_int__", "x" * 10]
    assert (c.workload.keyspace, c.workload.clients, c.workload.duration_s, c.workload.warmup_s) == \
        (10_000_000, 50, 20.0, 2.0)
    assert c.dataset.key_name(42) == "key:000000000042"
    s = load_case("mset-50keys", "tiny")
    assert (s.dataset.keys, s.workload.keyspace, s.workload.duration_s) == (200_000, 200_000, 3.0)


def test_matrix_then_size():
    c = load_case("mset-10keys@value=1000,keys=1M")
    assert len(c.workload.command) == 21 and c.workload.command[2] == "x" * 1000
    assert (c.dataset.keys, c.dataset.expect_encoding, c.matrix) == (1_000_000, "raw",
                                                                    {"value": "1000", "keys": "1M"})
    # size wins over the matrix: tiny stays tiny
    assert load_case("mset-10keys@keys=10M", "tiny").dataset.keys == 200_000
    z = load_case("zrange-129members@sets=500K")
    assert (z.dataset.keys, z.dataset.members, z.dataset.expect_encoding) == (500_000, 129, "skiplist")
    assert z.workload.command == ["ZRANGE", "zset:__rand_int__", "0", "-1"]
    h = load_case("hgetall@fields=500")
    assert (h.dataset.fields, h.dataset.keys, h.server.config) == (500, 20_000, {"hash-max-ziplist-entries": "32"})
    r = load_case("rdb-load@cluster=on,value=10")
    assert (r.server.cluster, r.server.persistence, r.dataset.value_size, r.workload.tool) == \
        (True, True, 10, "rdb-load")
    assert load_case("get-iothreads").server.io_threads == 2


def test_unknown_names_sizes_and_axes():
    with pytest.raises(CaseError, match="no case named 'nope'"):
        load_case("nope")
    with pytest.raises(CaseError, match=r"mset-50keys.yaml:\d+: mset-50keys has no size 'huge'"):
        load_case("mset-50keys", "huge")
    with pytest.raises(CaseError, match=r"no matrix axis 'colour'"):
        load_case("mset-50keys@colour=red")
    with pytest.raises(CaseError, match=r"matrix.value has no value '7' \(values: 10, 100, 1000\)"):
        load_case("mset-50keys@value=7")


GOOD = """\
name: t
description: a test case
focus: [dictFind]
server: {config: {}, io_threads: 1}
dataset: {kind: strings, keys: 1000, value_size: 10}
workload:
  tool: redis-benchmark
  command: [GET, "key:__rand_int__"]
  keyspace: 1000
sizes:
  small: {dataset.keys: 100, workload.keyspace: 100}
"""


def _write(tmp_path: Path, text: str) -> str:
    p = tmp_path / "t.yaml"
    p.write_text(text)
    return str(p)


def test_good_file_by_path(tmp_path):
    c = load_case(_write(tmp_path, GOOD), "small")
    assert (c.dataset.keys, c.workload.command) == (100, ["GET", "key:__rand_int__"])


@pytest.mark.parametrize("old,new,line,message", [
    ("  keyspace: 1000\n", "  keyspace: 1000\n  colour: red\n", 10, "unknown key workload.colour"),
    ("keys: 1000,", "keys: lots,", 5, "dataset.keys: expected an integer, got 'lots'"),
    ("io_threads: 1", "io_threads: 1.5", 4, "server.io_threads: expected an integer, got 1.5"),
    ("focus: [dictFind]", "focus: dictFind", 3, "focus: expected a list"),
    ("description: a test case", "descripton: a test case", 2, "unknown key 'descripton'"),
    ("  small: {dataset.keys: 100,", "  small: {dataset.kees: 100,", 11, "unknown field 'dataset.kees'"),
    ("  small: {dataset.keys: 100,", "  small: {dataset.keys: '100',", 11, "dataset.keys: expected an integer"),
    ("  command: [GET", "  command: [GET, [nested]", 8, "expected plain words"),
    ("workload.keyspace: 100}", "workload.keyspace: 500}", 11, "workload.keyspace 500 > dataset.keys 100"),
    ("kind: strings,", "kind: hashes,", 5, "a hashes dataset needs fields >= 1"),
    ("kind: strings", "kind: lists", 5, "dataset.kind: 'lists' is not one of"),
    ("  tool: redis-benchmark", "  tool: ab", 7, "workload.tool: 'ab' is not one of"),
    ("  command: [GET", "  command: [GET\n  oops: [", 9, "malformed YAML"),
    ("  keyspace: 1000\n", "  keyspace: 1000\n  keyspace: 10\n", 10, "duplicate key 'keyspace'"),
])
def test_errors_name_file_and_line(tmp_path, old, new, line, message):
    assert old in GOOD
    path = _write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(CaseError) as e:
        load_case(path, "small")
    assert str(e.value).startswith(f"{path}:{line}: "), str(e.value)
    assert message in str(e.value)


def test_cli_list_show_and_error(capsys, tmp_path):
    assert cases_cli.main(["list", "--names"]) == 0
    out = capsys.readouterr().out.split()
    assert "mset-50keys" in out and "rdb-load@value=1000,keys=10M,cluster=on" in out
    assert cases_cli.main(["show", "mset-50keys", "--size", "tiny"]) == 0
    shown = capsys.readouterr().out
    assert "command: MSET (key:__rand_int__ __data__) x50" not in shown
    assert "command: MSET (key:__rand_int__ xxxxxxxxxx) x50" in shown and "keys: 200000" in shown
    assert cases_cli.main(["show", "mget-30keys@pipeline=16", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["workload"]["pipeline"] == 16 and len(d["workload"]["command"]) == 31
    bad = _write(tmp_path, GOOD.replace("keys: 1000,", "keys: lots,"))
    assert cases_cli.main(["show", bad]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"stallscope cases: error: {bad}:5: dataset.keys") and "Traceback" not in err


def test_cases_dir_has_only_loadable_yaml():
    for p in CASES_DIR.glob("*.y*ml"):
        assert load_case(str(p), "small").source == f"cases/{p.name}"
