"""The real toplev, run here and in CI (AMD and Intel guests, no PMU, no network): what it
can do without counters is list each model's nodes and describe them for a forced CPU
(`--force-cpu KEY --list-nodes`, `--describe`). Its list is checked against the catalogue
of each model, name for name and in its order; the descriptions against the model toplev
imports. collectors/host/toplev.listing says how toplev runs offline."""
from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from analysis.tma import catalog
from analysis.tma.catalog_build_intel import SERVER_MODELS
from collectors.host.toplev import ToplevError, installed_toplev, listing

REPO = Path(__file__).resolve().parents[1]
MACHINES = REPO / "tests" / "data" / "machines"


@pytest.fixture(scope="module")
def toplev() -> list[str]:
    cmd = installed_toplev()
    if cmd is None:
        pytest.fail("pmu-tools is not installed: run `make setup` (requirements.txt pins it)")
    return cmd


@pytest.mark.parametrize("key", [k for k, _, _ in SERVER_MODELS])
def test_toplev_lists_exactly_the_catalogue_nodes(toplev, key):
    listed = list(listing(toplev, key))
    cat = catalog.load(key)
    # the catalogue's rows with a toplev unit; the others are perf-only (SPR's AMX_Busy ...)
    assert listed == [p for p, n in cat.nodes.items() if n.domain is not None]


def test_toplev_describes_the_memory_path_as_its_model_does(toplev):
    """`--describe` prints each node's full text: the model's own `desc`, whose dotted name
    is the catalogue's."""
    spr = importlib.import_module("spr_server_ratios")
    for leaf in ("Memory_Bound", "L3_Bound", "DRAM_Bound", "MEM_Latency", "MEM_Bandwidth"):
        described = listing(toplev, "spr", "--describe", f"{leaf}^")   # ^: the node itself
        (path, text), = described.items()
        assert catalog.load("spr").resolve(leaf) == path
        assert text.split() == getattr(spr, leaf).desc.split() and len(text) > 40


@pytest.mark.parametrize("machine", ["amd-zen5-this-vm", "intel-emeraldrapids-this-vm"])
def test_toplev_runs_for_a_forced_cpu_on_any_host(toplev, machine):
    """The same on an AMD guest (toplev reads the CPU from the recorded cpuinfo) as on an
    Intel one: the forced model's nodes, whatever the host."""
    info = MACHINES / machine / "cpuinfo.txt"
    nodes = listing([*toplev, "--force-cpuinfo", str(info)], "icx")
    assert list(nodes) == [p for p, n in catalog.load("icx").nodes.items() if n.domain]


def test_a_key_toplev_does_not_know_is_said_in_its_words(toplev):
    with pytest.raises(ToplevError, match=r"--force-cpu zen9 --list-nodes -l6` listed no nodes "
                                          r"\(exit code 2\): .*invalid choice: 'zen9'"):
        listing(toplev, "zen9")
