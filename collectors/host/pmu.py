"""Is there a hardware PMU, and which metric groups perf has: the one probe everybody asks.

perf is always analysis.toolpaths.perf_binary() ($PERF honoured), so the host facts,
the TMA preflight, the doctor and the collectors all judge and run the same perf.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from analysis.toolpaths import perf_binary
from collectors.host import procs


@dataclass
class CyclesProbe:
    """What `perf stat -e cycles -x, true` said about the hardware counters."""
    perf: str | None
    counts: bool | None        # True: cycles counted; False: no PMU; None: could not tell
    evidence: str              # the line perf printed for cycles (or why there is none)

    @property
    def note(self) -> str:
        """One sentence for the manifest's host block (pmu_note)."""
        if self.perf is None:
            return "perf not installed: PMU not probed"
        if self.counts:
            return f"`perf stat -e cycles` counts: {self.evidence}"
        if self.counts is False:
            return f"no hardware PMU: `perf stat -e cycles` printed '{self.evidence}'"
        return f"PMU not verified: {self.evidence}"


def probe_cycles(perf: str | None = None) -> CyclesProbe:
    """Really count `cycles` around `true`. perf exits 0 even without a PMU and prints
    `<not supported>,,cycles,...` (CSV): that line is the evidence."""
    perf = perf or perf_binary()
    if not perf:
        return CyclesProbe(None, None, "perf not found (nor $PERF)")
    argv = [perf, "stat", "-e", "cycles", "-x,", "true"]
    try:
        p = procs.run_capture(argv, timeout_s=20)
    except (procs.ToolNotFound, subprocess.TimeoutExpired, OSError) as e:
        return CyclesProbe(perf, None, f"`{' '.join(argv)}` could not run: {e}")
    text = p.stderr + p.stdout
    line = next((l.strip() for l in text.splitlines() if ",cycles" in l), "")
    if "<not supported>" in line or "<not counted>" in line:
        return CyclesProbe(perf, False, line)
    if re.match(r"^\d", line):
        return CyclesProbe(perf, True, line)
    # Permission errors and the like: no verdict about the PMU itself.
    last = next((l.strip() for l in reversed(text.splitlines()) if l.strip()),
                f"exit code {p.returncode}")
    return CyclesProbe(perf, None, last)


def metric_groups(perf: str | None = None) -> list[str] | None:
    """The metric groups `perf list metricgroups` names (PipelineL1, TopdownL1 ...); None
    when perf could not be asked. perf 6.1 prints one name a line after "Metric Groups:";
    later perfs add ": [description]" after the name."""
    perf = perf or perf_binary()
    if not perf:
        return None
    try:
        p = procs.run_capture([perf, "list", "metricgroups"], timeout_s=60)
    except (procs.ToolNotFound, subprocess.TimeoutExpired, OSError):
        return None
    if p.returncode != 0:
        return None
    return parse_metric_groups(p.stdout + "\n" + p.stderr)


def parse_metric_groups(text: str) -> list[str]:
    """The group names under "Metric Groups:" in `perf list metricgroups` output (an empty
    list when perf printed the header and nothing under it: no tables for this CPU)."""
    groups: list[str] = []
    seen = False
    for line in text.splitlines():
        if line.strip().startswith("Metric Groups:"):
            seen = True
            continue
        if seen and line.strip():
            name = line.strip().split(":", 1)[0].split()[0]
            if name not in groups:
                groups.append(name)
    return groups

