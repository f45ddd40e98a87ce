"""toplev out of the box: `make setup` installs pmu-tools at the version requirements.txt
pins, and stallscope finds its toplev.py with no $TOPLEV (doctor, `--tma toplev`), while a
set $TOPLEV still wins. Real files only: the installed package, copies of its own files."""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from collectors.host import toplev
from collectors.host.cpuid import identify
from collectors.profilers.tma import TmaCollector
from collectors.profilers.tma.commands import TmaConfig, choose_backend

REPO = Path(__file__).resolve().parents[1]
INTEL = identify((REPO / "tests/data/machines/intel-icelake-xeon8358/lscpu.txt").read_text())


def pinned() -> str:
    m = re.search(r"^pmu-tools==(\S+)", (REPO / "requirements.txt").read_text(), re.M)
    assert m, "requirements.txt pins no pmu-tools"
    return m.group(1)


def installed_file() -> Path:
    cmd = toplev.installed_toplev()
    assert cmd is not None, ("pmu-tools is not installed in this Python nor in the checkout's "
                             ".venv: run `make setup`")
    return Path(cmd[-1])


@pytest.fixture
def no_toplev_on_path(monkeypatch, tmp_path):
    """No $TOPLEV and a PATH with perf and python3 but no toplev."""
    monkeypatch.delenv("TOPLEV", raising=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("perf", "python3", "bash", "sh", "uname"):
        if shutil.which(tool):
            (bin_dir / tool).symlink_to(shutil.which(tool))
    monkeypatch.setenv("PATH", str(bin_dir))


def test_setup_installs_the_pinned_pmu_tools(no_toplev_on_path):
    cmd = toplev.find_toplev()
    assert cmd is not None and Path(cmd[-1]) == installed_file()
    assert cmd[-1].endswith("toplev.py") and Path(cmd[0]).name.startswith("python")
    assert toplev.toplev_version(cmd) == pinned()
    assert toplev.describe(cmd) == f"toplev (pmu-tools {pinned()}) at {' '.join(cmd)}"


def test_toplev_option_uses_the_installed_one_and_auto_does_not(no_toplev_on_path):
    """`--tma toplev` runs the installed toplev; auto keeps perf (paired-window TMA, no
    event-list download) unless a toplev was put on PATH or in $TOPLEV."""
    c = TmaCollector(TmaConfig(backend="toplev"), cpu=INTEL)
    assert c._toplev == toplev.find_toplev()
    assert choose_backend("auto", INTEL) == "perf"


def test_toplev_env_wins_and_a_wrong_one_is_named(monkeypatch, tmp_path):
    # A checkout: toplev.py and its pyproject.toml (the installed package ships the same
    # file at the top of site-packages), without the exec bit.
    src = installed_file().parent
    checkout = tmp_path / "pmu-tools"
    checkout.mkdir()
    shutil.copy(src / "toplev.py", checkout / "toplev.py")
    (checkout / "toplev.py").chmod(0o644)
    shutil.copy(src / "pyproject.toml", checkout / "pyproject.toml")
    monkeypatch.setenv("TOPLEV", str(checkout / "toplev.py"))
    cmd = toplev.find_toplev()
    assert cmd[-1] == str(checkout / "toplev.py") and len(cmd) == 2     # run by a Python
    assert toplev.toplev_version(cmd) == pinned()
    # auto takes a toplev the user pointed at
    assert choose_backend("auto", INTEL) == "toplev"
    (checkout / "pyproject.toml").unlink()
    assert toplev.describe(cmd) == f"toplev (version unknown) at {' '.join(cmd)}"
    monkeypatch.setenv("TOPLEV", str(tmp_path / "nowhere" / "toplev.py"))
    assert toplev.find_toplev() is None     # never replaced by the installed one
    assert toplev.missing() == (f"toplev not found: $TOPLEV={tmp_path}/nowhere/toplev.py is no "
                                "file and no command on PATH")


def test_a_wheel_in_another_venv_says_its_version(monkeypatch, tmp_path):
    """TOPLEV= pointing into another venv's site-packages: the dist-info beside it."""
    src = installed_file().parent
    site = tmp_path / "site-packages"
    site.mkdir()
    shutil.copy(src / "toplev.py", site / "toplev.py")
    info = next(src.glob("pmu_tools-*.dist-info"))
    shutil.copytree(info, site / info.name)
    monkeypatch.setenv("TOPLEV", str(site / "toplev.py"))
    cmd = toplev.find_toplev()
    assert cmd == [str(site / "toplev.py")]          # executable as installed
    assert toplev.toplev_version(cmd) == pinned()


def test_nothing_anywhere_is_said(monkeypatch, no_toplev_on_path):
    monkeypatch.setattr(toplev, "_dist_toplev", lambda: None)
    monkeypatch.setattr(toplev, "_venv_toplev", lambda venv=None: None)
    assert toplev.find_toplev() is None
    assert toplev.missing() == ("toplev not found (no $TOPLEV, not on PATH, pmu-tools not "
                                "installed in the venv)")


def test_doctor_runs_toplev_and_says_when_it_does_not(monkeypatch, tmp_path):
    """doctor's toplev row on an Intel host with a PMU: the installed toplev lists its
    model's nodes offline; a toplev that does not run is not available, in its own words."""
    from collectors import doctor
    from tests.test_cpu_models import MODELS, recorded_facts
    icx = next(m for m in MODELS if m.folder == "intel-icelake-xeon8358")
    facts = recorded_facts(icx, pmu_counts=True)
    monkeypatch.delenv("TOPLEV", raising=False)
    monkeypatch.setattr(doctor, "find_toplev", lambda: toplev.installed_toplev())
    rows = {c.name: c for c in doctor.check_tma(facts)}
    row = rows["TMA via toplev"]
    assert row.available and row.detail.endswith("(its icx model lists 106 nodes): ready")
    assert rows["toplev"].available and rows["toplev"].detail.endswith("(its icx model lists 106 nodes)")
    # a checkout left half-copied: the first half of the real toplev.py
    half = tmp_path / "toplev.py"
    text = installed_file().read_text()
    half.write_text(text[:len(text) // 2])
    monkeypatch.setattr(doctor, "find_toplev", lambda: [sys.executable, str(half)])
    rows = {c.name: c for c in doctor.check_tma(facts)}
    for row in (rows["toplev"], rows["TMA via toplev"]):
        assert not row.available
        assert ", which does not run: `" in row.detail and "listed no nodes (exit code" in row.detail
        assert row.fix.startswith("make setup (reinstalls pmu-tools)")
