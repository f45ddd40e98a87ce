"""The TMA catalogue: data files per CPU model, how a file's catalogue is chosen, how a
broken catalogue is reported, and the layering of analysis.tma (model below parsers)."""
from __future__ import annotations

import ast
import re
import shutil

import pytest

from analysis.tma import catalog
from analysis.tma.catalog import Catalog, CatalogError, parse_catalog
from analysis.tma.formats import parse_file, parse_output
from tests.conftest import FIXTURES, REPO

TL = FIXTURES / "tma" / "toplev"
PF = FIXTURES / "tma" / "perf"
NP = PF / "no_pmu_vm"
MEM = "Backend_Bound.Memory_Bound"
SPR = catalog.load("spr")
HEADER = "node\tdomain\tarea\tthreshold\tperf_aliases\n"


def _perf_list_groups() -> dict[str, list[str]]:
    groups, cur = {}, None
    for line in (NP / "perf6.1_list_details_cpu6-85.txt").read_text().splitlines():
        m = re.match(r"^(\w+):$", line)
        if m:
            cur = m.group(1)
            groups[cur] = []
        elif cur and re.match(r"^  (\w+)$", line):
            groups[cur].append(line.strip())
    return groups


def test_catalogue_perf_names_match_perf61_listing():
    """The catalogue's perf names and parents agree with perf 6.1's own metric groups."""
    groups = _perf_list_groups()
    assert groups["tma_dram_bound_group"] == ["tma_mem_bandwidth", "tma_mem_latency"]
    for lvl in (1, 2, 3, 4):
        listed = set(groups[f"TopdownL{lvl}"])
        ours = {n.perf_name for n in SPR.nodes.values() if n.level == lvl}
        common = ours & listed
        # CLX (the listing's CPU) lacks a few SPR-only nodes, but most must exist
        assert len(common) >= 0.6 * len(ours), (lvl, sorted(ours - listed))
        for name in common:
            assert SPR.by_perf_name(name).level == lvl
    checked, moved = 0, set()
    for g, members in groups.items():
        if not g.startswith("tma_") or not g.endswith("_group") or re.match(r"tma_L\d", g):
            continue
        parent = SPR.by_perf_name(g[:-len("_group")])
        for m in members:
            child = SPR.by_perf_name(m)
            if parent and child:
                checked += 1
                if child.parent != parent.path:
                    moved.add((m, g))
    assert checked >= 40
    # The real Cascade Lake vs Sapphire Rapids differences among shared names: SPR moved
    # Nop_Instructions under the new Other_Light_Ops node and Serializing_Operation from
    # Ports_Utilized_0 up to Core_Bound.
    assert moved == {("tma_nop_instructions", "tma_light_operations_group"),
                     ("tma_serializing_operation", "tma_ports_utilized_0_group")}


def test_catalogue_shape():
    assert len([n for n in SPR.nodes.values() if n.level == 1]) == 4
    n = SPR[MEM + ".DRAM_Bound.MEM_Latency"]
    assert (n.level, n.domain, n.perf_name, n.threshold) == (4, "Clocks", "tma_mem_latency", 0.1)
    assert SPR[MEM + ".L3_Bound"].domain == "Stalls"
    assert SPR["Backend_Bound.Memory_Bound.Store_Bound.Split_Stores"].domain == "Core_Utilization"
    assert SPR.by_perf_name("tma_mem_latency").path == MEM + ".DRAM_Bound.MEM_Latency"
    assert SPR.by_perf_name("tma_resource_bound") is None




# ------------------------------------------------------------------ which catalogue
def test_catalogue_named_by_toplev_version_line_else_default():
    # (compared by model: another test reloads the catalogues from a directory of its own)
    spr = parse_file(TL / "toplev_spr8488c_l2_sorted_mux.txt")        # [spr/sapphire_rapids]
    assert spr.catalog.model == "spr"
    skx = parse_file(TL / "toplev_skx6140_l1_v_global_mux_issue370.txt")   # [skx]: its own
    assert skx.catalog.model == "skx"
    skl = parse_file(TL / "toplev_skl6700k_l1_core_C0_csv_issue369.csv")   # names no model
    assert skl.catalog.model == catalog.DEFAULT_MODEL == "spr"
    assert parse_file(PF / "perf6.5_default_spr.json").catalog.model == "spr"   # perf names no CPU
    assert catalog.for_cpu("spr/sapphire_rapids").model == catalog.for_cpu(None).model == "spr"


def test_a_new_cpu_model_is_one_data_file(tmp_path, monkeypatch):
    """A catalogue for SKX (the model toplev names in issue370) placed beside spr.tsv is
    picked up without code; perf names follow the new catalogue too."""
    shutil.copy(catalog.CATALOG_DIR / "spr.tsv", tmp_path / "spr.tsv")
    (tmp_path / "skx.tsv").write_text(
        "# toy Skylake-SP catalogue: L1 only, Retiring counted in Uops to tell it apart\n"
        + HEADER + "Frontend_Bound\tSlots\tFE\t0.15\ttma_fe\nBad_Speculation\tSlots\tBAD\t0.15\n"
        "Backend_Bound\tSlots\tBE\t0.2\nRetiring\tUops\tRET\t0.7\n")
    monkeypatch.setattr(catalog, "CATALOG_DIR", tmp_path)
    catalog.load.cache_clear()
    try:
        r = parse_file(TL / "toplev_skx6140_l1_v_global_nomux_issue370.txt")
        assert r.catalog.model == "skx" and catalog.models() == ["skx", "spr"]
        assert r.get("Frontend_Bound") == 61.7 and not r.unknown()
        perf = parse_output("TopdownL1  #  12.5 %  tma_fe\n           #   3.0 %  tma_retiring\n",
                            source="x", catalog="skx")
        assert [(v.name, v.domain) for v in perf.values] == [("Frontend_Bound", "Slots"),
                                                             ("Retiring", "Uops")]
    finally:
        catalog.load.cache_clear()


def test_unknown_catalogue_named_by_caller():
    from analysis.tma.model import TmaParseError
    with pytest.raises(TmaParseError, match=r"no TMA catalogue for CPU model 'adl'; available: [^(]*spr[^(]* "
                                            r"\(add catalogs/adl.tsv"):
        parse_file(TL / "toplev_spr8488c_l2_sorted_mux.txt", catalog="adl")


def test_tma_cli_names_the_catalogue():
    from commands import tma as cli
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([str(TL / "toplev_spr8488c_l2_sorted_mux.txt"), "--catalog", "spr"]) == 0
    assert out.getvalue().splitlines()[0].endswith(
        "[spr/sapphire_rapids]; catalogue spr (Intel Sapphire Rapids / Emerald Rapids TMA, 6 slots "
        "per cycle)")


# ------------------------------------------------------------------ broken catalogue files
@pytest.mark.parametrize("rows,message", [
    ("Backend_Bound\tSlots\tBE\t0.2\nBackend_Bound.Memory_Bound.DRAM_Bound\tStalls\tBE/Mem\t0.1\n",
     r"toy.tsv:3: the parent Backend_Bound.Memory_Bound of Backend_Bound.Memory_Bound.DRAM_Bound "
     r"has no row above it; list every parent before its children"),
    ("Backend_Bound\tSlots\tBE\t0,2\n", r"toy.tsv:2: threshold '0,2' is not a number or '-'"),
    ("Backend_Bound\tSlots\tBE\t0.2\nBackend_Bound\tSlots\tBE\t0.2\n",
     r"toy.tsv:3: Backend_Bound is listed twice; keep one row"),
    ("Memory_Bound\tSlots\tBE\t0.2\n", r"toy.tsv:2: Memory_Bound is not under an L1 node"),
    ("Backend_Bound    Slots    BE    0.2\n", r"toy.tsv:2: bad node path"),
    ("Backend_Bound\tSlots\tBE\t0.2\t\tx\n", r"toy.tsv:2: 6 tab-separated fields, at most 5"),
    ("Backend_Bound\tSlots\tBE\t0.2\nRetiring\tSlots\tRET\t0.7\ttma_backend_bound\n",
     r"toy.tsv: perf name tma_backend_bound names both Backend_Bound and Retiring; give one an alias"),
    ("", r"toy.tsv: no node rows"),
])
def test_broken_catalogue_names_file_line_and_fix(rows, message):
    with pytest.raises(CatalogError, match=message):
        parse_catalog(HEADER + rows, "toy", "toy.tsv")


def test_catalogue_without_header():
    with pytest.raises(CatalogError, match=r"toy.tsv:1: expected the tab-separated header "
                                           r"'node domain area threshold perf_aliases'"):
        parse_catalog("Backend_Bound\tSlots\tBE\t0.2\n", "toy", "toy.tsv")


def test_catalogue_rows_keep_file_order_and_resolve_names():
    c = parse_catalog(HEADER + "Retiring\tSlots\tRET\t0.7\nBackend_Bound\tSlots\tBE\t-\n"
                      "Backend_Bound.Memory_Bound\t-\tBE/Mem\t0.2\ttma_mem_alias\n", "toy", "toy.tsv")
    assert isinstance(c, Catalog) and list(c.nodes) == ["Retiring", "Backend_Bound", MEM]
    assert c[MEM].domain is None and c["Backend_Bound"].threshold is None and c[MEM].level == 2
    assert c.resolve("tma_mem_alias") == c.resolve("memory_bound") == MEM
    assert sorted(["Backend_Bound", "Retiring", MEM + ".X"], key=c.tree_order) == \
        ["Retiring", "Backend_Bound", MEM + ".X"]


# ------------------------------------------------------------------ layering
def _imports(path) -> set[str]:
    """analysis.tma modules one file imports (a `from P import m` of a submodule counts as m)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                is_module = (REPO / (sub.replace(".", "/") + ".py")).is_file()
                out.add(sub if is_module else node.module)
    return {m for m in out if m.startswith("analysis.tma")}


def test_model_and_catalogue_sit_below_the_parsers_without_cycles():
    root = REPO / "analysis" / "tma"
    graph = {}
    for p in root.rglob("*.py"):
        mod = ".".join(p.relative_to(REPO).with_suffix("").parts)
        graph[re.sub(r"\.__init__$", "", mod)] = _imports(p)
    assert graph["analysis.tma.catalog"] == set()
    assert graph["analysis.tma.model"] == {"analysis.tma.catalog"}
    below = {"analysis.tma.catalog", "analysis.tma.model"}
    for mod, deps in graph.items():
        if mod.startswith("analysis.tma.formats."):
            assert deps <= below | {m for m in graph if m.startswith("analysis.tma.formats.")}, mod

    def visit(mod, stack):
        assert mod not in stack, f"import cycle: {' -> '.join(stack + [mod])}"
        for dep in graph.get(mod, ()):
            visit(dep, stack + [mod])
    for mod in graph:
        visit(mod, [])
