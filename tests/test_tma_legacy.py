"""Older TMA names and toplev 3.x output (tests/data/tma/SOURCES.md): placed in the
current tree, said once; the scope note of a result whose rows come per core and per
thread; the slot-normalised view of a complete sibling set."""
from __future__ import annotations

from pathlib import Path

import pytest

from analysis.tma.catalog import legacy_current
from analysis.tma.formats import parse_file
from analysis.tma.funnel import compare
from analysis.report.funnel_md import render

DATA = Path(__file__).parent / "data" / "tma"
L2 = DATA / "toplev3_skl_l2_perf-book.txt"
L3 = DATA / "toplev3_skl_l3_perf-book.txt"


def test_toplev3_lines_and_old_names_read():
    r = parse_file(L2)
    got = {v.name: v.value for v in r.values}
    # the published numbers, under the TMA 5.x names
    assert got == {"Frontend_Bound": 13.92, "Bad_Speculation": 0.23, "Backend_Bound": 53.39,
                   "Retiring": 32.49, "Frontend_Bound.Fetch_Latency": 12.11,
                   "Frontend_Bound.Fetch_Bandwidth": 1.84,
                   "Bad_Speculation.Branch_Mispredicts": 0.22,
                   "Bad_Speculation.Machine_Clears": 0.01, "Backend_Bound.Memory_Bound": 44.59,
                   "Backend_Bound.Core_Bound": 8.8, "Retiring.Light_Operations": 24.83,
                   "Retiring.Heavy_Operations.Microcode_Sequencer": 7.65}
    raw = {v.raw_name for v in r.values}
    assert {"Retiring.Base", "Retiring.Microcode_Sequencer", "Frontend_Bound.FE_Latency"} <= raw
    assert all(v.known and v.scope == "S0-C0" and v.domain == "Slots" for v in r.values)
    assert [v.name for v in r.values if v.bottleneck] == ["Backend_Bound.Memory_Bound"]
    assert r.commands == ["~/pmu-tools/toplev.py --core S0-C0 -l2 -v --no-desc taskset -c 0 ./benchmark.exe"]
    moved = [w for w in r.warnings if w.startswith("older TMA names placed in the current tree")]
    assert len(moved) == 1 and "Retiring.Base → Retiring.Light_Operations" in moved[0]
    assert not any("not in the TMA catalogue" in w for w in r.warnings)


def test_the_rename_table_follows_pmu_tools_history():
    assert legacy_current("Retiring.Base") == "Retiring.Light_Operations"
    assert legacy_current("Retiring.Base.Other") == "Retiring.Light_Operations.Other_Light_Ops"
    assert legacy_current("Retiring.Base.FP_Arith.FP_Scalar") == "Retiring.Light_Operations.FP_Arith.FP_Scalar"
    assert legacy_current("Backend_Bound.Memory_Bound.MEM_Bound.MEM_Latency") == \
        "Backend_Bound.Memory_Bound.DRAM_Bound.MEM_Latency"
    assert legacy_current("BE_Bound.Mem_Bound.DRAM_Bound") == "Backend_Bound.Memory_Bound.DRAM_Bound"
    assert legacy_current("Backend_Bound.Memory_Bound") is None        # current names stay
    assert legacy_current("Retiring.Base_Extra") is None              # a prefix is a whole segment


def test_per_core_and_per_thread_rows_say_what_scope_auto_did():
    r = parse_file(L3)
    assert r.scopes() == ["S0-C0", "S0-C0-T0"] and r.default_scope() == "mean"
    f = compare([r], [r], depth=3)
    assert f"{L3}: each node from its only CPU scope, nothing averaged: S0-C0 (L1–L2); S0-C0-T0 (L3)" in f.notes
    # all five Memory_Bound children were printed (CXL_Mem_Bound does not exist on SKL):
    # DRAM_Bound gets 44.58 slots × 47.11 / (4.39 + 2.42 + 5.75 + 47.11 + 0.69)
    dram = next(x for x in f.all_rows if x.name == "Backend_Bound.Memory_Bound.DRAM_Bound")
    assert dram.base.slots_median == pytest.approx(44.58 * 47.11 / 60.36)
    assert not any("not slot-normalised" in n for n in f.notes)
    md = render(f.doc())
    assert md.count("older TMA names placed in the current tree") == 1     # said once
    assert "nothing averaged" in md


def test_a_missing_sibling_stops_normalisation_of_the_published_l3():
    # The same output without its L1_Bound row: the siblings' sum is unknown
    text = "".join(l for l in L3.read_text().splitlines(keepends=True) if "L1_Bound" not in l)
    from analysis.tma.formats import parse_output
    r = parse_output(text, source="no-L1_Bound")
    f = compare([r], [r], depth=3)
    dram = next(x for x in f.all_rows if x.name == "Backend_Bound.Memory_Bound.DRAM_Bound")
    assert dram.base.slots_median is None
    assert any("L2_Bound, L3_Bound, DRAM_Bound, Store_Bound not slot-normalised: L1_Bound "
               "(under Memory_Bound) not measured" in n for n in f.notes)
