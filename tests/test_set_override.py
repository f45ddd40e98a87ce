"""`--set FIELD=VALUE`: one case field from the command line, typed and checked like a case
file, applied after the size knob; bad values name the option and what was expected."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from analysis.inputs.case import Case
from commands import cases as cases_cli
from collectors.workload.cases import CaseError, load_case
from collectors.workload.overrides import parse_count, parse_set, parse_sets, show
from tests.conftest import REPO
from tests.conftest_run import cli_env


@pytest.mark.parametrize("text, n", [("16", 16), ("100K", 100_000), ("1M", 1_000_000),
                                     ("2.5M", 2_500_000), ("10m", 10_000_000), ("1_000", 1000),
                                     ("1G", 10**9), ("-1", -1)])
def test_counts_use_the_matrix_labels_meaning(text, n):
    assert parse_count(text) == n


@pytest.mark.parametrize("text", ["lots", "1.5K5", "0.0001K", "1KB", "", "M"])
def test_not_a_count(text):
    assert parse_count(text) is None


def test_values_typed_by_their_field():
    s = parse_sets(["dataset.keys=1M", "workload.pipeline=16", "workload.duration_s=1.5",
                    "server.cluster=yes", "focus=[dictFind, lookupKey]",
                    "workload.command=GET,key:__rand_int__", "dataset.expect_encoding=null",
                    "server.config.prefetch-batch-max-size=0", "dataset.key_prefix=k:"])
    assert s == {"dataset.keys": 1_000_000, "workload.pipeline": 16, "workload.duration_s": 1.5,
                 "server.cluster": True, "focus": ["dictFind", "lookupKey"],
                 "workload.command": ["GET", "key:__rand_int__"], "dataset.expect_encoding": None,
                 "server.config.prefetch-batch-max-size": "0", "dataset.key_prefix": "k:"}
    # the later of two --set of one field wins
    assert parse_sets(["workload.pipeline=2", "workload.pipeline=8"]) == {"workload.pipeline": 8}
    assert show(True) == "true" and show(["a", "b"]) == "a,b" and show(16) == "16"


@pytest.mark.parametrize("text, message", [
    ("dataset.keys=lots", "--set dataset.keys=lots: dataset.keys: expected an integer, got 'lots'"),
    ("workload.duration_s=soon", "--set workload.duration_s=soon: workload.duration_s: expected a number"),
    ("server.cluster=maybe", "--set server.cluster=maybe: server.cluster: expected true or false"),
    ("workload.pipelin=16", "--set workload.pipelin=16: unknown field 'workload.pipelin'"),
    ("name=x", "--set name=x: unknown field 'name'"),
    ("dataset.keys", "--set dataset.keys: expected FIELD=VALUE"),
    ("server.config.=1", "--set server.config.=1: name the server setting"),
    ("server.config={a: [1]}", "server.config.a: expected a plain value"),
])
def test_bad_values_name_the_option(text, message):
    with pytest.raises(CaseError) as e:
        parse_set(text)
    assert message in str(e.value)


def test_applied_after_the_size_and_recorded():
    small = load_case("mset-50keys", "tiny")
    assert small.dataset.keys == 200_000
    c = load_case("mset-50keys@value=100", "tiny",
                  parse_sets(["dataset.keys=50K", "workload.pipeline=4"]))
    assert (c.dataset.keys, c.workload.pipeline, c.dataset.value_size) == (50_000, 4, 100)
    # the workload spanned the whole keyspace, so its -r follows the new key count
    assert c.workload.keyspace == 50_000
    assert any("workload.keyspace follows" in n for n in c.notes)
    assert c.overrides == {"dataset.keys": 50_000, "workload.pipeline": 4}
    assert c.name == "mset-50keys@value=100" and c.size == "tiny"
    # the manifest stores the resolved case, overrides included
    assert Case.from_json(json.loads(json.dumps(c.to_json()))) == c
    # a keyspace given explicitly does not follow
    c2 = load_case("mset-50keys", "tiny", parse_sets(["dataset.keys=50K", "workload.keyspace=10K"]))
    assert (c2.dataset.keys, c2.workload.keyspace) == (50_000, 10_000)
    # one server setting merges into the case's config
    h = load_case("hgetall", "tiny", parse_sets(["server.config.hz=100"]))
    assert h.server.config == {"hash-max-ziplist-entries": "32", "hz": "100"}


def test_checks_that_need_the_whole_case_name_the_set():
    with pytest.raises(CaseError, match=r"^--set workload.keyspace=300000: workload.keyspace 300000 > "
                                        r"dataset.keys 200000"):
        load_case("mset-50keys", "tiny", parse_sets(["workload.keyspace=300K"]))
    with pytest.raises(CaseError, match=r"^--set workload.pipeline=0: workload.pipeline = 0 makes no sense"):
        load_case("mset-50keys", "tiny", parse_sets(["workload.pipeline=0"]))
    # rdb-load's keyspace does not span the dataset (0): it stays 0
    r = load_case("rdb-load", "tiny", parse_sets(["dataset.keys=10K"]))
    assert (r.dataset.keys, r.workload.keyspace) == (10_000, 0)


def test_cases_show_takes_set(capsys):
    assert cases_cli.main(["show", "get-iothreads", "--size", "tiny", "--json",
                           "--set", "workload.pipeline=16", "--set", "dataset.keys=10K"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["workload"]["pipeline"], d["dataset"]["keys"], d["workload"]["keyspace"]) == (16, 10_000, 10_000)
    assert cases_cli.main(["show", "get-iothreads", "--set", "workload.pipeline=many"]) == 2
    assert capsys.readouterr().err.startswith("stallscope cases: error: --set workload.pipeline=many: workload.pipeline: "
                                              "expected an integer")


@pytest.mark.heavy
def test_run_rejects_a_bad_set_before_building_anything(tmp_path):
    p = subprocess.run([sys.executable, "-m", "collectors", "run", "mset-50keys", "--size", "tiny",
                        "--variant", "a=bin:/nonexistent/redis-server", "--variant", "b=bin:/nonexistent/x",
                        "--set", "dataset.keys=lots", "--out", str(tmp_path)],
                       cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "--set dataset.keys=lots: dataset.keys: expected an integer, got 'lots'" in p.stderr
    assert "Traceback" not in p.stderr and list(tmp_path.iterdir()) == []


@pytest.mark.heavy
def test_experiment_takes_set_after_each_parts_own(tmp_path):
    def experiment(*args):
        return subprocess.run([sys.executable, "-m", "collectors", "experiment", *args],
                              cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=120)
    p = experiment("zrange-2867", "--plan", "--set", "server.config.hz=100")
    assert p.returncode == 0, p.stderr
    # every point of the part: the part's own command override, then ours
    line = next(l for l in p.stderr.splitlines() if "every point:" in l)
    assert line.index("--set workload.command=") < line.index("--set server.config.hz=100")
    p = experiment("zrange-2867", "--plan", "--set", "workload.clients=some")
    assert p.returncode == 2 and "--set workload.clients=some: workload.clients: expected an integer" in p.stderr
    # the part sweeps dataset.keys: a --set of it is refused, naming the file and the part
    p = experiment("zrange-2867", "--plan", "--set", "dataset.keys=1M")
    assert p.returncode == 2 and "part sets: --axis dataset.keys and --set dataset.keys" in p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.heavy
def test_demo_passes_set_to_the_run_and_stops_at_a_bad_one(tmp_path):
    p = subprocess.run([sys.executable, "-m", "collectors", "demo", "--size", "small",
                        "--set", "workload.pipeline=deep", "--runs", str(tmp_path / "runs"),
                        "--out", str(tmp_path / "rep")],
                       cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    # the demo's own plan line: the user's set (the small size sets no keys: the case's small
    # size outgrows the host's cache)
    assert "set: workload.pipeline=deep" in p.stderr
    assert "--set workload.pipeline=deep: workload.pipeline: expected an integer" in p.stderr
    assert "--resume" not in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "rep").exists()
