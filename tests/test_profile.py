"""Profile model against real recordings (tests/data/SOURCES.md); the `perf script` pass that
makes them is tests/test_perfscript.py."""
from pathlib import Path

import pytest

from analysis.profile import stacks as prof
from analysis.profile.stacks import (FoldedError, Stacks, callees, callers, function_costs, merge,
                                     read_folded, thread_group, thread_groups, write_folded)

DATA = Path(__file__).parent / "data" / "profile"
NS = 1001001        # one cpu-clock sample at 999 Hz, in ns (the recordings' period)


@pytest.fixture(scope="module")
def main_st():
    return read_folded(DATA / "redis-main.inferno.folded", unit="nanoseconds")


@pytest.fixture(scope="module")
def io_st():
    return read_folded(DATA / "redis-io.inferno.folded", unit="nanoseconds")


def _flat_by_grep(path, fn):
    """Independent flat count: sum of lines whose last frame is fn."""
    tot = 0
    for line in Path(path).read_text().splitlines():
        stack, n = line.rsplit(" ", 1)
        if stack.split(";")[-1] == fn:
            tot += int(n)
    return tot


def test_function_costs_on_real_profile(main_st):
    assert main_st.total == 1665 * NS
    c = function_costs(main_st)
    assert list(c)[:2] == ["dictFind", "lookupKey"]
    assert c["dictFind"].flat == 406 * NS == _flat_by_grep(DATA / "redis-main.inferno.folded", "dictFind")
    assert c["dictFind"].cum == 433 * NS
    assert c["lookupKey"].flat == 156 * NS and c["lookupKey"].cum == 641 * NS
    assert round(c["dictFind"].flat_share, 2) == 24.38
    assert round(c["lookupKey"].cum_share, 2) == 38.50
    assert "redis-server" not in c            # the thread frame is not a function
    assert (c["main"].cum, c["aeMain"].cum) == (1663 * NS, 1662 * NS)   # 2 samples: no user frames


def test_callers_and_callees(main_st):
    assert {k: v / NS for k, v in callers(main_st, "dictFind").items()} == {
        "lookupKey": 406, "dictFetchValue": 18, "dbOverwrite": 5, "removeExpire": 4}
    cl = {k: v / NS for k, v in callees(main_st, "lookupKey").items()}
    assert cl["dictFind"] == 406 and cl["dictSdsKeyCompare"] == 61


def test_recursion_counted_once():
    st = Stacks({("t", "a", "b", "a", "b"): 3, ("t", "a"): 1})
    c = function_costs(st)
    assert (c["a"].cum, c["b"].cum, c["b"].flat, c["a"].flat) == (4, 3, 3, 1)
    assert callers(st, "b") == {"a": 3} and callers(st, "a") == {"(root)": 4, "b": 3}


def test_thread_groups_io_threads(io_st):
    g = thread_groups(io_st)
    assert list(g) == ["main", "io-threads"]
    assert g["main"].total == 1268 * NS and g["io-threads"].total == 1499 * NS
    io_costs = function_costs(g["io-threads"])
    assert round(io_costs["IOThreadMain"].flat / NS) == 1369
    assert [thread_group(n) for n in ("redis-server", "valkey-server", "io_thd_3", "bio_lazy_free",
                                      "jemalloc_bg_thd", "redis-rdb-bgsave", "perf", "srv")] == \
        ["main", "main", "io-threads", "background", "background", "background", "other", "other"]
    assert thread_group("srv", main_names=["srv"]) == "main"


def test_normalisation():
    st = prof.parse_folded_lines([
        "redis-server-123/456;main;[unknown];prefetchLoop_[i];dictFind 5",
        "redis-server-99/99;main;dictFind 2",
        "redis-server;main;[unknown] 1",
    ])
    assert st.weights == {("redis-server", "main", "prefetchLoop", "dictFind"): 5,
                          ("redis-server", "main", "dictFind"): 2,
                          ("redis-server", "main", "[unknown]"): 1}


def test_folded_errors_name_file_and_line(tmp_path):
    f = tmp_path / "perf.folded"
    f.write_text("a;b 3\na;b;c x\n")
    with pytest.raises(FoldedError, match=r"perf.folded:2: sample count 'x' is not a number"):
        read_folded(f)
    f.write_text("a;b 3\n\nnocount\n")
    with pytest.raises(FoldedError, match=r"perf.folded:3: expected"):
        read_folded(f)
    with pytest.raises(FoldedError, match="no such folded-stacks file"):
        read_folded(tmp_path / "none.folded")


def test_write_merge_round_trip(tmp_path, main_st, io_st):
    out = tmp_path / "x.folded"
    write_folded(main_st, out)
    assert read_folded(out, unit="nanoseconds").weights == main_st.weights
    m = merge([main_st, io_st])
    assert m.total == (1665 + 2767) * NS
    with pytest.raises(ValueError, match="merge"):
        merge([main_st, Stacks()])


def test_compiler_clones_are_one_function_across_builds():
    """A patch elsewhere in a file can make GCC split a function (f -> f.part.0) or specialise
    it (.constprop.N, .isra.N, .cold): one name, so it is neither gone nor new; f calling
    its own split-off part is one frame, while real recursion stays two."""
    assert prof.normalize_frame("aeProcessEvents.part.0") == "aeProcessEvents"
    assert prof.normalize_frame("dictFind.constprop.0.isra.0") == "dictFind"
    assert prof.normalize_frame("zmalloc.cold") == "zmalloc"
    assert prof.normalize_frame("f.llvm.123456") == "f"
    assert prof.normalize_frame("partial") == "partial"          # a name, not a suffix
    assert prof.normalize_frame("x.part") == "x"
    assert prof.normalize_stack(["redis-server", "main", "msetGenericCommand",
                                 "msetGenericCommand.part.0", "setKey"]) == \
        ("redis-server", "main", "msetGenericCommand", "setKey")
    assert prof.normalize_stack(["t", "rec", "rec", "rec"]) == ("t", "rec", "rec", "rec")
    # a recorded Valkey profile: aeProcessEvents.part.0 costs count under aeProcessEvents
    st = prof.read_folded(Path(__file__).parent / "data" / "runs" / "valkey-mset-99hz-small"
                          / "b" / "3" / "perf.folded")
    names = {fn for frames in st.weights for fn in st.functions_of(frames)}
    assert "aeProcessEvents" in names and not any(".part." in n for n in names)
