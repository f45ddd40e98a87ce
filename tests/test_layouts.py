"""Code layouts (`+layout=SEED`, `stallscope run --layouts N`): the shuffle of the link
order, the schedule, and the change over layouts on recorded per-rep values."""
from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from analysis.compare import layouts, pair_clusters, throughput
from analysis.compare.engine import analyse
from analysis.compare.options import CompareOptions
from analysis.inputs.manifest import Variant
from analysis.inputs.rundir import load_run
from analysis.report import markdown
from collectors.runner import layouts as run_layouts
from collectors.runner.options import RunError, RunOptions
from collectors.runner.rep_order import build_rep_order
from collectors.variants import builder, linkorder
from collectors.variants.spec import SpecError, parse_variant

DATA = Path(__file__).parent / "data"
NOISE = DATA / "runs" / "noise-paired-12reps-16pairs"     # 12 paired reps, no layouts
SOURCES = builder.cache_dir() / "sources"

# The two shapes of the real Makefiles: Redis's one-line list linked as $^, Valkey's
# continued list, a `+=` of another variable and the variable in the recipe.
REDIS_LIKE = """\
REDIS_SERVER_NAME=redis-server
REDIS_SERVER_OBJ=adlist.o ae.o dict.o server.o t_string.o
REDIS_VEC_SETS_OBJ=
$(REDIS_SERVER_NAME): $(REDIS_SERVER_OBJ) $(REDIS_VEC_SETS_OBJ)
\t@echo $^
"""
VALKEY_LIKE = """\
SERVER_NAME=valkey-server
ENGINE_TRACE_OBJ = \\
    trace/a.o \\
    trace/b.o
ENGINE_SERVER_OBJ = \\
    acl.o \\
    ae.o \\
    hashtable.o \\
    server.o
ENGINE_SERVER_OBJ+=$(ENGINE_TRACE_OBJ)
ifeq ($(X),yes)
ENGINE_SERVER_OBJ+=extra.o
endif
$(SERVER_NAME): $(ENGINE_SERVER_OBJ)
\t@echo $(ENGINE_SERVER_OBJ)
"""


def test_the_modifier_parses_and_is_refused_where_it_cannot_be_built():
    s = parse_variant("a=debsrc:redis@8.0+layout=7+config=x=1")
    assert (s.layout, s.config, s.ref) == (7, {"x": "1"}, "8.0")
    assert parse_variant("a=debsrc:redis").layout is None
    for bad in ("a=debsrc:redis+layout=x", "a=debsrc:redis+layout=-1", "a=bin:/x/redis-server+layout=1"):
        with pytest.raises(SpecError):
            parse_variant(bad)


@pytest.mark.parametrize("text, var, objs", [
    (REDIS_LIKE, "REDIS_SERVER_OBJ", ["adlist.o", "ae.o", "dict.o", "server.o", "t_string.o"]),
    (VALKEY_LIKE, "ENGINE_SERVER_OBJ", ["acl.o", "ae.o", "hashtable.o", "server.o", "trace/a.o",
                                        "trace/b.o", "extra.o"]),
])
def test_the_link_variable_and_its_objects_are_read_from_the_makefile(text, var, objs):
    assert linkorder.link_objects(text) == (var, objs)


def test_the_shuffle_is_a_permutation_fixed_by_its_seed():
    objs = [f"o{i}.o" for i in range(40)]
    a, b, c = (linkorder.shuffled(objs, s) for s in (1, 1, 2))
    assert a == b and a != c and a != objs
    assert sorted(a) == sorted(objs) and sorted(c) == sorted(objs)
    # pinned: the order of a seed is the same on every machine and Python (a cached
    # build's key names the seed, not the order)
    assert linkorder.shuffled(["a", "b", "c", "d", "e"], 1) == ["c", "d", "e", "a", "b"]


@pytest.mark.skipif(not shutil.which("make"), reason="needs GNU make")
@pytest.mark.parametrize("text", [REDIS_LIKE, VALKEY_LIKE])
def test_make_links_the_objects_in_the_seeds_order(tmp_path, text):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "Makefile").write_text(text)
    for o in linkorder.link_objects(text)[1]:
        (tmp_path / "src" / o).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / o).touch()
    rec = linkorder.apply_layout(tmp_path, 3)
    name = "redis-server" if "REDIS" in text else "valkey-server"
    out = subprocess.run(["make", "-s", "-C", str(tmp_path / "src"), name, "X=yes"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == rec["order"]
    assert rec["seed"] == 3 and rec["objects"] == len(out)


def test_a_makefile_without_a_server_link_rule_says_so(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "Makefile").write_text("all:\n\techo\n")
    with pytest.raises(linkorder.LayoutError, match="link rule"):
        linkorder.apply_layout(tmp_path, 1)


@pytest.mark.parametrize("pkg, var", [("redis", "REDIS_SERVER_OBJ"), ("valkey", "ENGINE_SERVER_OBJ")])
def test_the_real_makefiles_link_list_is_shuffled_whole(pkg, var):
    found = sorted(SOURCES.glob(f"{pkg}_*/tree/src/Makefile"))
    if not found:
        pytest.skip(f"no unpacked {pkg} source in {SOURCES} (stallscope build fetches one)")
    text = found[-1].read_text()
    got, objs = linkorder.link_objects(text)
    assert got == var and "server.o" in objs and "networking.o" in objs and len(objs) > 90
    assert sorted(linkorder.shuffled(objs, 5)) == sorted(objs)


def test_the_build_key_changes_with_the_seed_and_not_without_one():
    ident = {"kind": "debsrc", "package": "redis", "version": "5:8.0.6-3", "suite": "forky"}
    plain = builder.build_key(ident, [], [])
    assert builder.build_key(ident, [], [], None) == plain
    assert len({plain, builder.build_key(ident, [], [], 1), builder.build_key(ident, [], [], 2)}) == 3


def test_paired_reps_take_the_layouts_in_turn_and_layouts_1_is_todays_schedule():
    one = build_rep_order(["a", "b"], RunOptions(reps=3, paired=True, profile="off"), "redis-benchmark")
    assert [(r.rep, r.layout) for r in one] == [(1, None), (2, None), (3, None)]
    assert "layout" not in one[0].to_json()
    three = build_rep_order(["a", "b"], RunOptions(reps=2, paired=True, profile="off", layouts=3),
                            "redis-benchmark")
    assert [(r.rep, r.layout) for r in three] == [(1, 1), (2, 2), (3, 3), (4, 1), (5, 2), (6, 3)]


def _variant(name: str, seeds: list[int]) -> Variant:
    return Variant(name=name, spec="debsrc:redis", kind="debsrc", server_bin=f"/b/{name}/1",
                   binary_sha256=f"{name}1", layouts=[{"seed": s, "server_bin": f"/b/{name}/{s}",
                                                        "binary_sha256": f"{name}{s}"} for s in seeds])


def test_a_rep_runs_its_layouts_binary_of_every_variant():
    vs = {"a": _variant("a", [1, 2]), "b": _variant("b", [1, 2])}
    got = run_layouts.variants_for(vs, 2)
    assert [(v.server_bin, v.binary_sha256) for v in got.values()] == [("/b/a/2", "a2"), ("/b/b/2", "b2")]
    assert run_layouts.variants_for(vs, None) is vs
    with pytest.raises(RunError, match="layout 3"):
        run_layouts.variants_for(vs, 3)


def test_layouts_are_refused_where_they_cannot_work():
    specs = [parse_variant("a=debsrc:redis"), parse_variant("b=bin:/usr/bin/redis-server")]
    two = [specs[0], parse_variant("c=debsrc:redis+config=x=1")]
    run_layouts.check(RunOptions(layouts=1), specs)        # today's run: nothing to check
    run_layouts.check(RunOptions(layouts=2), two)
    with pytest.raises(RunError, match="prebuilt"):
        run_layouts.check(RunOptions(layouts=2), specs)
    with pytest.raises(RunError, match="precision"):
        run_layouts.check(RunOptions(layouts=2, precision=0.02), two)
    with pytest.raises(RunError, match="at least 1"):
        run_layouts.check(RunOptions(layouts=0), two)
    for opts, given in ((RunOptions(layouts=2, pairing="unpaired"), two), (RunOptions(layouts=2), specs[:1])):
        with pytest.raises(RunError, match="two variants and no --unpaired"):
            run_layouts.check(opts, given)


def _with_layouts(tmp_path: Path, n: int) -> Path:
    """The recorded 12-rep run with its reps given to n layouts in turn."""
    run = tmp_path / "run"
    shutil.copytree(NOISE, run)
    m = json.loads((run / "manifest.json").read_text())
    for r in m["schedule"]:
        r["layout"] = (r["rep"] - 1) % n + 1
    m["options"]["layouts"] = n
    (run / "manifest.json").write_text(json.dumps(m))
    return run


def test_the_change_over_layouts_is_the_mean_of_the_layouts_means(tmp_path):
    run = load_run(_with_layouts(tmp_path, 3))
    units = pair_clusters.rep_units(throughput.paired_units(run, "base", "prefetch"))
    logs = {u.rep: math.log(u.cand / u.base) for u in units}
    s = layouts.of_run(run, units, 0.95)
    assert s is not None and s.layouts == 3 and [p.reps for p in s.per_layout] == [4, 4, 4]
    means = [sum(logs[r] for r in logs if (r - 1) % 3 == k) / 4 for k in range(3)]
    assert s.change == pytest.approx(math.expm1(sum(means) / 3))
    assert [p.change for p in s.per_layout] == pytest.approx([math.expm1(x) for x in means])
    assert s.ci_low < s.change < s.ci_high
    assert s.line.startswith(("holds across 3 layouts", "depends on layout"))


def test_a_layouts_run_reports_over_layouts_and_prints_the_line(tmp_path):
    r = analyse(load_run(_with_layouts(tmp_path, 3)), CompareOptions())
    row = r.paired[0]
    assert "over 3 code layouts" in row.change.method and row.base.n == 3
    text = markdown.render(r)
    assert "> Code layouts: " in text and r.measurement.layouts.line.split(" (")[0] in text
    from analysis.report import html
    assert f"<b>Code layouts:</b> {r.measurement.layouts.line.split(' (')[0]}" in html.render(r, tmp_path)
    plain = analyse(load_run(NOISE), CompareOptions())
    assert plain.measurement.layouts is None and "layout" not in plain.paired[0].change.method
    assert "Code layouts" not in markdown.render(plain)


def test_two_layouts_keep_the_interval_over_reps_and_say_what_it_leaves_out(tmp_path):
    r = analyse(load_run(_with_layouts(tmp_path, 2)), CompareOptions())
    assert "2 code layouts, fewer than 3" in r.paired[0].change.method and r.paired[0].base.n == 12


def test_the_line_holds_depends_or_cannot_tell():
    held = layouts.spread({1: [0.02, 0.03, 0.025], 2: [0.01, 0.015, 0.012]})
    assert held.holds and held.line.startswith("holds across 2 layouts")
    split = layouts.spread({1: [0.02, 0.03, 0.025], 2: [-0.01, 0.002, 0.004]})
    assert split.holds is False and split.line.startswith("depends on layout: +2.5% \u2026 \u22120.1%")
    # every layout about +11% but 2 reps each: no layout's own interval excludes 0 (t at 1 df),
    # the interval over layouts does (the measured mget-100keys config change looked so)
    agree = layouts.spread({1: [0.15, 0.07], 2: [0.15, 0.06], 3: [0.14, 0.09]})
    assert all(p.ci_low < 0 for p in agree.per_layout) and agree.ci_low > 0
    assert agree.holds and agree.line.startswith("holds across 3 layouts on the interval over layouts")
    # no layout shows a change and their signs differ: not "depends on layout"
    none = layouts.spread({1: [0.003, -0.001], 2: [-0.002, 0.001], 3: [0.001, 0.0]})
    assert none.holds is None and "no layout's interval and not the interval over layouts" in none.line
    thin = layouts.spread({1: [0.02], 2: [0.01, 0.015]})
    assert thin.holds is None and "fewer than 2 reps" in thin.line
    assert layouts.spread({1: [0.02, 0.03]}) is None


def _addresses(binary: str, names: tuple[str, ...]) -> dict[str, str]:
    out = subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout
    return {w[2]: w[0] for w in (ln.split() for ln in out.splitlines()) if len(w) == 3 and w[2] in names}


@pytest.mark.slow
def test_a_live_aa_run_over_two_layouts_at_ci_size(tmp_path):
    from tests.conftest import REPO
    from tests.conftest_run import BASE_SPEC, cli_env
    import sys
    p = subprocess.run([sys.executable, "-m", "collectors", "run", "mset-50keys", "--size", "tiny",
                        "--variant", f"a={BASE_SPEC}", "--variant", f"b={BASE_SPEC}", "--layouts", "2",
                        "--reps", "2", "--paired-windows", "16", "--profile", "off",
                        "--out", str(tmp_path), "--no-progress"],
                       cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "2 layouts of every variant (layout shuffle numbers 1, 2)" in p.stderr
    run_dir = Path(p.stdout.strip().splitlines()[-1])
    m = load_run(run_dir).manifest
    assert m.options.layouts == 2
    assert [(r.rep, r.layout) for r in m.reps(kind="paired")] == [(1, 1), (2, 2), (3, 1), (4, 2)]
    lays = m.variants["a"].layouts
    assert [x["seed"] for x in lays] == [1, 2] and m.variants["a"].layout["seed"] == 1
    assert lays == m.variants["b"].layouts            # A/A: layout i is one build on both sides
    assert lays[0]["binary_sha256"] != lays[1]["binary_sha256"]
    hot = ("dictFind", "processCommand", "call", "msetCommand")
    one, two = (_addresses(x["server_bin"], hot) for x in lays)
    assert one.keys() == two.keys() == set(hot) and one != two
    build = json.loads((Path(lays[1]["server_bin"]).parents[2] / "build.json").read_text())
    assert build["layout"]["seed"] == 2 and len(build["layout"]["order"]) > 90
    md = markdown.render(analyse(load_run(run_dir), CompareOptions()))
    line = next(ln for ln in md.splitlines() if ln.startswith("> Code layouts: "))
    assert any(w in line for w in ("holds across 2 layouts", "depends on layout", "cannot tell"))
