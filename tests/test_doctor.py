"""doctor, for real on this machine: no PMU (TMA unavailable), cpu-clock sampling works."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from collectors import doctor
from commands import doctor as doctor_command
from tests.conftest import no_pmu_only
from tests.test_parca import FakeParca, _free_port


@pytest.fixture(scope="module")
def report(repo_root):
    env = dict(os.environ, PYTHONPATH=str(repo_root))
    env.pop("STALLSCOPE_PARCA_URL", None)
    env.pop("TOPLEV", None)     # the toplev `make setup` installed, as on a fresh clone:
    # a toplev of the developer's own on PATH (a pmu-tools checkout) is left out too
    env["PATH"] = os.pathsep.join(
        d for d in env.get("PATH", "").split(os.pathsep)
        if d.startswith(sys.prefix) or not any(os.path.isfile(os.path.join(d, n)) for n in ("toplev", "toplev.py")))
    p = subprocess.run([sys.executable, "-m", "collectors", "doctor", "--json"], cwd=repo_root,
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    return {c["name"]: c for c in json.loads(p.stdout)}


@pytest.mark.heavy
def test_lists_every_collector(report):
    assert list(report) == ["perf", "cpu-clock sampling", "call graphs (fp)", "call graphs (dwarf)",
                            "TMA via perf", "toplev", "TMA via toplev", "inferno", "build toolchain",
                            "redis-benchmark/valkey-benchmark", "memtier_benchmark", "parca",
                            "chromium (HTML report test)"]


@no_pmu_only
def test_tma_unavailable_because_no_pmu(report):
    from collectors.host.cpuid import identify_file
    tma = report["TMA via perf"]
    assert tma["available"] is False
    # A CPU without a top-down tree (AMD Zen 3 ...) says that first; the PMU comes next.
    cpu = identify_file()
    first = "" if cpu.has_tree else f"{cpu.no_tree_reason}; "
    vm = (" (this is a VM: the hypervisor does not expose the PMU)"
          if "hypervisor" in open("/proc/cpuinfo").read() else "")
    assert tma["detail"].startswith(f"{first}no hardware PMU{vm}: `perf stat -e cycles` printed "
                                    f"'<not supported>,,cycles"), tma["detail"]
    assert "pmu=on" in tma["fix"]
    assert report["TMA via toplev"]["available"] is False
    assert "no hardware PMU" in report["TMA via toplev"]["detail"]


def test_toplev_found_with_its_version(report):
    """After `make setup` doctor finds toplev with no $TOPLEV: the pmu-tools release
    requirements.txt pins, in the venv."""
    from tests.test_toplev_install import pinned
    row = report["toplev"]
    assert row["available"] is True and row["fix"] is None, row
    assert row["detail"].startswith(f"toplev (pmu-tools {pinned()}) at "), row
    assert "toplev.py" in row["detail"]
    # the TMA row says the same toplev, and why it cannot count here when it cannot
    detail = report["TMA via toplev"]["detail"]
    assert detail.startswith(row["detail"]), detail
    assert "git clone" not in (report["TMA via toplev"]["fix"] or "")


def test_cpu_clock_sampling_available(report):
    s = report["cpu-clock sampling"]
    assert s["available"] is True
    n = int(s["detail"].split(": ")[1].split()[0])
    assert n > 10  # 0.1 s at 999 Hz; a shared 2-core box still gets dozens
    assert report["call graphs (fp)"]["available"] is True
    # doctor names the perf this machine runs (read here from perf itself, so a perf
    # upgrade changes both sides and a misread version fails)
    import re
    import shutil
    printed = subprocess.run([shutil.which("perf") or "perf", "version"], capture_output=True,
                             text=True, timeout=30).stdout
    version = re.search(r"\d+\.\d+(?:\.\d+)?", printed).group(0)
    assert report["perf"]["detail"].startswith(f"perf {version}"), (report["perf"], printed)


def test_parca_skipped_unless_configured(report):
    p = report["parca"]
    assert p["available"] is False and "network check skipped" in p["detail"]


def test_parca_checked_when_configured():
    url = f"http://127.0.0.1:{_free_port()}"
    c = doctor.check_parca(url, None)
    assert not c.available and c.detail.startswith(f"cannot reach Parca at {url}: connection refused")
    with FakeParca({"/api/profiles/types": (500, b'{"code":13,"message":"store unavailable"}')}) as srv:
        c = doctor.check_parca(srv.url, None)
    assert not c.available
    assert c.detail == f"Parca at {srv.url}/api/profiles/types answered HTTP 500: store unavailable"


def test_table_and_strict(capsys, monkeypatch):
    monkeypatch.setattr(doctor, "run_checks", lambda *a: [
        doctor.Check("perf", True, "perf 6.1.187"),
        doctor.Check("TMA via perf", False, "no hardware PMU", "bare metal")])
    assert doctor_command.main([]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2] == "perf          available      perf 6.1.187"
    assert out[3] == "TMA via perf  NOT available  no hardware PMU"
    assert out[4].strip() == "fix: bare metal"
    assert doctor_command.main(["--strict"]) == 1
