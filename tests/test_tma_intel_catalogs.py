"""The Intel catalogues and the CPU table are pmu-tools' own models, as data: rebuilt here
from the pmu-tools `make setup` installs (the release requirements.txt pins) and compared
with the committed files, as tests/test_tma_vendor_catalogs.py does for AMD and Arm."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from analysis.tma import catalog, catalog_build_intel, intel_cpus
from analysis.tma.formats import parse_file
from collectors.host.cpuid import identify

REPO = Path(__file__).resolve().parents[1]
TMA = Path(catalog_build_intel.__file__).parent
MACHINES = REPO / "tests" / "data" / "machines"
TL = REPO / "tests" / "data" / "fixtures" / "tma" / "toplev"


@pytest.fixture(scope="module")
def built() -> dict[str, str]:
    if importlib.util.find_spec("toplev") is None:
        pytest.fail("pmu-tools is not installed in this Python: run `make setup` (requirements.txt "
                    "pins it), then run the tests with .venv/bin/python")
    return catalog_build_intel.build()


def test_committed_files_are_what_pmu_tools_gives(built):
    names = {f"catalogs/{k}.tsv" for k, _, _ in catalog_build_intel.SERVER_MODELS} | {"intel_cpus.tsv"}
    assert set(built) == names
    for name, text in built.items():
        assert (TMA / name).read_text() == text, (
            f"analysis/tma/{name} differs from what the installed pmu-tools gives: run "
            "`python -m analysis.tma.catalog_build_intel` and review the diff")


def test_every_server_core_has_a_catalogue_with_the_tree_toplev_prints(built):
    for key, module, _ in catalog_build_intel.SERVER_MODELS:
        cat = catalog.load(key)
        assert cat.vendor == "intel" and cat.tree_roots() == list(catalog.L1_NODES), key
        assert cat.slots and cat.title.startswith("Intel ")
        assert all(n.threshold is not None for n in cat.nodes.values() if n.domain), key
    spr, icx, gnr = catalog.load("spr"), catalog.load("icx"), catalog.load("gnr")
    # levels to L4 and below, with toplev's units as it prints them
    assert max(n.level for n in spr.nodes.values()) == 6
    node = spr["Backend_Bound.Memory_Bound.L1_Bound.DTLB_Load.Load_STLB_Miss.Load_STLB_Miss_1G"]
    assert (node.domain, node.area, node.threshold) == ("Clocks_est", "BE/Mem", 0.05)
    assert spr["Backend_Bound.Memory_Bound.DRAM_Bound.MEM_Latency"].domain == "Clocks"
    assert (spr.slots, icx.slots, catalog.load("skx").slots) == (6, 5, 4)
    # perf-only nodes of SPR's perf tables stay, with no toplev unit
    assert spr["Backend_Bound.Core_Bound.AMX_Busy"].domain is None
    assert "Backend_Bound.Core_Bound.AMX_Busy" not in gnr
    # the memory path is every model's memory headline
    assert icx.memory == catalog.load("clx").memory == spr.memory
    assert spr.by_perf_name("tma_shuffles").leaf == "Shuffles_256b"


def test_intel_cpu_table_is_toplevs(built):
    import toplev
    listed = [(k, m) for k, m in toplev.known_cpus if m]
    assert [r[0] for r in intel_cpus.rows()] == [k for k, _ in listed]
    for key, models, steppings in intel_cpus.rows():
        want = dict(listed)[key]
        assert models | {tuple(s) for s in steppings} == set(want), key


@pytest.mark.parametrize("family, model, stepping, name, key", [
    (6, 207, 2, "Intel(R) Xeon(R) Processor", "spr"),          # Emerald Rapids runs SPR's model
    (6, 143, 8, "Intel(R) Xeon(R) Platinum 8462Y+", "spr"),
    (6, 143, 8, "Intel(R) Xeon(R) CPU Max 9480", "sprmax"),     # tl_cpu.py: "Max" in the name
    (6, 106, 6, "", "icx"), (6, 108, 0, "", "icx"),
    (6, 85, 4, "", "skx"), (6, 85, 7, "", "clx"), (6, 85, 11, "", None),   # Cooper Lake: none
    (6, 173, 1, "", "gnr"), (6, 174, 0, "", "gnr"), (6, 175, 3, "", "srf"),
    (6, 158, 10, "", "skl"),                                    # a client core: no catalogue
    (6, 186, 2, "", "adl"),                                     # first row wins (RPL as ADL)
    (19, 1, 0, "", None), (None, None, None, None, None),
])
def test_toplev_key(family, model, stepping, name, key):
    assert intel_cpus.toplev_key(family, model, stepping, name) == key


def test_recorded_intel_machines_get_their_catalogue():
    """Real cpuinfo / lscpu of each Intel machine (tests/data/machines, SOURCES.md)."""
    def cpu(folder: str):
        d = MACHINES / folder
        return identify(next(d / n for n in ("cpuinfo.txt", "lscpu.txt") if (d / n).is_file()).read_text())
    assert cpu("intel-cascadelake-xeon8280").catalog == "clx"
    assert cpu("intel-icelake-xeon8358").catalog == "icx"
    spr = cpu("intel-sapphirerapids-xeon8462y")     # lscpu's indented fields
    assert (spr.family, spr.model, spr.stepping, spr.catalog) == (6, 143, 8, "spr")
    assert cpu("intel-coffeelake-i7-8700").catalog is None      # skl: no client catalogues
    emr = cpu("intel-emeraldrapids-this-vm")
    assert (emr.model, emr.stepping, emr.catalog) == (207, 2, "spr")


def test_toplev_outputs_are_read_in_their_models_tree():
    """toplev names its model in the version line: [skx] now has its own tree."""
    skx = parse_file(TL / "toplev_skx6140_l1_v_global_mux_issue370.txt")
    assert skx.catalog.model == "skx" and not skx.unknown()
    spr = parse_file(TL / "toplev_spr8488c_l2_sorted_mux.txt")
    assert spr.catalog.model == "spr" and not spr.unknown()


def test_broken_table_names_file_and_line(tmp_path):
    bad = tmp_path / "intel_cpus.tsv"
    bad.write_text("# c\nkey\tmodels\nspr\t143,2O7\n")
    with pytest.raises(intel_cpus.IntelCpuTableError, match=re.escape(f"{bad}:3: '2O7' is no model")):
        intel_cpus.rows(bad)


def test_build_refuses_a_folder_that_is_not_pmu_tools(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    assert catalog_build_intel.main([str(tmp_path), str(tmp_path / "out")]) == 2
    assert "is not pmu-tools'" in capsys.readouterr().err
