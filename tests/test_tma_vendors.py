"""AMD Zen pipeline utilization and Arm Neoverse top-down beside Intel TMA (issue #17).

Every file in tests/data/fixtures/tma/amd and /arm (REAL outputs recorded by others, see
their SOURCES.md) parses to a tree or to a clear error naming the file; sampled values per
format; the catalogues rebuild from the published definitions; funnels compare runs of
one vendor and refuse two; a replayed AMD and Arm rep lands in a report's TMA section and
summary. Where a test changes a recorded text (a locale's separators, perf's -I column,
perf's CSV/JSON layout) it says how, and every number stays the recording's.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.tma import catalog
from analysis.tma.catalog_build import build
from analysis.tma.formats import parse_file
from analysis.tma.funnel import IncompatibleTrees, compare
from analysis.tma.funnel_doc import FunnelDoc
from analysis.tma.model import TmaParseError
from analysis.tma.slots import slot_view
from tests.conftest import FIXTURES, REPO

TMA = FIXTURES / "tma"
AMD = TMA / "amd"
ARM = TMA / "arm"
DEFS = TMA / "definitions"
MEM = "backend_bound.backend_bound_memory"

# Every fixture file -> the catalogue its tree lands in, or the words of its error. A file
# added to the directories later fails test_every_vendor_fixture_is_handled until listed.
ERRORS = {
    "amd_epyc9254_rusttcp_forking.txt": "echo 0 > /proc/sys/kernel/nmi_watchdog",
    "amd_epyc9254_rusttcp_rig_metadata.txt": "unrecognised format",
}
ARM_CATALOG = {
    "arm_graviton3_m7g_perfbook_topdowntool_1.txt": "arm64",
    "arm_neoverse_n1_topdowntool_v1_readme_1.txt": "neoverse-n1",
    "arm_neoverse_n1_topdowntool_v1_readme_2.txt": "neoverse-n1",
    "arm_neoverse_n1_topdowntool_v1_readme_3.txt": "neoverse-n1",
    "arm_neoverse_n1_topdowntool_v1_readme_4.txt": "neoverse-n1",
    "arm_neoverse_n2_lkml_rfc_v2_topdownl1.txt": "arm64",
    "arm_neoverse_n2_lkml_v4_topdownl1.txt": "arm64",
    "arm_neoverse_v2_topdowntool_readme_cpu_1.txt": "neoverse-v2",
    "arm_neoverse_v2_topdowntool_readme_cpu_2.txt": "neoverse-v2",
    "arm_neoverse_v2_topdowntool_readme_cpu_3.txt": "neoverse-v2",
    "arm_neoverse_v2_topdowntool_readme_cpu_4.txt": "neoverse-v2",
    "arm_neoverse_v2_topdowntool_readme_cpu_6.txt": "neoverse-v2",
    "arm_neoverse_v2_topdowntool_readme_cpu_7.txt": None,   # CSV names no core: Arm's guess
}


def _files(d: Path) -> list[Path]:
    return sorted(p for p in d.iterdir() if p.is_file() and p.name != "SOURCES.md")


def _tma_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "analysis", "tma", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=60)


# ----------------------------------------------------------------------- every file

def test_every_vendor_fixture_is_handled(fixtures_dir):
    """Each AMD and Arm file parses to a tree in its vendor's catalogue, or raises an error
    that names the file and says why; nothing is skipped and nothing crashes."""
    amd, arm = _files(AMD), _files(ARM)
    assert len(amd) == 53 and len(arm) == 13
    for p in amd + arm:
        if p.name in ERRORS:
            with pytest.raises(TmaParseError) as e:
                parse_file(p)
            assert str(e.value).startswith(str(p)) and ERRORS[p.name] in str(e.value), p.name
            continue
        assert p.parent == AMD or p.name in ARM_CATALOG, f"{p.name}: new fixture, list it here"
        r = parse_file(p)
        tree = r.tree()
        assert tree, p.name
        if p.parent == AMD:
            assert r.catalog.model == "amdzen4", p.name
            assert all(n.domain == "Slots" for n in r.collapse().values()), p.name
        else:
            want = ARM_CATALOG[p.name]
            assert r.catalog.vendor == "arm" and (want is None or r.catalog.model == want), \
                (p.name, r.catalog.model)
        # No value the tool printed is lost: every known name sits in the tree or in
        # Stage 2, with a domain the catalogue gives.
        for v in r.values:
            assert v.known and v.domain, (p.name, v.raw_name)


@pytest.mark.heavy
def test_cli_prints_every_fixture_with_domains(fixtures_dir):
    """`stallscope tma FILE` prints each tree with its domain column (exit 0), and an
    unreadable one as `stallscope tma: error: FILE: ...` (exit 2)."""
    for p in _files(AMD)[:14] + _files(ARM):
        r = _tma_cli(str(p))
        if p.name in ERRORS:
            assert r.returncode == 2 and r.stderr.startswith(f"stallscope tma: error: {p}"), p.name
            continue
        assert r.returncode == 0, (p.name, r.stderr)
        assert re.search(r"^\S.*\s(% Slots|% Cycles|MPKI)\s", r.stdout, re.M), (p.name, r.stdout)


# ----------------------------------------------------------------------- AMD values

def test_amd_pipeline_l2_values_and_derived_level1(fixtures_dir):
    r = parse_file(AMD / "amd_epyc9254_rusttcp_epoll-et.txt")
    assert r.fmt == "perf" and r.catalog.model == "amdzen4" and r.catalog.slots == 6
    flat = r.collapse()
    assert flat[MEM].value == 18.0 and flat["backend_bound.backend_bound_cpu"].value == 2.5
    assert flat[MEM].multiplex == 25.12
    assert flat["frontend_bound.frontend_bound_latency"].value == 52.3
    # -M PipelineL2 alone prints no level 1: the parent is the sum of its two children,
    # marked derived and said.
    be = flat["backend_bound"]
    assert be.value == pytest.approx(20.5) and be.derived == "backend_bound_memory + backend_bound_cpu"
    assert any("derived as the sum of their level-2 children" in w for w in r.warnings)
    assert [n.name for n in r.tree()] == ["frontend_bound", "bad_speculation", "backend_bound", "retiring"]
    # Event names holding commas and the same event repeated are counters, not metrics.
    assert not r.unknown()


def test_amd_user_suffix_and_newer_column_layout(fixtures_dir):
    fs = parse_file(AMD / "amd_zen4_7700x_benchpicalc_FalseSharingOmpPi_1.txt")   # ex_ret_ops:u
    assert fs.get(MEM) == 89.7 and fs.get("frontend_bound_latency") == 0.7
    kin = parse_file(AMD / "amd_zen4_kinematics_kinematics_OmpSimdSim_1.txt")      # perf -ddd block first
    assert kin.get(MEM) == 60.2 and kin.get("backend_bound_cpu") == 20.5
    assert "perf stat -MPipelineL2 --pid=$(pgrep kinematics-demo)" in kin.commands


def test_amd_level1_only_output(fixtures_dir):
    r = parse_file(AMD / "amd_zen4_loonatick_copyif_1.txt")
    flat = r.collapse()
    assert {n: flat[n].value for n in flat} == {"bad_speculation": 0.0, "retiring": 33.7,
                                                "frontend_bound": 65.1, "backend_bound": 1.2}
    assert all(n.multiplex == 66.67 and not n.derived for n in flat.values())
    assert not any("derived" in w for w in r.warnings)


def test_amd_group_that_ran_zero_time_is_invalid(fixtures_dir):
    r = parse_file(AMD / "amd_epyc9254_rusttcp_thread-per-conn.txt")
    flat = r.collapse()
    # The bad-speculation group printed no share (it ran all the time): valid.
    assert flat["bad_speculation.bad_speculation_mispredicts"].value == 0.4
    for name in (MEM, "backend_bound.backend_bound_cpu", "retiring.retiring_fastpath",
                 "frontend_bound.frontend_bound_latency", "backend_bound"):
        assert flat[name].value is None and "0.00% of the time" in (flat[name].implausible or "") \
            or "sum of is invalid" in (flat[name].implausible or ""), name
    assert any("backend_bound_memory: its counter group ran 0.00% of the time, so the value "
               "(perf printed 16) comes from stale counts" in w for w in r.warnings)
    out = _tma_cli(str(AMD / "amd_epyc9254_rusttcp_thread-per-conn.txt")).stdout
    assert re.search(r"^  backend_bound_memory\s+% Slots\s+~n/a .*INVALID$", out, re.M)


def test_amd_not_counted_groups_and_nmi_hint(fixtures_dir):
    part = parse_file(AMD / "amd_epyc9254_rusttcp_preforked.txt")
    assert set(part.collapse()) == {"backend_bound", MEM, "backend_bound.backend_bound_cpu",
                                    "bad_speculation", "bad_speculation.bad_speculation_mispredicts",
                                    "bad_speculation.bad_speculation_pipeline_restarts"}
    assert part.get(MEM) == 4.8 and part.collapse()[MEM].multiplex == 79.86
    # The hint's "perf stat ..." is perf's words, not a command that was run.
    assert "perf stat ..." not in part.commands
    with pytest.raises(TmaParseError, match=r"amd_epyc9254_rusttcp_forking.txt: perf counted none "
                       r"of the events .*NMI watchdog"):
        parse_file(AMD / "amd_epyc9254_rusttcp_forking.txt")


def _locale(text: str, group: str, decimal: str) -> str:
    """The recording as perf prints it under another LC_NUMERIC: counts grouped with
    `group`, metric values and running shares with `decimal` (timestamps keep their point)."""
    def count(m: re.Match) -> str:
        return m.group(0).replace(",", group)
    text = re.sub(r"\d{1,3}(?:,\d{3})+", count, text)
    text = re.sub(r"(#\s+)(\d+)\.(\d+)", rf"\1\2{decimal}\3", text)
    return re.sub(r"\((\d+)\.(\d+)%\)", rf"(\1{decimal}\2%)", text)


@pytest.mark.parametrize("group,decimal", [(".", ","), (" ", ","), ("\u202f", ","), ("'", ".")])
def test_amd_any_locale(tmp_path, fixtures_dir, group, decimal):
    src = AMD / "amd_epyc9254_rusttcp_epoll-et.txt"
    p = tmp_path / "locale.txt"
    p.write_text(_locale(src.read_text(), group, decimal))
    assert "223" + group + "785" + group + "125" in p.read_text()
    want = {n: (v.value, v.multiplex) for n, v in parse_file(src).collapse().items()}
    got = {n: (v.value, v.multiplex) for n, v in parse_file(p).collapse().items()}
    assert got == want


def test_amd_interval_mode(tmp_path, fixtures_dir):
    """perf -I prints the interval's end time at the start of every line, continuation
    lines too: two intervals made of the recording's lines (the numbers its own)."""
    lines = (AMD / "amd_epyc9254_rusttcp_epoll-et.txt").read_text().splitlines()
    body = [l for l in lines if re.match(r"\s+(\d[\d,]*|<not counted>)\s+\S|\s+#", l)]
    out = ["#           time             counts unit events"]
    for ts in ("1.001234567", "2.002469134"):
        out += [f"{ts:>15} {l}" for l in body]
    p = tmp_path / "interval.txt"
    p.write_text("\n".join(out) + "\n")
    r = parse_file(p, "perf")
    assert r.intervals() == [1.001234567, 2.002469134]
    assert r.collapse(interval="last")[MEM].value == 18.0
    assert r.collapse()[MEM].value == 18.0 and r.collapse()[MEM].samples == 2


def _rows(text: str) -> list[list[str]]:
    """The recording's counter and metric lines as perf's -x, fields (perf's stat-display.c:
    value, unit, event, runtime, pcnt-running, metric-value, metric-unit; a metric on a
    continuation line has empty counter fields). The text holds no event runtime, so that
    field stays empty; a group's share, printed on its last line, goes on each of its
    counter rows."""
    out, group = [], []
    for line in text.splitlines():
        m = re.match(r"\s+([\d,]+|<not counted>)\s+(\S+)\s*(?:#\s+([\d.]+) %\s+(\w+))?\s*(?:\(([\d.]+)%\))?\s*$", line)
        c = re.match(r"\s+#\s+([\d.]+) %\s+(\w+)\s*(?:\(([\d.]+)%\))?\s*$", line)
        if m:
            count, event, val, name, pct = m.groups()
            if val:
                group = []
            row = [count.replace(",", ""), "", event, "", pct or "", val or "",
                   f"%  {name}" if name else ""]
            group.append(row)
            out.append(row)
        elif c:
            val, name, pct = c.groups()
            row = ["", "", "", "", "", val, f"%  {name}"]    # perf leaves them empty
            out.append(row)
            for r in group:
                r[4] = r[4] or (pct or "")
    return out


def _as_csv(text: str) -> str:
    """perf -x, writes the fields unquoted, so an event name holding a comma
    (cpu/...,cmask=0x6/) adds a field."""
    return "\n".join(",".join(r) for r in _rows(text)) + "\n"


def _as_json(text: str) -> str:
    """The same rows as perf -j objects (6.13's key names; values quoted as 6.5+ prints them)."""
    objs = []
    for count, _, event, _, pct, val, unit in _rows(text):
        o = {}
        if count:
            o = {"counter-value": f"{float(count):.6f}", "unit": "", "event": event}
            if pct:
                o["pcnt-running"] = float(pct)
        if val:
            o.update({"metric-value": val, "metric-unit": unit})
        objs.append(json.dumps(o))
    return "\n".join(objs) + "\n"


@pytest.mark.parametrize("shape,fmt", [(_as_csv, "perf-csv"), (_as_json, "perf-json")])
def test_amd_csv_and_json_layouts(tmp_path, fixtures_dir, shape, fmt):
    src = AMD / "amd_epyc9254_rusttcp_epoll-et.txt"
    p = tmp_path / "amd.out"
    p.write_text(shape(src.read_text()))
    r = parse_file(p)
    assert r.fmt == fmt and r.catalog.model == "amdzen4"
    want = {n: v.value for n, v in parse_file(src).collapse().items()}
    assert {n: v.value for n, v in r.collapse().items()} == want
    assert r.collapse()[MEM].multiplex == 25.12


# ----------------------------------------------------------------------- Arm perf

def test_arm_perf_topdownl1_percent_and_fraction(fixtures_dir):
    v4 = parse_file(ARM / "arm_neoverse_n2_lkml_v4_topdownl1.txt")
    assert v4.catalog.vendor == "arm" and v4.fmt == "perf"
    assert {n: x.value for n, x in v4.collapse().items()} == {
        "bad_speculation": 0.0, "retiring": 4.0, "frontend_bound": 27.1, "backend_bound": 69.4}
    assert v4.collapse()["backend_bound"].multiplex == 66.65
    rfc = parse_file(ARM / "arm_neoverse_n2_lkml_rfc_v2_topdownl1.txt")
    flat = rfc.collapse()
    # RFC v2 printed fractions and called bad speculation "wasted".
    assert flat["backend_bound"].value == pytest.approx(67.0)
    assert flat["bad_speculation"].value == 0.0 and rfc.values[1].raw_name == "wasted"
    assert any("fractions" in w for w in rfc.warnings)
    n2 = parse_file(ARM / "arm_neoverse_n2_lkml_v4_topdownl1.txt", catalog="neoverse-n2")
    assert n2.catalog.slots == 5 and n2.get("backend_bound") == 69.4


# ----------------------------------------------------------------------- catalogues

def test_catalogues_rebuild_from_the_published_definitions(fixtures_dir):
    built = build(DEFS)
    assert sorted(built) == ["amdzen4", "amdzen5", "arm64", "neoverse-n1", "neoverse-n2",
                             "neoverse-v1", "neoverse-v2", "neoverse-v3"]
    for model, text in built.items():
        assert (catalog.CATALOG_DIR / f"{model}.tsv").read_text() == text, \
            f"{model}.tsv differs from its definitions: python -m analysis.tma.catalog_build {DEFS}"
    z4, z5 = catalog.load("amdzen4"), catalog.load("amdzen5")
    assert (z4.slots, z5.slots) == (6, 8)
    assert z4.roots == ("frontend_bound", "bad_speculation", "backend_bound", "retiring", "smt_contention")
    assert z5.memory == ("backend_bound.backend_bound_by_memory",) and z5["bad_speculation"].domain == "Ops"
    assert max(n.level for n in z4.nodes.values()) == 2          # no level 3 on AMD
    v3 = catalog.load("neoverse-v3")
    l1d = "backend_bound.backend_mem_bound.backend_mem_cache_bound.backend_cache_l1d_bound"
    assert v3[l1d].level == 4 and v3[l1d].domain == "Cycles" and v3.slots == 10
    assert v3["l1d_cache_mpki"].stage2 and v3["l1d_cache_mpki"].ratio
    assert v3["backend_busy_bound"].stage2       # unreached by the published tree: no parent guessed
    n1 = catalog.load("neoverse-n1")
    assert n1.tree_roots() == ["frontend_stalled_cycles", "backend_stalled_cycles"]


def test_catalogue_directives_are_checked(tmp_path):
    head = "node\tdomain\tarea\tthreshold\tperf_aliases\n"
    with pytest.raises(catalog.CatalogError, match=r"x.tsv:1: unknown directive @colour"):
        catalog.parse_catalog("@colour\tred\n" + head + "a\tSlots\tFE\t-\n", "x", "x.tsv")
    with pytest.raises(catalog.CatalogError, match=r"x.tsv:1: @vendor 'via'"):
        catalog.parse_catalog("@vendor\tvia\n" + head, "x", "x.tsv")
    with pytest.raises(catalog.CatalogError, match=r"x.tsv:4: b is not under an L1 node \(a\)"):
        catalog.parse_catalog("@roots\ta\n" + head + "a\tSlots\tFE\t-\nb\tSlots\tFE\t-\n", "x", "x.tsv")
    with pytest.raises(catalog.CatalogError, match=r"@memory names c, which has no row"):
        catalog.parse_catalog("@roots\ta\n@memory\tc\n" + head + "a\tSlots\tFE\t-\n", "x", "x.tsv")


def test_stage2_and_arm_depth_have_no_slot_share():
    v3 = catalog.load("neoverse-v3")
    from analysis.tma.model import TmaNode
    flat = {"backend_bound": TmaNode("backend_bound", 40.0, "Slots", 1),
            "backend_bound.backend_mem_bound": TmaNode("backend_bound.backend_mem_bound", 60.0, "Cycles", 2),
            "l1d_cache_mpki": TmaNode("l1d_cache_mpki", 12.5, "MPKI", 1)}
    view = slot_view(flat, v3)
    assert view.shares == {"backend_bound": 40.0}
    assert "relative to their parent" in view.skipped["backend_bound.backend_mem_bound"]


# ----------------------------------------------------------------------- funnels

def _amd(names: list[str]):
    return [parse_file(AMD / f"amd_zen4_7700x_benchpicalc_{n}.txt") for n in names]


def test_amd_funnel_three_vs_three(fixtures_dir):
    f = compare(_amd(["SerialPi_1", "SerialPi_2", "SerialPi_3"]),
                _amd(["NaiveOmpPi_1", "NaiveOmpPi_2", "NaiveOmpPi_3"]))
    doc = f.to_json()
    assert doc["tree"]["vendor"] == "amd" and doc["tree"]["memory"] == [MEM]
    rows = {r["node"]: r for r in doc["rows"]}
    # smt_contention is a PipelineL1 bucket; PipelineL2 alone prints none of it.
    assert set(doc["tree"]["roots"]) - set(rows) == {"smt_contention"}
    assert MEM in rows and rows[MEM]["memory"]
    assert sorted(rows[MEM]["base"]["values"]) == [2.5, 4.2, 6.7] and rows[MEM]["cand"]["median"] == 0.5
    assert rows[MEM]["ci_pp"] is not None and rows[MEM]["delta_unit"] == "pp"
    from analysis.report import funnel_md
    md = funnel_md.render(FunnelDoc.from_json(doc))
    assert md.startswith("Tree: AMD Zen 4 pipeline utilization (catalogue amdzen4, 6 slots per cycle).")
    assert "| └ backend_bound_memory | % Slots |" in md and "sums to its parent" in md
    # 3 runs a side give an interval: a notable move it does not establish says so, not
    # that the runs were too few for one.
    from analysis.report.funnel_rules import explain
    mem = next(x for x in explain(FunnelDoc.from_json(doc).rows) if x.startswith("backend_bound_memory"))
    assert f"- {mem}" in md.replace("\\", "")
    assert mem.endswith(f"(not established: {rows[MEM]['verdict']}, its interval does not exclude noise)")


@pytest.mark.heavy
def test_cross_vendor_and_cross_model_refused(fixtures_dir):
    amd = _amd(["SerialPi_1"])
    arm = [parse_file(ARM / "arm_neoverse_n2_lkml_v4_topdownl1.txt")]
    with pytest.raises(IncompatibleTrees, match="different top-down methods"):
        compare(amd, arm)
    # Level-1 names are the same on Zen 4 and Zen 5; the slots per cycle are not.
    l1 = AMD / "amd_zen4_loonatick_copyif_1.txt"
    z5 = [parse_file(l1, catalog="amdzen5")]
    with pytest.raises(IncompatibleTrees, match=r"CPU models amdzen4 and amdzen5 differ \(slots per cycle 6 vs 8"):
        compare([parse_file(l1)], z5)
    r = subprocess.run([sys.executable, "-m", "analysis", "funnel", str(AMD / "amd_zen4_7700x_benchpicalc_SerialPi_1.txt"),
                        "--vs", str(ARM / "arm_neoverse_n2_lkml_v4_topdownl1.txt")],
                       capture_output=True, text=True, cwd=REPO, timeout=60)
    assert r.returncode == 2 and "error: cannot compare" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.heavy
def test_funnel_cli_two_amd_and_two_arm(fixtures_dir):
    """`stallscope funnel A1 A2 --vs B1 B2` for two AMD and for two Arm outputs."""
    r = subprocess.run([sys.executable, "-m", "analysis", "funnel",
                        str(AMD / "amd_zen4_kinematics_minimal_StructOfPointer_1.txt"),
                        str(AMD / "amd_zen4_kinematics_minimal_StructOfPointer_2.txt"), "--vs",
                        str(AMD / "amd_zen4_kinematics_minimal_VectorOfStruct_1.txt"),
                        str(AMD / "amd_zen4_kinematics_minimal_VectorOfStruct_2.txt"), "--format", "json"],
                       capture_output=True, text=True, cwd=REPO, timeout=60)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["runs"] == {"base": 2, "cand": 2} and doc["tree"]["model"] == "amdzen4"
    mem = next(x for x in doc["rows"] if x["node"] == MEM)
    assert mem["memory"]
    # 2 a side: a Welch interval (stats.SMALL_N), a share's cut at +-100 pp
    assert "Welch" in doc["method"] and "n=2+2" in doc["method"]
    assert all(x["ci_pp"] is not None and -100 <= x["ci_pp"][0] <= x["delta_pp"] <= x["ci_pp"][1] <= 100
               for x in doc["rows"] if x["delta_unit"] == "pp"), doc["rows"]
    be = next(x for x in doc["rows"] if x["node"] == "backend_bound")
    assert be["ci_pp"] == [-100.0, 100.0] and "No change a share can make" in be["reason"]
    r = subprocess.run([sys.executable, "-m", "analysis", "funnel",
                        str(ARM / "arm_neoverse_n2_lkml_rfc_v2_topdownl1.txt"),
                        "--vs", str(ARM / "arm_neoverse_n2_lkml_v4_topdownl1.txt"),
                        "--catalog", "neoverse-n2"], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "Tree: Arm Neoverse N2 top-down (perf) (catalogue neoverse-n2, 5 slots per cycle)." in r.stdout
    assert "| backend_bound | % Slots | ~67.0%† | ~69.4%† | +2.4 pp |" in r.stdout
    # two topdown-tool outputs a side: Stage-2 ratios get an interval in their own unit
    n1 = [str(ARM / f"arm_neoverse_n1_topdowntool_v1_readme_{i}.txt") for i in (1, 2, 3, 4)]
    r = subprocess.run([sys.executable, "-m", "analysis", "funnel", n1[0], n1[1], "--vs", n1[2], n1[3],
                        "--format", "json"], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert r.returncode == 0, r.stderr
    rows = {x["node"]: x for x in json.loads(r.stdout)["all_rows"]}
    tlb = rows["l2_tlb_mpki"]
    assert tlb["base"]["values"] == [0.006, 0.0] and tlb["ci_pp"] is not None
    assert tlb["ci_pp"][0] < tlb["delta_pp"] < tlb["ci_pp"][1] and tlb["delta_unit"] == "MPKI"


# ----------------------------------------------------------------------- report

RUN = REPO / "tests" / "data" / "runs" / "io-threads-mset"


def _replayed_run(tmp_path: Path, base: list[Path], cand: list[Path]) -> Path:
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    for side, files in (("base", base), ("cand", cand)):
        for i, f in enumerate(files, 1):
            # The name the perf collector writes; the format is told by the content.
            shutil.copy(f, run / side / str(i) / "tma.json")
    mf = json.loads((run / "manifest.json").read_text())
    mf["tma"] = {"backend": "replay", "status": "replay",
                 "reason": "test replay of recorded tests/data/fixtures/tma outputs"}
    (run / "manifest.json").write_text(json.dumps(mf))
    return run


@pytest.mark.heavy
@pytest.mark.parametrize("vendor", ["amd", "arm"])
def test_replayed_rep_lands_in_report_and_summary(tmp_path, fixtures_dir, vendor):
    from commands import compare as cli
    if vendor == "amd":
        base = [AMD / f"amd_zen4_7700x_benchpicalc_SerialPi_{i}.txt" for i in (1, 2, 3)]
        cand = [AMD / f"amd_zen4_7700x_benchpicalc_NaiveOmpPi_{i}.txt" for i in (1, 2, 3)]
        label, leaf = "Memory stalls (AMD Zen 4 pipeline utilization)", "backend_bound_memory"
    else:
        base = [ARM / "arm_neoverse_n2_lkml_rfc_v2_topdownl1.txt"]
        cand = [ARM / "arm_neoverse_n2_lkml_v4_topdownl1.txt"]
        label, leaf = "Memory stalls (Arm top-down, level 1 (perf, any core))", "backend_bound"
    run = _replayed_run(tmp_path, base, cand)
    out = tmp_path / "out"
    assert cli.main([str(run), "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    md = (out / "report.md").read_text()
    assert res["tma"]["status"] == "replay" and res["tma"]["funnel"]["tree"]["vendor"] == vendor
    mem = [s for s in res["summary"] if s["what"] == "memory stalls"]
    assert len(mem) == 1 and mem[0]["values"][0]["measure"] == leaf
    assert "REPLAY" in mem[0]["note"]
    summary = md.split("**Summary:**", 1)[1]
    assert label in summary and leaf in summary
    html = (out / "report.html").read_text()
    assert 'id="tma-tree"' in html and leaf in html


# ----------------------------------------------------------------------- provenance

def _pattern(token: str) -> re.Pattern:
    """A file name as SOURCES.md writes it: `a_*.txt`, `b_{1,2}.txt`, `c_{1..4,6,7}.txt`."""
    def alt(m: re.Match) -> str:
        items = []
        for part in m.group(1).split(","):
            lo, dots, hi = part.partition("..")
            items += [str(i) for i in range(int(lo), int(hi) + 1)] if dots else [part]
        return "(" + "|".join(map(re.escape, items)) + ")"
    out, last = "", 0
    for m in re.finditer(r"\{([^}]*)\}|\*", token):
        out += re.escape(token[last:m.start()]) + (".*" if m.group(0) == "*" else alt(m))
        last = m.end()
    return re.compile(out + re.escape(token[last:]))


@pytest.mark.parametrize("d", ["amd", "arm", "definitions"])
def test_vendor_sources_name_every_file(fixtures_dir, d):
    """Each directory's SOURCES.md names every file in it (literally or as a pattern)."""
    text = (TMA / d / "SOURCES.md").read_text()
    patterns = [_pattern(t) for t in re.findall(r"`([\w.*{},-]+\.(?:txt|json))`", text)]
    assert patterns
    missing = [p.name for p in _files(TMA / d) if not any(x.fullmatch(p.name) for x in patterns)]
    assert not missing, f"{d}/SOURCES.md does not name {missing}"
    assert not _pattern("a_{1..2,4}.txt").fullmatch("a_3.txt")      # the check can fail


@pytest.mark.parametrize("perf_file,models", [
    ("linux_perf_arm64_neoverse-n1_metrics.json", ["neoverse-n1"]),
    ("linux_perf_arm64_neoverse-v1_metrics.json", ["neoverse-v1"]),
    ("linux_perf_arm64_neoverse-n2-v2_metrics.json", ["neoverse-n2", "neoverse-v2"])])
def test_perf_arm_metric_names_resolve(fixtures_dir, perf_file, models):
    """Every metric perf defines for a Neoverse core is a node of that core's catalogue, so
    a `perf stat -M <group>` output of it places every value; units follow perf's ScaleUnit."""
    metrics = [m for m in json.loads((DEFS / perf_file).read_text()) if m.get("MetricName")]
    assert len(metrics) >= 30
    for model in models:
        cat = catalog.load(model)
        missing = [m["MetricName"] for m in metrics if cat.by_perf_name(m["MetricName"]) is None]
        assert not missing, (model, missing)
        for m in metrics:
            node = cat.by_perf_name(m["MetricName"])
            if m.get("ScaleUnit") in ("1MPKI",):
                assert node.domain == "MPKI", (model, m["MetricName"])
