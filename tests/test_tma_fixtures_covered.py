"""Every file under tests/data/fixtures/tma is read by the tests listed for it, and those
tests pass; the catalogue matches its source; SOURCES.md documents every fixture.

COVERED is checked by running the listed tests under tests/fixture_reads.py, which records
every fixture file each test opens: a listed test that does not read its fixture (or
fails) fails the check, and test_check_fails_on_a_broken_entry shows that it does.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import import_module

import pytest

from analysis.tma import catalog
from tests.conftest import FIXTURES, REPO
from tests.fixture_reads import ENV

TMA = FIXTURES / "tma"
SPR = catalog.load("spr")

# fixture path (relative to fixtures/tma) -> tests that read it and check its values/error
COVERED = {
    "SOURCES.md": ["test_tma_fixtures_covered.test_sources_md_documents_every_fixture"],
    "tma_tree_spr.txt": ["test_tma_fixtures_covered.test_catalogue_matches_tma_tree_spr"],
    "toplev/toplev_skl6700k_l1_core_C0_csv_issue369.csv": [
        "test_tma_parse.test_issue369_csv_flags_implausible_values",
        "test_funnel.test_implausible_values_excluded_with_warning"],
    "toplev/toplev_skx6140_l1_v_global_mux_issue370.txt": ["test_tma_parse.test_skx_issue370_mux_vs_nomux"],
    "toplev/toplev_skx6140_l1_v_global_nomux_issue370.txt": [
        "test_tma_parse.test_skx_issue370_mux_vs_nomux",
        "test_tma_parse.test_toplev_descriptions_cpu_prefix_intervals_and_warnings"],
    "toplev/toplev_spr8488c_l2_eytzinger_mux.txt": ["test_tma_parse.test_spr_eytzinger_mux",
                                                    "test_funnel.test_multiplexed_values_are_marked_as_estimates"],
    "toplev/toplev_spr8488c_l2_eytzinger_nomux_v.txt": ["test_tma_parse.test_spr_nomux_v_full_l2",
                                                        "test_funnel.test_one_run_per_side_spr_nomux_pair"],
    "toplev/toplev_spr8488c_l2_sorted_mux.txt": ["test_tma_parse.test_spr_sorted_mux_below_threshold_and_multiplex",
                                                 "test_tma_parse.test_toplev_truncated_line"],
    "toplev/toplev_spr8488c_l2_veb_nomux_v.txt": ["test_tma_parse.test_spr_nomux_v_full_l2",
                                                  "test_tma_parse.test_toplev_non_numeric_value"],
    "perf/perf6.13_M_TopdownL1_json_threshold.jsonl": ["test_tma_parse.test_perf613_json_threshold_and_trailing_comma"],
    "perf/perf6.13_interval_default_json_threshold.jsonl": ["test_tma_parse.test_perf613_json_threshold_and_trailing_comma"],
    "perf/perf6.4pre_M_TopdownL1_adl_hybrid.txt": ["test_tma_parse.test_perf64_adl_l1_l2_l4_event_interleaved"],
    "perf/perf6.4pre_M_TopdownL2_adl_hybrid.txt": ["test_tma_parse.test_perf64_adl_l1_l2_l4_event_interleaved"],
    "perf/perf6.4pre_M_TopdownL4_adl_hybrid_nothreshold_nogroup.txt": [
        "test_tma_parse.test_perf64_adl_l1_l2_l4_event_interleaved"],
    "perf/perf6.5_default_hybrid.csv": ["test_tma_parse.test_perf65_hybrid_csv_and_json"],
    "perf/perf6.5_default_hybrid.json": ["test_tma_parse.test_perf65_hybrid_csv_and_json"],
    "perf/perf6.5_default_hybrid_std.txt": ["test_tma_parse.test_perf65_default_hybrid_std_scopes_and_nan"],
    "perf/perf6.5_default_spr.csv": ["test_tma_parse.test_perf65_spr_csv_and_json",
                                     "test_tma_parse.test_perf_csv_bad_number"],
    "perf/perf6.5_default_spr.json": ["test_tma_parse.test_perf65_spr_csv_and_json",
                                      "test_tma_parse.test_json_line_cut_in_half"],
    "perf/perf6.5_default_spr_std.txt": ["test_tma_parse.test_perf65_default_spr_std",
                                         "test_tma_parse.test_perf_std_malformed_metric"],
    "perf/perf_stat_M_TopdownL1-L3_cometlake_runA.txt": ["test_tma_parse.test_cometlake_blocks_merge_into_one_tree",
                                                         "test_funnel.test_three_vs_three_identical_runs_cometlake"],
    "perf/perf_stat_M_TopdownL1-L3_cometlake_runB.txt": ["test_tma_parse.test_cometlake_blocks_merge_into_one_tree",
                                                         "test_funnel.test_three_vs_three_identical_runs_cometlake"],
    "perf/no_pmu_vm/M_TopdownL1_csv.rc": ["test_tma_parse.test_no_pmu_fallback_rc0"],
    "perf/no_pmu_vm/M_TopdownL1_csv.stderr": ["test_tma_parse.test_no_pmu_fallback_rc0"],
    "perf/no_pmu_vm/M_TopdownL1_csv.stdout": ["test_tma_parse.test_no_pmu_fallback_rc0"],
    "perf/no_pmu_vm/M_TopdownL1_json.rc": ["test_tma_parse.test_no_pmu_fallback_rc0"],
    "perf/no_pmu_vm/M_TopdownL1_json.stderr": ["test_tma_parse.test_no_pmu_fallback_rc0",
                                               "test_tma_parse.test_no_pmu_via_collector_api"],
    "perf/no_pmu_vm/M_TopdownL1_json.stdout": ["test_tma_parse.test_no_pmu_fallback_rc0"],
    "perf/no_pmu_vm/default_csv.out": ["test_tma_parse.test_no_pmu_default_events_o_file"],
    "perf/no_pmu_vm/default_csv.rc": ["test_tma_parse.test_no_pmu_default_events_o_file"],
    "perf/no_pmu_vm/default_json.out": ["test_tma_parse.test_no_pmu_default_events_o_file"],
    "perf/no_pmu_vm/default_json.rc": ["test_tma_parse.test_no_pmu_default_events_o_file"],
    "perf/no_pmu_vm/topdown.rc": ["test_tma_parse.test_no_pmu_topdown_rc234"],
    "perf/no_pmu_vm/topdown.stderr": ["test_tma_parse.test_no_pmu_topdown_rc234"],
    "perf/no_pmu_vm/topdown.stdout": ["test_tma_parse.test_no_pmu_topdown_rc234"],
    "perf/no_pmu_vm/perf6.1_list_details_cpu6-85.txt": [
        "test_tma_parse.test_perf_list_rejected",
        "test_tma_catalog.test_catalogue_perf_names_match_perf61_listing"],
}


# The AMD and Arm directories (issue #17): every recorded output is read by the test that
# parses each file of both directories (it fails for a file it does not list), each
# SOURCES.md by the provenance test, the definitions by the catalogue rebuild.
_VENDOR = "test_tma_vendors.test_every_vendor_fixture_is_handled"
for _d in ("amd", "arm"):
    for _p in sorted((TMA / _d).iterdir()) if (TMA / _d).is_dir() else []:
        if _p.name != "SOURCES.md":
            COVERED[f"{_d}/{_p.name}"] = [_VENDOR]
for _d in ("amd", "arm", "definitions"):
    COVERED[f"{_d}/SOURCES.md"] = ["test_tma_vendors.test_vendor_sources_name_every_file"]
for _p in sorted((TMA / "definitions").glob("*.json")) if (TMA / "definitions").is_dir() else []:
    COVERED[f"definitions/{_p.name}"] = (
        ["test_tma_vendors.test_perf_arm_metric_names_resolve"]
        if _p.name in ("linux_perf_arm64_neoverse-n1_metrics.json",
                       "linux_perf_arm64_neoverse-v1_metrics.json") else
        ["test_tma_vendors.test_catalogues_rebuild_from_the_published_definitions"])
AWAITING: dict[str, str] = {}


def _fixture_files() -> list[str]:
    return sorted(str(p.relative_to(TMA)) for p in TMA.rglob("*")
                  if p.is_file() and p.relative_to(TMA).parts[0] not in AWAITING)


def test_awaiting_fixtures_are_still_awaited(fixtures_dir):
    """Each exempt directory exists with its SOURCES.md, and no parser in COVERED reads it
    yet: once one does, its files belong in COVERED and the directory leaves AWAITING
    (empty since #17 covered amd/, arm/ and definitions/)."""
    assert not [f for f in COVERED if f.split("/", 1)[0] in AWAITING]
    for d in AWAITING:
        assert (TMA / d / "SOURCES.md").is_file(), d
        assert not [f for f in COVERED if f.split("/", 1)[0] == d], f"{d} is covered now: drop it from AWAITING"


def _missing_tests(covered: dict[str, list[str]]) -> list[str]:
    """Listed names that are no test function (a run cannot even start with them)."""
    out = []
    for f, tests in covered.items():
        for t in tests:
            mod, func = t.split(".")
            if not callable(getattr(import_module(f"tests.{mod}"), func, None)):
                out.append(f"{f}: test {t} does not exist")
    return out


def record(tests: set[str], out_dir) -> dict:
    """Run the given tests ("module.function") in a fresh pytest with tests/fixture_reads.py
    and return what it recorded: {"reads": {test: [fixtures]}, "outcomes": {test: ...}}."""
    out = out_dir / "fixture-reads.json"
    nodeids = [f"tests/{t.split('.')[0]}.py::{t.split('.')[1]}" for t in sorted(tests)]
    env = {**os.environ, ENV: str(out), "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.fixture_reads",
                           "-p", "no:cacheprovider", *nodeids],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    if not out.is_file():
        pytest.fail(f"the recorded run of {len(nodeids)} tests wrote no {out.name} "
                    f"(exit code {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    return json.loads(out.read_text())


def unchecked(covered: dict[str, list[str]], recorded: dict) -> list[str]:
    """Entries the recording disproves: a listed test that did not pass or did not open
    its fixture."""
    problems = []
    for f, tests in covered.items():
        for t in tests:
            outcome = recorded["outcomes"].get(t, "did not run")
            read = recorded["reads"].get(t, [])
            if outcome != "passed":
                problems.append(f"{f}: listed test {t} {outcome}")
            elif f not in read:
                problems.append(f"{f}: listed test {t} passed without opening it (it opened "
                                f"{', '.join(read) or 'no fixture'}); list a test that reads "
                                "and checks it, or write one")
    return problems


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, fixtures_dir) -> dict:
    return record({t for tests in COVERED.values() for t in tests}, tmp_path_factory.mktemp("reads"))


def test_every_fixture_has_a_test(fixtures_dir):
    files = _fixture_files()
    assert len(files) >= 36
    missing = [f for f in files if f not in COVERED]
    assert not missing, f"fixture files without a test (add one and list it in COVERED): {missing}"
    stale = [f for f in COVERED if f not in files]
    assert not stale, f"COVERED lists files that no longer exist: {stale}"
    assert not _missing_tests(COVERED)


@pytest.mark.heavy
def test_every_listed_test_reads_its_fixture(recorded):
    problems = unchecked(COVERED, recorded)
    assert not problems, "\n".join(problems)


def test_check_fails_on_a_broken_entry(recorded, tmp_path):
    """The check above can fail: a listed test that reads another file, one that does
    not exist, and one that reads the file but fails are each reported."""
    broken = {"perf/perf6.5_default_spr.csv": ["test_tma_parse.test_perf65_default_spr_std"]}
    assert unchecked(broken, recorded) == [
        "perf/perf6.5_default_spr.csv: listed test test_tma_parse.test_perf65_default_spr_std "
        "passed without opening it (it opened perf/perf6.5_default_spr_std.txt); list a test "
        "that reads and checks it, or write one"]
    assert _missing_tests({"x.txt": ["test_tma_parse.test_no_such_test"]}) == [
        "x.txt: test test_tma_parse.test_no_such_test does not exist"]
    failing = {"reads": {"m.t": ["x.txt"]}, "outcomes": {"m.t": "failed"}}
    assert unchecked({"x.txt": ["m.t"]}, failing) == ["x.txt: listed test m.t failed"]


def test_sources_md_documents_every_fixture(fixtures_dir):
    """Every fixture's provenance is in SOURCES.md (its name, without the last suffix, as
    the table rows write `M_TopdownL1_json.{stdout,stderr,rc}`)."""
    sources = (TMA / "SOURCES.md").read_text()
    # amd/, arm/ and definitions/ have a SOURCES.md of their own
    # (test_tma_vendors.test_vendor_sources_name_every_file).
    own = {d for d in ("amd", "arm", "definitions") if (TMA / d / "SOURCES.md").is_file()}
    undocumented = [f for f in _fixture_files() if f != "SOURCES.md" and f.split("/", 1)[0] not in own
                    and f.rsplit("/", 1)[-1].rsplit(".", 1)[0] not in sources]
    assert not undocumented, f"fixtures without a SOURCES.md entry: {undocumented}"


def test_catalogue_matches_tma_tree_spr(fixtures_dir):
    """catalogs/spr.tsv (generated from pmu-tools' model) holds the L1..L4 tree transcribed
    in tma_tree_spr.txt; re-read that transcription and compare."""
    text = (TMA / "tma_tree_spr.txt").read_text()
    section = text.split("Full L1..L4 tree from [T]", 1)[1]
    stack: list[str] = []
    seen = 0
    for line in section.splitlines():
        m = re.match(r'^( *)(\w+)\s+L(\d)\s+unit="% (\w+)"\s+area=(\S+)\s+thr\(v > ([\d.]+)\)\s+perf: (\w+)', line)
        if not m:
            continue
        indent, name, lvl, dom, area, thr, perf = m.groups()
        depth = len(indent) // 4
        del stack[depth:]
        stack.append(name)
        node = SPR[".".join(stack)]
        assert (node.level, node.domain, node.area, node.threshold, node.perf_name) == \
            (int(lvl), dom, area, float(thr), perf), name
        seen += 1
    # (the catalogue goes on below L4: pmu-tools' L5/L6 nodes, generated with the rest)
    assert seen == 85 == len([n for n in SPR.nodes.values() if n.threshold is not None
                              and n.level <= 4])
