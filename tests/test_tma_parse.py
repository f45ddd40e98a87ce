"""Every real TMA fixture parses to the values it holds, or is rejected precisely."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from analysis.tma.model import NoPmuError, TmaParseError
from analysis.tma.formats import detect_format, parse_file, parse_output
from tests.conftest import FIXTURES, REPO

TMA = FIXTURES / "tma"
TL = TMA / "toplev"
PF = TMA / "perf"
NP = PF / "no_pmu_vm"

MEM = "Backend_Bound.Memory_Bound"


def node(res, name, scope="auto"):
    return res.collapse(scope)[name]


# ------------------------------------------------------------------ toplev human
def test_spr_sorted_mux_below_threshold_and_multiplex():
    r = parse_file(TL / "toplev_spr8488c_l2_sorted_mux.txt")
    assert r.fmt == "toplev"
    assert r.tool_version == "5.01-full-perf"
    assert r.cpu_name == "Intel(R) Xeon(R) Platinum 8488C [spr/sapphire_rapids]"
    be = node(r, "Backend_Bound")
    assert be.value == 15.0 and be.below_threshold is True and be.multiplex == 33.0
    assert be.domain == "Slots" and be.level == 1
    fl = node(r, "Frontend_Bound.Fetch_Latency")
    assert fl.value == 17.7 and fl.bottleneck and fl.level == 2
    assert node(r, "Bad_Speculation.Branch_Mispredicts").value == 31.1
    assert len(r.values) == 6


def test_spr_eytzinger_mux():
    r = parse_file(TL / "toplev_spr8488c_l2_eytzinger_mux.txt")
    assert node(r, "Retiring.Light_Operations").value == 21.3
    assert node(r, "Retiring").below_threshold is True
    assert node(r, "Backend_Bound.Core_Bound").value == 13.2
    assert all(v.multiplex == 33.0 for v in r.values) and len(r.values) == 8


@pytest.mark.parametrize("fname,mem,core,be", [
    ("toplev_spr8488c_l2_veb_nomux_v.txt", 21.8, 15.6, 37.4),
    ("toplev_spr8488c_l2_eytzinger_nomux_v.txt", 11.0, 17.8, 28.9),
])
def test_spr_nomux_v_full_l2(fname, mem, core, be):
    r = parse_file(TL / fname)
    flat = r.collapse()
    assert len(flat) == 12
    assert flat[MEM].value == mem and flat["Backend_Bound.Core_Bound"].value == core
    assert flat["Backend_Bound"].value == be
    assert all(n.multiplex is None and n.below_threshold is False for n in flat.values())
    # line 1 is the author's comment, not a toplev version line
    assert r.tool_version is None and any("toplev.py -l2" in c for c in r.commands)


def test_skx_issue370_mux_vs_nomux():
    mux = parse_file(TL / "toplev_skx6140_l1_v_global_mux_issue370.txt")
    nomux = parse_file(TL / "toplev_skx6140_l1_v_global_nomux_issue370.txt")
    assert mux.tool_version == "4.1-full-perf" and "Gold 6140" in mux.cpu_name
    assert mux.overall_multiplex == 33.3 and node(mux, "Backend_Bound").multiplex == 33.3
    assert node(mux, "Backend_Bound").value == 53.8 and node(mux, "Backend_Bound").bottleneck
    assert node(mux, "Frontend_Bound").value == 32.9 and node(mux, "Frontend_Bound").below_threshold
    assert node(nomux, "Frontend_Bound").value == 61.7 and node(nomux, "Frontend_Bound").bottleneck
    assert not node(nomux, "Frontend_Bound").multiplexed and node(nomux, "Retiring").value == 10.5


def test_toplev_descriptions_cpu_prefix_intervals_and_warnings():
    # toplev without --no-desc, per-thread CPU prefixes, interval timestamps, stray text:
    # built from the real issue370 rows with toplev's documented decorations.
    rows = (TL / "toplev_skx6140_l1_v_global_nomux_issue370.txt").read_text().splitlines()
    text = [rows[0], "warning: 1 nodes had no counters", ""]
    for ts in ("1.001088024", "2.002176048"):
        for cpu in ("S0-C0-T0", "S0-C1-T0"):
            for row in rows[1:5]:
                text.append(f"{ts} {cpu:<9}{row}")
                text.append("\tThis category represents fraction of slots ...")
                text.append("\tSampling events:  frontend_retired.latency_ge_4:pp")
    r = parse_output("\n".join(text) + "\n", source="synthetic")
    assert r.scopes() == ["S0-C0-T0", "S0-C1-T0"] and r.intervals() == [1.001088024, 2.002176048]
    assert len(r.values) == 16
    assert r.collapse("S0-C0-T0")["Frontend_Bound"].value == 61.7
    assert r.collapse("mean")["Backend_Bound"].samples == 4
    assert any("warning: 1 nodes" in n for n in r.notes)
    with pytest.raises(KeyError, match="CPU3"):
        r.collapse("CPU3")


# ------------------------------------------------------------------ toplev CSV
def test_issue369_csv_flags_implausible_values():
    r = parse_file(TL / "toplev_skl6700k_l1_core_C0_csv_issue369.csv")
    assert r.fmt == "toplev-csv" and r.tool_version == "4.11-full-perf"
    assert r.scopes() == ["C0"]
    be = node(r, "Backend_Bound")
    assert be.implausible and "-13254.6 % Slots is outside the possible range" in be.implausible
    assert be.below_threshold is True and be.value is None   # excluded from the collapsed value
    raw = [v for v in r.values if v.name == "Backend_Bound"][0]
    assert raw.value == -13254.6 and raw.line == 4
    assert node(r, "Bad_Speculation").bottleneck
    assert node(r, "Frontend_Bound").value == 53.9 and node(r, "Retiring").value == 27.3
    assert sum("outside the possible range" in w for w in r.warnings) == 2
    assert r.overall_multiplex == 100.0
    assert any("Run toplev --describe" in n for n in r.notes)
    assert any("Add --nodes" in n for n in r.notes)


def test_toplev_headerless_interval_csv_pmu_tools_examples():
    # the row examples from pmu-tools tldata.py and csv_formats.py
    text = ("1.001088024,C1,Frontend_Bound,42.9,% Slots,,frontend_retired.latency_ge_4:pp,0.0,100.0,<==,Y\n"
            "1.001131873,S0,Backend_Bound.Memory_Bound,13.3,% Slots <,,,0.0,3.0,,\n")
    r = parse_output(text, source="pmu-tools-examples")
    assert r.fmt == "toplev-csv"
    fe, mem = r.values
    assert (fe.interval, fe.scope, fe.value, fe.bottleneck, fe.multiplex) == (1.001088024, "C1", 42.9, True, 100.0)
    assert (mem.name, mem.scope, mem.value, mem.below_threshold, mem.multiplex) == (MEM, "S0", 13.3, True, 3.0)
    assert mem.multiplexed and mem.level == 2


# ------------------------------------------------------------------ perf standard
def test_perf65_default_spr_std():
    r = parse_file(PF / "perf6.5_default_spr_std.txt")
    assert r.fmt == "perf"
    assert node(r, "Backend_Bound").value == 68.7 and node(r, MEM).value == 49.1
    assert node(r, MEM).domain == "Slots" and len(r.values) == 12


def test_perf65_default_hybrid_std_scopes_and_nan():
    r = parse_file(PF / "perf6.5_default_hybrid_std.txt")
    assert r.scopes() == ["cpu_atom", "cpu_core"]
    core = r.collapse("cpu_core")
    assert core["Backend_Bound"].value is None and core["Bad_Speculation"].value == 0.0
    atom = r.collapse("cpu_atom")
    assert atom["Frontend_Bound"].value == 41.1 and atom["Frontend_Bound"].multiplex == 63.54
    assert atom["Bad_Speculation"].multiplex == 63.36
    assert [v.raw_name for v in r.unknown()] == ["tma_backend_bound_aux"]
    assert not r.unknown()[0].in_tree and r.unknown()[0].value == 39.2


def test_perf64_adl_l1_l2_l4_event_interleaved():
    l1 = parse_file(PF / "perf6.4pre_M_TopdownL1_adl_hybrid.txt")
    assert l1.collapse("cpu_core")["Frontend_Bound"].value == 54.1
    assert l1.collapse("cpu_atom")["Bad_Speculation"].value == 26.6
    assert any("perf stat -M TopdownL1" in c for c in l1.commands)
    l2 = parse_file(PF / "perf6.4pre_M_TopdownL2_adl_hybrid.txt")
    assert l2.collapse("cpu_core")[MEM].value == 10.8
    atom = l2.collapse("cpu_atom")
    assert atom[MEM].value == 32.2 and atom[MEM].multiplex == 45.77   # "(45.77%)" on the next line
    assert {v.raw_name for v in l2.unknown()} == {"tma_base", "tma_ms_uops", "tma_resource_bound"}
    l4 = parse_file(PF / "perf6.4pre_M_TopdownL4_adl_hybrid_nothreshold_nogroup.txt")
    core = l4.collapse("cpu_core")
    lat = core[MEM + ".DRAM_Bound.MEM_Latency"]
    assert lat.value == 33.3 and lat.multiplex == 10.52 and lat.domain == "Clocks" and lat.level == 4
    assert core[MEM + ".DRAM_Bound.MEM_Bandwidth"].value == 14.5
    # metrics printed on duration_time belong to the P-core model on hybrids
    assert core[MEM + ".L3_Bound.L3_Hit_Latency"].value == 40.2
    # The E-core's metrics are mostly atom-only names, kept outside the tree; its one name
    # that is also a P-core name (tma_store_fwd_blk) lands in the tree under cpu_atom.
    atom = l4.collapse("cpu_atom")
    assert list(atom) == [MEM + ".L1_Bound.Store_Fwd_Blk"]
    assert (atom[MEM + ".L1_Bound.Store_Fwd_Blk"].value, atom[MEM + ".L1_Bound.Store_Fwd_Blk"].multiplex) == (0.0, 36.16)
    unknown = l4.unknown()
    assert {v.raw_name for v in unknown} == {
        "tma_disambiguation", "tma_fp_assist", "tma_ld_buffer", "tma_memory_ordering", "tma_other_l1",
        "tma_page_fault", "tma_rsv", "tma_smc", "tma_st_buffer", "tma_stlb_hit", "tma_stlb_miss"}
    assert {v.scope for v in unknown} == {"cpu_atom"}
    assert next(v for v in unknown if v.raw_name == "tma_stlb_miss").value == 3.1
    # ADL's tma_shuffles is SPR's Shuffles_256b
    assert core["Retiring.Light_Operations.Other_Light_Ops.Shuffles_256b"].value == 0.0


def test_cometlake_blocks_merge_into_one_tree():
    a = parse_file(PF / "perf_stat_M_TopdownL1-L3_cometlake_runA.txt")
    flat = a.collapse()
    assert flat[MEM + ".DRAM_Bound"].value == 47.0 and flat[MEM + ".DRAM_Bound"].domain == "Stalls"
    assert flat["Backend_Bound"].value == 81.3 and flat[MEM].value == 73.4
    assert flat["Bad_Speculation.Branch_Mispredicts"].value == -0.7
    assert flat[MEM + ".L3_Bound"].value == 10.1 and len(a.commands) == 3
    b = parse_file(PF / "perf_stat_M_TopdownL1-L3_cometlake_runB.txt")
    fb = b.collapse()
    assert fb[MEM + ".DRAM_Bound"].value == 34.0 and fb[MEM + ".L1_Bound"].value == 2.2
    assert fb["Retiring.Light_Operations"].multiplex == 29.19
    assert fb["Retiring.Heavy_Operations"].multiplex == 29.19
    assert fb["Retiring"].multiplex is None


# ------------------------------------------------------------------ perf CSV / JSON
def test_perf65_spr_csv_and_json():
    c = parse_file(PF / "perf6.5_default_spr.csv")
    assert c.fmt == "perf-csv" and node(c, "Backend_Bound").value == 70.1 and node(c, MEM).value == 50.5
    j = parse_file(PF / "perf6.5_default_spr.json")
    assert j.fmt == "perf-json"
    m = node(j, MEM)
    assert m.value == 50.220860 and m.level == 2 and m.domain == "Slots"
    assert [v for v in j.values if v.name == MEM][0].raw_name == "tma_memory_bound"


def test_perf65_hybrid_csv_and_json():
    c = parse_file(PF / "perf6.5_default_hybrid.csv")
    core, atom = c.collapse("cpu_core"), c.collapse("cpu_atom")
    assert core["Backend_Bound"].value is None and core["Bad_Speculation"].value == 0.0
    assert atom["Frontend_Bound"].value == 41.3 and atom["Frontend_Bound"].multiplex == 63.0
    assert atom["Bad_Speculation"].multiplex == 63.0 and atom["Retiring"].multiplex == 64.0
    j = parse_file(PF / "perf6.5_default_hybrid.json")
    ja = j.collapse("cpu_atom")
    assert ja["Backend_Bound"].value == 39.327764 and ja["Retiring"].multiplex == 64.0
    assert j.collapse("cpu_core")["Retiring"].value is None


def test_perf613_json_threshold_and_trailing_comma():
    r = parse_file(PF / "perf6.13_M_TopdownL1_json_threshold.jsonl")
    be = [v for v in r.values if v.name == "Backend_Bound"][0]
    assert be.value == 43.226002 and be.perf_threshold == "bad" and be.multiplex == 100.0
    assert [v for v in r.values if v.name == "Retiring"][0].perf_threshold == "good"
    i = parse_file(PF / "perf6.13_interval_default_json_threshold.jsonl")
    assert i.intervals() == [1.001089747]
    assert node(i, "Frontend_Bound").value == 36.729687
    assert [v for v in i.values if v.name == "Retiring"][0].perf_threshold is None


# ------------------------------------------------------------------ no PMU, perf list
@pytest.mark.parametrize("fname", ["M_TopdownL1_json.stdout", "M_TopdownL1_json.stderr",
                                   "M_TopdownL1_csv.stdout", "M_TopdownL1_csv.stderr",
                                   "M_TopdownL1_json.rc", "M_TopdownL1_csv.rc"])
def test_no_pmu_fallback_rc0(fname):
    with pytest.raises(NoPmuError) as e:
        parse_file(NP / fname)
    msg = str(e.value)
    assert "Cannot find PMU `CPU_CLK_UNHALTED.REF_XCLK'" in msg and "exit code 0" in msg
    assert "TMA needs a hardware PMU" in msg and "perf stat -e cycles true" in msg


def test_no_pmu_via_collector_api():
    stderr = (NP / "M_TopdownL1_json.stderr").read_text()
    with pytest.raises(NoPmuError, match="silently fell back"):
        parse_output("", stderr, 0, source="rep1/tma.json")


@pytest.mark.parametrize("fname", ["default_json.out", "default_csv.out", "default_json.rc", "default_csv.rc"])
def test_no_pmu_default_events_o_file(fname):
    with pytest.raises(NoPmuError, match="'<not supported>' for the hardware counter 'cycles'"):
        parse_file(NP / fname)


@pytest.mark.parametrize("fname", ["topdown.stdout", "topdown.stderr", "topdown.rc"])
def test_no_pmu_topdown_rc234(fname):
    with pytest.raises(NoPmuError) as e:
        parse_file(NP / fname)
    assert "requires system-wide mode (-a)" in str(e.value) and "exit code 234" in str(e.value)


def test_perf_list_rejected():
    with pytest.raises(TmaParseError, match="`perf list` output, not `perf stat`") as e:
        parse_file(NP / "perf6.1_list_details_cpu6-85.txt")
    assert not isinstance(e.value, NoPmuError)


# ------------------------------------------------------------------ malformed input
def test_json_line_cut_in_half(tmp_path):
    lines = (PF / "perf6.5_default_spr.json").read_text().splitlines()
    lines[-1] = lines[-1][: len(lines[-1]) // 2]
    p = tmp_path / "cut.json"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(TmaParseError, match=rf"cut.json:{len(lines)}: invalid JSON"):
        parse_file(p)


def test_toplev_non_numeric_value(tmp_path):
    text = (TL / "toplev_spr8488c_l2_veb_nomux_v.txt").read_text().replace("37.4", "3x.4")
    p = tmp_path / "bad.txt"
    p.write_text(text)
    with pytest.raises(TmaParseError, match=r"bad.txt:4: Backend_Bound: value '3x.4' is not a number"):
        parse_file(p)


def test_toplev_truncated_line(tmp_path):
    lines = (TL / "toplev_spr8488c_l2_sorted_mux.txt").read_text().splitlines()
    p = tmp_path / "trunc.txt"
    p.write_text("\n".join(lines[:-1] + [lines[-1][:40]]) + "\n")
    with pytest.raises(TmaParseError, match=r"trunc.txt:7: truncated or malformed toplev node line"):
        parse_file(p)


def test_toplev_csv_truncated_row(tmp_path):
    lines = (TL / "toplev_skl6700k_l1_core_C0_csv_issue369.csv").read_text().splitlines()
    lines[1] = lines[1][:20]   # "C0,Frontend_Bound,53"
    p = tmp_path / "t.csv"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(TmaParseError, match=r"t.csv:2: truncated CSV row"):
        parse_file(p)


def test_perf_std_malformed_metric(tmp_path):
    text = (PF / "perf6.5_default_spr_std.txt").read_text().replace("#     49.1 %  tma_memory_bound",
                                                                     "#     49.1 tma_memory_bound")
    p = tmp_path / "m.txt"
    p.write_text(text)
    with pytest.raises(TmaParseError, match=r"m.txt:\d+: malformed tma_ metric"):
        parse_file(p)


def test_perf_csv_bad_number(tmp_path):
    text = (PF / "perf6.5_default_spr.csv").read_text().replace(",70.1,", ",7O.1,")
    p = tmp_path / "n.csv"
    p.write_text(text)
    with pytest.raises(TmaParseError, match=r"n.csv:10: tma_backend_bound: '7O.1' is not a number"):
        parse_file(p)


def test_unrecognised_and_empty(tmp_path):
    p = tmp_path / "x.txt"
    p.write_text("hello world\n")
    with pytest.raises(TmaParseError, match="unrecognised format"):
        parse_file(p)
    with pytest.raises(TmaParseError, match="empty output"):
        parse_output("", "", 0)
    with pytest.raises(TmaParseError, match="no such file"):
        parse_file(tmp_path / "missing.txt")


def test_format_override_and_detection():
    text = (TL / "toplev_spr8488c_l2_sorted_mux.txt").read_text()
    assert detect_format(text) == "toplev"
    with pytest.raises(TmaParseError):
        parse_output(text, fmt="perf-json")   # forced wrong format: no JSON objects
    assert parse_output(text, fmt="toplev").values


def test_tma_cli_prints_tree_and_errors(tmp_path):
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "analysis", "tma",
                          str(PF / "perf_stat_M_TopdownL1-L3_cometlake_runA.txt")],
                         capture_output=True, text=True, env=env, cwd=REPO)
    assert out.returncode == 0
    assert re.search(r"^    DRAM_Bound\s+% Stalls\s+47.0%", out.stdout, re.M)
    bad = subprocess.run([sys.executable, "-m", "analysis", "tma", str(NP / "topdown.stdout")],
                         capture_output=True, text=True, env=env, cwd=REPO)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "hardware PMU" in bad.stderr
