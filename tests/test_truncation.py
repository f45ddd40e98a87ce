"""Truncated stacks (analysis/profile/truncation.py, analysis/compare/truncated_reps.py) on
recorded perf profiles: the share of samples whose stack does not reach the thread's
entry, per rep and variant, and the note beside the cumulative tables above 2%.

The hand computations below do not use ENTRY_FRAMES: in these Redis profiles a whole
main-thread stack starts `redis-server;__libc_start_call_main` and a whole io-thread stack
`io_thd_1;start_thread`; anything else lost its callers."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.compare import profile_reps
from analysis.compare.engine import analyse
from analysis.compare.options import CompareOptions
from analysis.compare.profiles import main_names
from analysis.compare.truncated_reps import truncated_stacks
from analysis.inputs.rundir import load_run
from analysis.profile.stacks import read_folded
from analysis.profile.truncation import truncation
from analysis.report import markdown as report_md

DATA = Path(__file__).parent / "data"
DEMO = DATA / "runs" / "mset-demo-small-v1"
IO = DATA / "runs" / "io-threads-mset"
UNWIND = DATA / "runs" / "valkey-p16-unwind-small"
WHOLE = {"redis-server": "__libc_start_call_main", "io_thd_1": "start_thread"}


def hand_share(path: Path, threads: tuple[str, ...] = ("redis-server", "io_thd_1")) -> float:
    total = bad = 0.0
    for line in path.read_text().splitlines():
        stack, w = line.rsplit(" ", 1)
        frames = stack.split(";")
        thread = frames[0].rsplit("-", 1)[0] if frames[0] not in WHOLE else frames[0]
        if thread not in threads:
            continue
        total += float(w)
        if len(frames) < 2 or frames[1] != WHOLE[thread]:
            bad += float(w)
    return 100 * bad / total


def test_share_per_profile_equals_the_folded_file():
    for v in ("base", "prefetch"):
        for rep in (4, 5, 6):
            f = DEMO / v / str(rep) / "perf.folded"
            assert truncation(read_folded(f)).share == pytest.approx(hand_share(f))
    # io-threads: start_thread is a whole stack's bottom frame too
    f = IO / "cand" / "4" / "perf.folded"
    assert truncation(read_folded(f)).share == pytest.approx(hand_share(f))
    assert hand_share(f, ("io_thd_1",)) < hand_share(f)     # mostly the main thread's


def test_the_jemalloc_frames_are_named():
    t = truncation(read_folded(DEMO / "base" / "4" / "perf.folded"))
    # `redis-server;[unknown];je_malloc_usable_size`: jemalloc without frame pointers
    assert next(iter(t.roots)) == "je_malloc_usable_size"
    hand = sum(float(l.rsplit(" ", 1)[1]) for l in
               (DEMO / "base" / "4" / "perf.folded").read_text().splitlines()
               if l.startswith("redis-server;[unknown];je_malloc_usable_size "))
    assert t.roots["je_malloc_usable_size"] == pytest.approx(hand)


def test_a_whole_profile_is_below_the_threshold():
    # recorded with the Debian build's own frame pointers: 2 of 1665 samples truncated
    t = truncation(read_folded(DATA / "profile" / "redis-main.inferno.folded"))
    assert t.share == pytest.approx(hand_share(DATA / "profile" / "redis-main.inferno.folded"))
    assert 0 < t.share < 0.2


def test_run_per_variant_with_spread_and_the_note():
    r = analyse(load_run(DEMO), CompareOptions())
    t = r.profile.truncated
    for v in ("base", "prefetch"):
        want = [hand_share(DEMO / v / str(rep) / "perf.folded") for rep in (4, 5, 6)]
        assert t.shares[v].values == pytest.approx(want)
        assert t.reps[v] == [4, 5, 6]
    worst = max(max(s.values) for s in t.shares.values())
    assert t.worst == pytest.approx(worst) and worst > 2.0 and t.exceeds
    assert t.callgraph == "fp"
    assert t.note.startswith(f"cumulative shares understated by up to {worst:.1f}%: ")
    assert "--call-graph dwarf" in t.note and "je_malloc_usable_size" in t.note
    md = report_md.render(r)
    cum = md.split("Share of samples, cumulative cost", 1)[1]
    assert md.index("CPU time per MSET (all threads):") < md.index("Share of samples, cumulative")
    assert cum.index("> ⚠️ Truncated stacks: cumulative shares understated by up to 3.7%") \
        < cum.index("Profiler overhead") < cum.index("### TMA")   # beside the cumulative table
    d = json.loads(r.dumps())["profile"]["truncated"]
    assert d["shares"]["base"]["median"] == pytest.approx(t.shares["base"].median)
    # the summary's cumulative item says it too
    item = next(i for i in r.summary if i.subject == "msetGenericCommand")
    assert "understated by up to 3.7% (truncated stacks)" in item.note


def test_below_the_threshold_no_note():
    run = load_run(IO)
    reps = profile_reps.load(run, ("base", "cand"))
    t = truncated_stacks(reps, "base", "cand", "io-threads", main_names(run))
    want = [hand_share(IO / "cand" / str(rep) / "perf.folded", ("io_thd_1",)) for rep in (4, 5, 6)]
    assert t.shares["cand"].values == pytest.approx(want)
    assert t.worst < 2.0 and not t.exceeds and t.note == ""


def folded_share(path: Path, thread: str, entries: set[str]) -> float:
    """% of one thread's weight in a folded file whose first function is not an entry."""
    total = bad = 0.0
    for line in path.read_text().splitlines():
        stack, w = line.rsplit(" ", 1)
        frames = [f for f in stack.split(";") if f != "[unknown]"]
        if frames[0] != thread:
            continue
        total += float(w)
        bad += float(w) * (len(frames) < 2 or frames[1] not in entries)
    return 100 * bad / total


def test_the_section_says_how_perf_unwound_and_why():
    """A recorded --call-graph auto run of the README's Valkey command: a/1's frame-pointer
    probe found the main thread's stacks cut (glibc's localtime_r), every profile rep
    unwound that thread with DWARF, and the section, the note and the report line say so
    with the probe's numbers (recomputed here from perf.probe.folded). The run predates the
    rule's lower bound (its probe records no confidence): the line claims none."""
    r = analyse(load_run(UNWIND), CompareOptions())
    t = r.profile.truncated
    assert t.thread == "main" and t.callgraph == "fp+dwarf" and t.dwarf_threads == ["valkey-server"]
    assert t.probe.rep == "a/1"
    probe = UNWIND / "a" / "1" / "perf.probe.folded"
    main = folded_share(probe, "valkey-server", {"__libc_start_call_main"})
    io = folded_share(probe, "io_thd_1", {"start_thread"})
    assert t.probe.threads["valkey-server"].truncated_pct == pytest.approx(main, abs=0.01)
    assert t.probe.threads["io_thd_1"].truncated_pct == pytest.approx(io, abs=0.01)
    assert main > 1.0 >= io
    assert t.unwind == ("call graph fp+dwarf: DWARF for valkey-server, frame pointers for the "
                        "other threads, because a 0.24 s frame-pointer probe at 999 Hz in a/1 "
                        f"found stacks truncated over 1% (valkey-server {main:.1f}%, starting in "
                        "__offtime, __tz_convert, __tzfile_compute)")
    # the profile reps' main thread, by hand: DWARF stacks start at _start, fp ones lower
    for v in ("a", "b"):
        want = [folded_share(UNWIND / v / str(n) / "perf.folded", "valkey-server",
                             {"_start", "__libc_start_call_main"}) for n in (1, 2, 3)]
        assert t.shares[v].values == pytest.approx(want)
    # one DWARF stack of a/1's 23 main-thread samples stopped short: over the 2% line, and
    # the fix names the DWARF thread instead of suggesting the DWARF it already had
    assert t.exceeds and t.worst == pytest.approx(100 / 23)
    assert "in valkey-server the DWARF unwinder stopped short too" in t.note
    assert t.unwind in t.note
    md = report_md.render(r)
    assert "call graph fp+dwarf: DWARF for valkey-server" in md


def test_a_probe_that_keeps_its_confidence_says_it():
    """The probe of a run since the lower-bound rule records its confidence, and the line
    names it; one recorded before claims none (above)."""
    from analysis.compare.results import TruncationSection
    from analysis.compare.truncated_reps import _unwind_text
    from analysis.inputs.collector_facts import ThreadProbe, UnwindProbe
    from collectors.profilers.perf.unwind import CONFIDENCE, SWITCH_PCT
    probe = UnwindProbe(rep="a/1", seconds=1.0, frequency_hz=999, switch_pct=SWITCH_PCT,
                        confidence=CONFIDENCE, threads={"redis-server": ThreadProbe(samples=993)})
    sec = TruncationSection(True, callgraph="fp", probe=probe)
    assert _unwind_text(sec) == ("call graph fp: a 1 s frame-pointer probe at 999 Hz in a/1 found no "
                                 "thread's stacks truncated over 1% with 95% confidence")
    sec.probe = UnwindProbe(**{**probe.__dict__, "confidence": None})
    assert _unwind_text(sec).endswith("found no thread's stacks truncated over 1%")
