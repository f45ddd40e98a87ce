"""`stallscope doctor`: which collectors work on this machine, and why not.

Every check is real: it finds the binary, asks its version, and for perf really samples a
0.1 s busy loop (cpu-clock, then with frame-pointer and DWARF call graphs). TMA checks
reuse the preflight (collectors/host/preflight.py), which identifies the CPU and names its
top-down method (Intel TMA, AMD Zen 4/5 pipeline utilization, Arm top-down) and why it
cannot count here. Informational: exit code 0 unless --strict.
It sits above the packages it checks (host, build, profilers), and its perf row judges by
the rule a run's preflight refuses by (collectors/runner/preflight_run.py); the command is commands/doctor.py.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from analysis.tma.catalog import DEFAULT_MODEL
from analysis.toolpaths import which_tool
from collectors.variants.builder import cache_dir
from collectors.host import versions
from collectors.host.toplev import ToplevError, find_toplev, listing, missing as toplev_missing
from collectors.host.toplev import describe as describe_toplev
from collectors.host import preflight as pre
from collectors.profilers.parca.client import DEFAULT_URL_ENV, TOKEN_ENV, ParcaClient, ParcaError
from collectors.runner import preflight_run

BUSY_LOOP = "import time\nt = time.time()\nwhile time.time() - t < 0.1: pass\n"


@dataclass
class Check:
    name: str
    available: bool
    detail: str
    fix: str | None = None


_which = which_tool   # PATH, then $CARGO_HOME/bin (inferno)


def check_perf(facts: pre.HostFacts) -> Check:
    if not facts.perf_path:
        return Check("perf", False, "perf not found on PATH (nor $PERF)",
                     "apt-get install linux-perf (Debian) / linux-tools-$(uname -r) (Ubuntu)")
    v = ".".join(map(str, facts.perf_version or ())) or "unknown version"
    who = "root" if facts.is_root else "non-root"
    # the rule a run's preflight refuses by: perf must record the server whole, kernel time too
    holder = None if facts.is_root else preflight_run.perfmon_holder()
    refused = preflight_run.judge_perf(preflight_run.Facts(paranoid=facts.paranoid, root=facts.is_root,
                                                           perfmon=holder))
    if refused:
        return Check("perf", False, f"perf {v} at {facts.perf_path}; {refused.problem}", refused.fix)
    return Check("perf", True, f"perf {v} at {facts.perf_path}; perf_event_paranoid={facts.paranoid} ({who}"
                 + (f", CAP_PERFMON: {holder}" if holder else "") + ")")


def perf_record(perf: str, extra: list[str]) -> tuple[int, str]:
    """Really record a 0.1 s busy loop; (samples, perf's last words)."""
    with tempfile.TemporaryDirectory(prefix="stallscope-doctor-") as d:
        out = Path(d) / "perf.data"
        cmd = [perf, "record", "-e", "cpu-clock", "-F", "999", *extra, "-o", str(out), "--",
               sys.executable, "-c", BUSY_LOOP]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            return 0, str(e)
        m = re.search(r"\((\d+) samples\)", p.stderr)
        last = next((l.strip() for l in reversed(p.stderr.splitlines()) if l.strip()), f"exit code {p.returncode}")
        return (int(m.group(1)) if m and p.returncode == 0 else 0), last


def check_sampling(facts: pre.HostFacts) -> list[Check]:
    if not facts.perf_path:
        why = "needs perf"
        return [Check(n, False, why, "install perf") for n in
                ("cpu-clock sampling", "call graphs (fp)", "call graphs (dwarf)")]
    out = []
    for name, extra, fix in (
            ("cpu-clock sampling", [], "see perf's message; as non-root: sysctl kernel.perf_event_paranoid=1"),
            ("call graphs (fp)", ["-g"], "build with -fno-omit-frame-pointer (stallscope builds do)"),
            ("call graphs (dwarf)", ["--call-graph", "dwarf"], "perf needs libdw/libunwind support")):
        n, last = perf_record(facts.perf_path, extra)
        what = " ".join(["perf record -e cpu-clock -F 999", *extra])
        out.append(Check(name, n > 0, f"{what}: {n} samples of a 0.1 s busy loop" if n
                         else f"{what}: no samples: {last}", None if n else fix))
    return out


def check_tma(facts: pre.HostFacts) -> list[Check]:
    """Top-down via perf, then via the vendor's other tool (toplev on Intel and AMD, where it
    refuses; topdown-tool on Arm). Each row names this CPU's method, and why it cannot count
    here when it cannot."""
    from collectors.profilers.tma.commands import find_topdown_tool
    out = []
    cpu = facts.cpu_id()
    pf = pre.evaluate(facts, "perf", "pid")
    vendor = next((f for f in pf.findings if f.check == "vendor"), None)
    method = (f"; method here: {vendor.message}" if vendor is not None and vendor.ok
              and cpu.method != "intel" else "")
    works = ("perf stat -M TopdownL1..L4 will work" if cpu.method == "intel" else
             f"{vendor.message if vendor is not None else cpu.name}: will work")
    out.append(Check("TMA via perf", pf.available,
                     works if pf.available else
                     "; ".join(f.message for f in pf.blockers) + method,
                     None if pf.available else "; ".join(f.fix for f in pf.blockers if f.fix)))
    if cpu.vendor == "arm":
        tool = find_topdown_tool()
        pt = pre.evaluate(facts, "topdown-tool", "pid", topdown_tool=tool)
        name, detail = "TMA via topdown-tool", (f"topdown-tool at {' '.join(tool)}" if tool else
                                               "topdown-tool not found (no $TOPDOWN_TOOL, not on PATH)")
        own = "topdown-tool"
    else:
        tool = find_toplev()
        pt = pre.evaluate(facts, "toplev", "cpus", tool)
        name, (detail, broken) = "TMA via toplev", toplev_detail(tool, cpu)
        own = "toplev"
        fix = "make setup (reinstalls pmu-tools), or point TOPLEV= at a toplev that runs"
        if broken:
            pt.findings.append(pre.Finding("toplev", False, broken, fix, blocking=True))
        # the tool on its own row: installed and running is worth saying where no PMU (or an
        # AMD CPU) keeps it from counting, which the TMA row below says
        runs = bool(tool) and not broken
        out.append(Check("toplev", runs, detail, None if runs else fix))
    others = "; ".join(f.message for f in pt.blockers if f.check != own)
    # toplev on AMD is refused whatever is installed: no point telling how to install it.
    refused = any(f.check == "vendor" and f.message.startswith(f"--tma {own}:") for f in pt.blockers)
    out.append(Check(name, pt.available,
                     f"{detail}: ready" if pt.available else
                     f"{detail}" + (f"; and even with {own}: {others}" if others else ""),
                     None if pt.available else "; ".join(
                         f.fix for f in pt.blockers if f.fix and not (refused and f.check == own))))
    return out


def toplev_detail(tool: list[str] | None, cpu) -> tuple[str, str | None]:
    """toplev's row (which toplev, its release) and, on Intel, whether it really runs: its
    model for this CPU lists its nodes offline (collectors/host/toplev.listing); the second
    value says why not when it does not."""
    if not tool:
        return toplev_missing(), None
    detail = describe_toplev(tool)
    if cpu.vendor != "intel":
        return detail, None
    key = cpu.catalog or DEFAULT_MODEL
    try:
        return f"{detail} (its {key} model lists {len(listing(tool, key))} nodes)", None
    except ToplevError as e:
        return f"{detail}, which does not run: {e}", str(e)


def check_inferno() -> Check:
    tools = ["inferno-collapse-perf", "inferno-flamegraph", "inferno-diff-folded"]
    missing = [t for t in tools if not _which(t)]
    if missing:
        return Check("inferno", False, f"missing: {', '.join(missing)}",
                     "make setup (cargo install --locked inferno)")
    v = versions.inferno_version()
    return Check("inferno", True, f"inferno {v or '(version unknown)'} at {Path(_which(tools[0])).parent}")


def check_toolchain() -> Check:
    need = {"gcc": "build-essential", "make": "build-essential", "dpkg-source": "dpkg-dev",
            "apt-get": "apt"}
    missing = [f"{b} (package {p})" for b, p in need.items() if not shutil.which(b)]
    if missing:
        return Check("build toolchain", False, f"missing: {', '.join(missing)}", "make setup")
    gcc = versions.version_number(["gcc", "--version"], r"\d+\.\d+(?:\.\d+)?")
    mk = versions.version_number(["make", "--version"])
    return Check("build toolchain", True, f"gcc {gcc}, make {mk}, dpkg-source and apt-get (apt-get source)")


def check_benchmarks() -> Check:
    builds = cache_dir() / "builds"
    found = sorted({str(p) for name in ("redis-benchmark", "valkey-benchmark")
                    for p in builds.glob(f"*/**/src/{name}") if p.is_file()}) if builds.is_dir() else []
    on_path = [p for p in (shutil.which("redis-benchmark"), shutil.which("valkey-benchmark")) if p]
    if found or on_path:
        where = [f"{len(found)} in builds ({builds})"] if found else []
        return Check("redis-benchmark/valkey-benchmark", True, "; ".join(where + on_path))
    return Check("redis-benchmark/valkey-benchmark", False,
                 f"none built yet (looked in {builds}) and none on PATH",
                 "stallscope build debsrc:redis (the demo builds it too)")


def check_memtier() -> Check:
    p = shutil.which("memtier_benchmark")
    if not p:
        return Check("memtier_benchmark", False, "not on PATH (optional load generator)",
                     "build github.com/RedisLabs/memtier_benchmark and put it on PATH")
    return Check("memtier_benchmark", True, f"{p} {versions.version_number([p, '--version']) or ''}".strip())


def check_parca(url: str | None, token_file: str | None) -> Check:
    url = url or os.environ.get(DEFAULT_URL_ENV)
    if not url:
        return Check("parca", False, f"not configured (no --parca-url, no ${DEFAULT_URL_ENV}); network check skipped",
                     "run parca-agent + Parca, then --parca-url URL (docs/tma-collection.md)")
    try:
        types = ParcaClient.from_env(url, token_file).profile_types()
    except ParcaError as e:
        return Check("parca", False, str(e), "check the URL/token and that the server runs")
    return Check("parca", True, f"{url}: {len(types)} profile types ({', '.join(types[:3])})")


def check_chromium() -> Check:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return Check("chromium (HTML report test)", True, f"{p} {versions.version_number([p, '--version']) or ''}".strip())
    return Check("chromium (HTML report test)", False, "no chromium/google-chrome on PATH",
                 "apt-get install chromium (make setup)")


def run_checks(parca_url: str | None = None, parca_token_file: str | None = None) -> list[Check]:
    facts = pre.probe_host()
    return [check_perf(facts), *check_sampling(facts), *check_tma(facts), check_inferno(),
            check_toolchain(), check_benchmarks(), check_memtier(),
            check_parca(parca_url, parca_token_file), check_chromium()]


def render(checks: list[Check]) -> str:
    w = max(len(c.name) for c in checks)
    lines = [f"{'collector':<{w}}  {'status':<13}  detail", f"{'-' * w}  {'-' * 13}  {'-' * 40}"]
    for c in checks:
        lines.append(f"{c.name:<{w}}  {'available' if c.available else 'NOT available':<13}  {c.detail}")
        if c.fix and not c.available:
            lines.append(f"{'':<{w}}  {'':<13}  fix: {c.fix}")
    return "\n".join(lines)
