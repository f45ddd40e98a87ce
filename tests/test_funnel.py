"""The TMA funnel on real fixture outputs: values, statistics, table shape, CLI."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from analysis.report import funnel_md
from analysis.tma.funnel import SCHEMA, compare
from analysis.tma.formats import parse_file
from tests.conftest import FIXTURES, REPO

TL = FIXTURES / "tma" / "toplev"
PF = FIXTURES / "tma" / "perf"
VEB = TL / "toplev_spr8488c_l2_veb_nomux_v.txt"
EYTZ = TL / "toplev_spr8488c_l2_eytzinger_nomux_v.txt"
SORTED_MUX = TL / "toplev_spr8488c_l2_sorted_mux.txt"
EYTZ_MUX = TL / "toplev_spr8488c_l2_eytzinger_mux.txt"
SKX_MUX = TL / "toplev_skx6140_l1_v_global_mux_issue370.txt"
SKX_NOMUX = TL / "toplev_skx6140_l1_v_global_nomux_issue370.txt"
RUN_A = PF / "perf_stat_M_TopdownL1-L3_cometlake_runA.txt"
RUN_B = PF / "perf_stat_M_TopdownL1-L3_cometlake_runB.txt"
DRAM = "Backend_Bound.Memory_Bound.DRAM_Bound"


def rows(f):
    return {r.name: r for r in f.all_rows}


def md_of(f):
    """The funnel as report.md and the funnel command print it: rendered from its data."""
    return funnel_md.render(f.doc())


def test_one_run_per_side_spr_nomux_pair():
    f = compare([parse_file(VEB)], [parse_file(EYTZ)], base_label="vEB", cand_label="Eytzinger")
    r = rows(f)
    be, mem = r["Backend_Bound"], r["Backend_Bound.Memory_Bound"]
    assert (be.base.median, be.cand.median) == (37.4, 28.9)
    assert round(be.delta, 1) == -8.5 and round(mem.delta, 1) == -10.8
    assert be.verdict == "n/a (1 run per side)" and be.ci is None
    md = md_of(f)
    assert "| TMA Metric | Domain | vEB (n=1) | Eytzinger (n=1) | Δ | Slots Δ |" in md
    assert "| Backend_Bound | % Slots | 37.4% | 28.9% | −8.5 pp |" in md
    assert "| └ Memory_Bound | % Slots | 21.8% | 11.0% | −10.8 pp |" in md
    assert "No confidence can be given: 1 run per side." in md
    # default selection: L1 + memory path + notable moves; Machine_Clears (0.0 -> 0.0) is left out
    assert "Machine_Clears" not in md and "Heavy_Operations" not in md
    assert "Memory_Bound fell and Core_Bound rose: stalls moved from waiting on memory" in md
    assert "(not established: too few runs for a confidence interval)" in md


def test_multiplexed_values_are_marked_as_estimates():
    f = compare([parse_file(SORTED_MUX)], [parse_file(EYTZ_MUX)])
    md = md_of(f)
    assert "| Backend_Bound | % Slots | ~15.0%† | ~22.0%† | +7.0 pp |" in md
    assert "† counters multiplexed: ran baseline as little as 33% and candidate as little as 33% of the time" in md
    j = f.to_json()
    be = next(x for x in j["rows"] if x["node"] == "Backend_Bound")
    assert be["base"]["estimate"] is True and be["base"]["multiplex"] == 33.0


def test_three_vs_three_identical_runs_cometlake():
    """One output copied three times a side holds no spread: no interval and no verdict
    (issue 26 item 3: a zero-width "95%" interval with p = 0 called it "improvement")."""
    a, b = parse_file(RUN_A), parse_file(RUN_B)
    f = compare([a, a, a], [b, b, b], depth=3)
    r = rows(f)
    dram = r[DRAM]
    assert dram.ci == (None, None) and dram.delta == pytest.approx(-13.0)
    assert dram.verdict == "insufficient data" and not dram.significant
    assert "no spread" in dram.reason
    assert r["Retiring"].direction == "up" and r["Backend_Bound.Core_Bound"].direction == "up"
    assert all(x.verdict in ("insufficient data", "n/a") or x.verdict.startswith("n/a")
               for x in f.all_rows), [(x.name, x.verdict) for x in f.all_rows]
    # This output lists tma_l2_bound, tma_l3_bound, tma_dram_bound and tma_store_bound but
    # no tma_l1_bound: the siblings' sum is unknown, so DRAM_Bound gets no slot share (it
    # would have been 73.4 * 47.0 / (1.4 + 10.1 + 47.0 + 0.3) = 58.67 slots, L1 left out),
    # and the funnel says why, once for all six files.
    # (run B, with the full event lists, has tma_l1_bound: its side is normalised)
    assert dram.base.slots_median is None and dram.slots_delta is None
    assert dram.cand.slots_median == pytest.approx(b.collapse()["Backend_Bound.Memory_Bound"].value
                                                   * 34.0 / sum(b.collapse()[f"Backend_Bound.Memory_Bound.{x}"].value
                                                                for x in ("L1_Bound", "L2_Bound", "L3_Bound", "DRAM_Bound", "Store_Bound")))
    md = md_of(f)
    assert "| &nbsp;&nbsp;└ DRAM_Bound | % Stalls | 47.0% (47.0–47.0) | 34.0% (34.0–34.0) | −13.0 pp |" in md
    assert "58.7 → 30.6" not in md
    # said once (the file is given three times), for all four rows it concerns
    note = [n for n in f.notes if "not slot-normalised" in n and "L1_Bound" in n]
    assert note == [f"{RUN_A}: L2_Bound, L3_Bound, DRAM_Bound, Store_Bound not slot-normalised: "
                    "L1_Bound (under Memory_Bound) not measured, so the siblings' sum is unknown "
                    "(toplev prints only the nodes it flags unless given -v; perf stat -M "
                    "TopdownL<n> prints every node of that level)"]
    assert md.count("DRAM_Bound, Store_Bound not slot-normalised") == 1
    assert "CI (95%)" in md and "Welch t-interval" not in md     # no row has an interval
    assert "(not established: no interval: each side's values are all the same" in md


def test_three_vs_three_mixed_real_values_ci_contains_true_difference():
    # Backend_Bound from six real toplev outputs. By hand: base {37.4, 15.0, 20.0} median
    # 20.0; cand {28.9, 22.0, 53.8} median 28.9; difference of medians 8.9 pp. The nine
    # pairwise differences run from 22.0-37.4 = -15.4 to 53.8-15.0 = 38.8.
    # (The SKX runs read in SPR's tree, as the SPR ones: the test is about the statistics on
    # real values; a funnel refuses two CPU models' trees, test_tma_vendors.)
    base = [parse_file(p, catalog="spr") for p in (VEB, SORTED_MUX, SKX_NOMUX)]
    cand = [parse_file(p, catalog="spr") for p in (EYTZ, EYTZ_MUX, SKX_MUX)]
    for method in ("hl", "bootstrap"):
        f = compare(base, cand, depth=1, method=method)
        be = rows(f)["Backend_Bound"]
        assert be.base.values == [37.4, 15.0, 20.0] and be.cand.values == [28.9, 22.0, 53.8]
        assert be.delta == pytest.approx(8.9)
        lo, hi = be.ci
        assert lo <= 8.9 <= hi
        assert -15.4 - 1e-9 <= lo and hi <= 38.8 + 1e-9
        assert be.verdict in ("unstable", "no change")
        assert be.base.mad == pytest.approx(5.0)        # |15-20|, 0, |37.4-20| -> median 5.0
    hl = rows(compare(base, cand, depth=1, method="hl"))["Backend_Bound"]
    assert hl.ci == (pytest.approx(-15.4), pytest.approx(38.8)) and hl.verdict == "unstable"
    assert hl.confidence == pytest.approx(0.9)        # the best a 3+3 rank interval can do
    # The default reaches 95% with a Welch t-interval; checked against scipy's own Welch test.
    from scipy.stats import ttest_ind
    want = ttest_ind(be.cand.values, be.base.values, equal_var=False).confidence_interval(0.95)
    auto = rows(compare(base, cand, depth=1))["Backend_Bound"]
    assert auto.ci == (pytest.approx(want.low), pytest.approx(want.high))
    assert auto.confidence == 0.95 and auto.verdict == "unstable"


def test_depth_and_node_selection():
    a, b = parse_file(RUN_A), parse_file(RUN_B)
    f1 = compare([a], [b], depth=1)
    assert {r.level for r in f1.rows} == {1}
    f = compare([a], [b], nodes=["DRAM_Bound"])
    assert [r.name for r in f.rows] == ["Backend_Bound", "Backend_Bound.Memory_Bound", DRAM]
    fa = compare([a], [b], nodes=["all"])
    assert len(fa.rows) == len(fa.all_rows) == 22   # 20 nodes in runA + L1_Bound, Divider in runB
    fg = compare([a], [b], nodes=["tma_l*_bound"])
    assert {r.leaf for r in fg.rows} == {"Backend_Bound", "Memory_Bound", "L1_Bound", "L2_Bound", "L3_Bound"}


def test_implausible_values_excluded_with_warning():
    bad = parse_file(TL / "toplev_skl6700k_l1_core_C0_csv_issue369.csv")
    # The Skylake client CSV names no CPU model and is read in the default (SPR's) tree;
    # the Skylake-SP run is read in the same one for the comparison.
    f = compare([bad], [parse_file(SKX_NOMUX, catalog="spr")])
    be = rows(f)["Backend_Bound"]
    assert be.base.n == 0 and "-13254.6" in be.base.excluded[0]
    assert be.verdict == "n/a" and be.reason == "not measured in the baseline runs"
    assert rows(f)["Frontend_Bound"].delta == pytest.approx(61.7 - 53.9)
    assert any("outside the possible range" in w for w in f.warnings)
    assert "**Warnings**" in md_of(f)


def test_json_output():
    j = compare([parse_file(RUN_A)] * 3, [parse_file(RUN_B)] * 3).to_json()
    assert j["schema"] == SCHEMA and j["runs"] == {"base": 3, "cand": 3}
    dram = next(x for x in j["rows"] if x["node"] == DRAM)
    assert dram["domain"] == "Stalls" and dram["unit"] == "% Stalls"
    assert dram["delta_pp"] == pytest.approx(-13.0) and dram["verdict"] == "insufficient data"
    assert dram["base"]["values"] == [47.0, 47.0, 47.0]
    json.dumps(j)   # serialisable


def _run(args, **kw):
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=REPO, **kw)


def test_make_funnel_target():
    out = _run(["make", "-s", "funnel", f"BASE={VEB}", f"CAND={EYTZ}"])
    assert out.returncode == 0, out.stderr
    assert "| Backend_Bound | % Slots | 37.4% | 28.9% | −8.5 pp |" in out.stdout


@pytest.mark.heavy
def test_cli_json_labels_and_errors(tmp_path):
    jf = tmp_path / "f.json"
    out = _run([sys.executable, "-m", "analysis", "funnel", str(RUN_A), "--vs", str(RUN_B),
                "--labels", "unstable,PR", "--json", str(jf), "--depth", "2"])
    assert out.returncode == 0, out.stderr
    assert "| TMA Metric | Domain | unstable (n=1) | PR (n=1) |" in out.stdout
    assert json.loads(jf.read_text())["cand_label"] == "PR"
    js = _run([sys.executable, "-m", "analysis", "funnel", str(RUN_A), "--vs", str(RUN_B), "--format", "json"])
    assert json.loads(js.stdout)["schema"] == SCHEMA
    bad = tmp_path / "bad.txt"
    bad.write_text(VEB.read_text().replace("21.8", "2?.8"))
    err = _run([sys.executable, "-m", "analysis", "funnel", str(bad), "--vs", str(EYTZ)])
    assert err.returncode == 2 and f"{bad}:10:" in err.stderr and "Traceback" not in err.stderr
    nopmu = _run([sys.executable, "-m", "analysis", "funnel", str(PF / "no_pmu_vm" / "default_json.out"),
                  "--vs", str(EYTZ)])
    assert nopmu.returncode == 2 and "TMA needs a hardware PMU" in nopmu.stderr
    h = _run([sys.executable, "-m", "analysis", "funnel", "--help"])
    assert h.returncode == 0 and "--vs" in h.stdout and "examples:" in h.stdout
