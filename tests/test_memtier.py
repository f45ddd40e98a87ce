"""memtier_benchmark as the load generator: the argv built from real suite files, the key
range that spells the dataset's zero-padded names, and the fallback to redis-benchmark
when memtier is not installed (as on the dev host: it is not packaged in Debian bookworm).
No memtier output is faked here: the argv is checked, memtier itself never runs."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from analysis.inputs.rundir import Manifest
from collectors.load import memtier
from analysis.inputs.case import Case, DatasetSpec, ServerSpec, WorkloadSpec
from collectors.workload.cases import load_case
from collectors.runner.api import choose_load_generator
from commands.run import main as run_main
from collectors.runner.options import RunOptions
from collectors.workload.suite import import_suite, write_case_yaml

BIN = "/opt/memtier/memtier_benchmark"      # only a word in argv: never executed here
NO_MEMTIER_ENV = {"PATH": os.environ.get("PATH", "")}
needs_no_memtier = pytest.mark.skipif(
    shutil.which("memtier_benchmark") is not None or bool(os.environ.get("MEMTIER")),
    reason="memtier_benchmark is installed here; the fallback path is not what runs")


def _suite_case(fixtures_dir: Path, tmp_path: Path, name: str, size: str) -> Case:
    res = import_suite(fixtures_dir / "bench-suites" / f"memtier_benchmark-{name}.yml")
    p = tmp_path / f"{res.case['name']}.yaml"
    p.write_text(write_case_yaml(res))
    return load_case(str(p), size)


def _argv(case: Case, port: int = 6390, json_out: str = "/r/base/1/bench.json") -> list[str]:
    w = case.workload
    return memtier.memtier_argv(BIN, port, memtier.plan(case), w.pipeline, w.duration_s,
                                Path(json_out), case.server.cluster)


def test_mset_50keys_suite_argv(fixtures_dir, tmp_path):
    case = _suite_case(fixtures_dir, tmp_path, "10Mkeys-load-string-mset-50-keys-with-10B-values", "default")
    assert case.workload.tool == "memtier"
    argv = _argv(case)
    assert argv == [
        BIN, "--server", "127.0.0.1", "--port", "6390", "--protocol", "redis",
        "--clients", "50", "--threads", "8", "--pipeline", "1", "--test-time", "180",
        "--hide-histogram", "--json-out-file", "/r/base/1/bench.json",
        "--command=MSET" + " __key__ __data__" * 50,
        "--key-prefix=key:00000", "--key-minimum=1000000", "--key-maximum=9999999",
        "--command-key-pattern=R", "--distinct-client-seed", "--data-size=10"]
    # the suite's own -c 50 -t 8 (400 connections) survives the round trip through the case
    small = _argv(_suite_case(fixtures_dir, tmp_path, "10Mkeys-load-string-mset-50-keys-with-10B-values",
                              "tiny"))
    assert small[small.index("--test-time") + 1] == "3"
    assert "--key-prefix=key:000000" in small and "--key-minimum=100000" in small
    assert "--key-maximum=199999" in small


def test_hgetall_suite_argv(fixtures_dir, tmp_path):
    case = _suite_case(fixtures_dir, tmp_path, "1Mkeys-hash-hgetall-50-fields-10B-values", "default")
    argv = _argv(case, port=7000)
    assert argv == [
        BIN, "--server", "127.0.0.1", "--port", "7000", "--protocol", "redis",
        "--clients", "50", "--threads", "4", "--pipeline", "1", "--test-time", "120",
        "--hide-histogram", "--json-out-file", "/r/base/1/bench.json", "--command=HGETALL __key__",
        "--key-prefix=memtier-000000", "--key-minimum=100000", "--key-maximum=999999",
        "--command-key-pattern=R", "--distinct-client-seed"]
    # one-key case: the suite's literal key is the dataset's one key, sent as written
    one = _suite_case(fixtures_dir, tmp_path, "1key-hash-1K-fields-hgetall", "tiny")
    a = _argv(one)
    assert "--command=HGETALL hash:000000000000" in a and not any(x.startswith("--key-") for x in a)
    assert memtier.plan(one).keys is None


def test_shipped_case_in_cluster_mode_and_pipeline():
    case = load_case("hgetall", "tiny")
    case.server.cluster, case.workload.pipeline = True, 16
    argv = _argv(case)
    assert argv[argv.index("--pipeline") + 1] == "16" and argv[-1] == "--cluster-mode"
    assert argv[argv.index("--clients") + 1] == "50" and argv[argv.index("--threads") + 1] == "1"


@pytest.mark.parametrize("keyspace,prefix,lo,hi,covered", [
    (1, "key:00000000000", 0, 0, 1),
    (10, "key:00000000000", 0, 9, 10),
    (11, "key:0000000000", 10, 10, 1),
    (200_000, "key:000000", 100_000, 199_999, 100_000),
    (1_000_000, "key:000000", 100_000, 999_999, 900_000),
    (10_000_000, "key:00000", 1_000_000, 9_999_999, 9_000_000),
])
def test_key_range_spells_dataset_key_names(keyspace, prefix, lo, hi, covered):
    r = memtier.key_range("key:", keyspace)
    assert (r.prefix, r.minimum, r.maximum, r.covered, r.keyspace) == (prefix, lo, hi, covered, keyspace)
    ds = DatasetSpec(kind="strings", keys=keyspace, key_prefix="key:")
    # memtier's name for n is prefix + "%llu" % n (obj_gen.cpp generate_key)
    for n in {lo, hi, (lo + hi) // 2}:
        assert f"{r.prefix}{n}" == ds.key_name(n)
    assert r.exact == (keyspace <= 10)
    if not r.exact:
        assert f"keys 0..{lo - 1} are preloaded but not touched" in r.note()


def test_key_range_limits():
    with pytest.raises(memtier.MappingError, match="keyspace is 0"):
        memtier.key_range("key:", 0)
    with pytest.raises(memtier.MappingError, match="more than 12 digits"):
        memtier.key_range("key:", 10 ** 12 + 1)


def _case(command: list[str], clients: int = 50, threads: int = 1, tool: str = "memtier") -> Case:
    return Case(name="t", description="", server=ServerSpec(),
                dataset=DatasetSpec(kind="strings", keys=1000, value_size=10, key_prefix="key:"),
                workload=WorkloadSpec(tool=tool, command=command, keyspace=1000, clients=clients,
                                      threads=threads, duration_s=5))


@needs_no_memtier
def test_fallback_when_memtier_is_not_installed():
    case = _case(["GET", "key:__rand_int__"])
    entry, binary = memtier.choose(case, "auto", {"base": "/b/redis-benchmark"}, env=NO_MEMTIER_ENV)
    assert binary is None
    assert entry.to_json() == {"requested": "memtier", "used": "redis-benchmark", "path": {"base": "/b/redis-benchmark"},
                     "reason": "memtier_benchmark not on PATH (install it from its release or build it "
                               "from source, or set MEMTIER=/path)",
                     "asked_by": "workload.tool: memtier"}
    assert memtier.describe(entry) == (
        "load generator: memtier requested (workload.tool: memtier), using redis-benchmark instead: "
        "memtier_benchmark not on PATH (install it from its release or build it from source, or set "
        "MEMTIER=/path)")
    # --load-generator memtier asks for it on a redis-benchmark case too
    entry, _ = memtier.choose(_case(["GET", "key:__rand_int__"], tool="redis-benchmark"), "memtier",
                              {"base": "/b/redis-benchmark"}, env=NO_MEMTIER_ENV)
    assert entry.used == "redis-benchmark" and entry.asked_by == "--load-generator memtier"


@needs_no_memtier
def test_runner_says_the_fallback_on_stderr_and_in_the_manifest(capsys):
    class V:
        name, benchmark_bin, server_bin = "base", "/b/redis-benchmark", "/b/redis-server"
    entry, binary = choose_load_generator(_case(["GET", "key:__rand_int__"]), RunOptions(),
                                          {"base": V()}, lambda m: print(m, file=__import__("sys").stderr))
    assert binary is None and entry.used == "redis-benchmark"
    err = capsys.readouterr().err
    assert err.startswith("stallscope run: load generator: memtier requested (workload.tool: memtier), "
                          "using redis-benchmark instead: memtier_benchmark not on PATH")
    m = Manifest(run_id="r", created="", command=[], case={}, size="small", variants={},
                 load_generator=entry)
    assert Manifest.from_json(m.to_json()).load_generator == entry


def test_redis_benchmark_used_normally_and_rdb_load():
    entry, binary = memtier.choose(_case(["GET", "key:__rand_int__"], tool="redis-benchmark"), "auto",
                                   {"base": "/b/redis-benchmark", "cand": "/c/redis-benchmark"})
    assert binary is None
    assert entry.to_json() == {"requested": "redis-benchmark", "used": "redis-benchmark",
                               "path": {"base": "/b/redis-benchmark", "cand": "/c/redis-benchmark"}}
    assert memtier.describe(entry) is None
    # a forced redis-benchmark never looks at MEMTIER
    entry, _ = memtier.choose(_case(["GET", "key:__rand_int__"]), "redis-benchmark", {"base": "/b/rb"},
                              env={"MEMTIER": "/nonexistent/memtier_benchmark"})
    assert entry.used == "redis-benchmark"
    entry, _ = memtier.choose(_case(["GET", "key:__rand_int__"], tool="rdb-load"), "memtier", {})
    assert entry.used is None and "rdb-load" in entry.reason


def test_cases_memtier_cannot_say_fall_back_with_the_reason():
    tricky = [(["HGET", "key:__rand_int__", "field:__rand_int__"], "only 'key:__rand_int__' maps"),
              (["SET", "other:__rand_int__", "v"], "only 'key:__rand_int__' maps"),
              (["SET", "key:__rand_int__", "two words"], "memtier splits --command on spaces")]
    for command, why in tricky:
        entry, binary = memtier.choose(_case(command), "auto", {"base": "/b/rb"}, env={"PATH": ""})
        assert binary is None and entry.used == "redis-benchmark"
        assert entry.reason.startswith("the case has no memtier equivalent: ") and why in entry.reason
    entry, _ = memtier.choose(_case(["GET", "key:__rand_int__"], clients=50, threads=4), "auto",
                              {"base": "/b/rb"}, env={"PATH": ""})
    assert "workload.clients 50 is not a multiple of workload.threads 4" in entry.reason
    entry, _ = memtier.choose(_case(["GET", "key:__rand_int__"]), "auto", {"base": "/b/rb"},
                              paired=True, env={"PATH": ""})
    assert entry.reason.startswith("--paired drives redis-benchmark")


def test_memtier_env_pointing_nowhere_is_an_error(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "no" / "memtier_benchmark"
    with pytest.raises(memtier.MemtierError) as e:
        memtier.find_memtier({"MEMTIER": str(bad), "PATH": ""})
    assert str(e.value) == (f"MEMTIER={bad}: does not exist; point MEMTIER at the memtier_benchmark "
                            "binary, or unset it to look for memtier_benchmark on PATH")
    not_exec = tmp_path / "memtier_benchmark"
    not_exec.write_text("")
    with pytest.raises(memtier.MemtierError, match="is not an executable file"):
        memtier.find_memtier({"MEMTIER": str(not_exec)})
    # the CLI stops before building anything, exit status 2, no run directory
    monkeypatch.setenv("MEMTIER", str(bad))
    out = tmp_path / "runs"
    assert run_main(["hgetall", "--size", "tiny", "--variant", "a=debsrc:redis", "--load-generator",
                     "memtier", "--profile", "off", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"stallscope run: error: MEMTIER={bad}: does not exist" in err
    assert not out.exists()


def test_cli_offers_the_choice(capsys):
    with pytest.raises(SystemExit):
        run_main(["--help"])
    out = capsys.readouterr().out
    assert "--load-generator {auto,redis-benchmark,memtier}" in out
    with pytest.raises(SystemExit) as e:
        run_main(["hgetall", "--load-generator", "wrk"])
    assert e.value.code == 2
    assert "invalid choice: 'wrk'" in capsys.readouterr().err


def test_a_load_generator_that_writes_no_json_fails_the_rep_clearly(tmp_path):
    """Real binaries standing in for a broken memtier (no output is made up): a non-zero
    exit, and an exit 0 without the --json-out-file, each name what went wrong."""
    from collectors.load.redis_benchmark import BenchError
    for binary, msg in ((shutil.which("false"), "exited with status 1"),
                        (shutil.which("true"), "exited 0 but wrote no")):
        argv = [binary, "--json-out-file", str(tmp_path / "bench.json")]
        with pytest.raises(BenchError, match=msg):
            memtier.start(argv, None).finish(tmp_path, timeout_s=10)
        assert (tmp_path / "bench.txt").is_file() and (tmp_path / "bench.stderr").is_file()


def test_report_names_the_load_generator_and_the_fallback():
    from analysis.report import markdown as report_md
    from analysis.compare.results import CaseInfo, Environment, Results
    from analysis.inputs.manifest import LoadGenerator
    entry, _ = memtier.choose(_case(["GET", "key:__rand_int__"]), "auto", {"base": "/b/rb"}, env={"PATH": ""})
    r = Results(run_id="r", created="", case=CaseInfo(), base="base", cand="cand", settings={},
                environment=Environment(load_generator=entry))
    # esc() keeps Markdown inert: memtier\\_benchmark renders as memtier_benchmark
    assert ("- Load generator: redis-benchmark (memtier requested; memtier\\_benchmark not on PATH "
            "(install it from its release or build it from source, or set MEMTIER=/path)).") \
        in report_md._environment(r)
    r.environment = Environment(load_generator=LoadGenerator("redis-benchmark", "redis-benchmark"))
    assert "- Load generator: redis-benchmark." in report_md._environment(r)
    r.environment = Environment()   # runs made before the entry existed: no line
    assert not any("Load generator" in x for x in report_md._environment(r))


def test_report_names_memtier_rows_by_the_command(fixtures_dir, tmp_path):
    """memtier's JSON calls its row "Totals"; compare names it by the case's command
    words (memtier ran them with its own key placeholder), as redis-benchmark names its rows."""
    import json
    from analysis.compare import throughput
    case = _suite_case(fixtures_dir, tmp_path, "1Mkeys-hash-hgetall-50-fields-10B-values", "tiny")
    rep = tmp_path / "base" / "1"
    rep.mkdir(parents=True)
    # The documented --json-out-file shape (no real memtier output is recorded here).
    (rep / "bench.json").write_text(json.dumps({"ALL STATS": {"Totals": {"Ops/sec": 1234.5}}}))
    assert [r.test for r in throughput.bench_rows(rep, case.workload.command)] == ["HGETALL memtier-__rand_int__"]
    assert [r.test for r in throughput.bench_rows(rep, [])] == ["Totals"]


def test_memtier_reps_leave_the_request_cap_open(tmp_path):
    """rep.json requests is null for memtier (it runs for --test-time): compare caps a
    profile window's operations at a numeric request count, so 0 would zero them."""
    import json
    from analysis.inputs.rundir import read_rep_facts
    (tmp_path / "rep.json").write_text(json.dumps(
        {"bench": {"requests": None}, "commands": {"bench": [BIN, "--test-time", "3"]}}))
    assert read_rep_facts(tmp_path).requests is None
