"""What perf prints on a machine without a hardware PMU (most VMs and CI runners), so the
caller gets NoPmuError with the evidence instead of an empty tree.

Patterns from real perf 6.1 output on a KVM guest without a PMU
(fixtures/tma/perf/no_pmu_vm): with -M, perf cannot open the TMA events, silently falls
back to its default events and still exits 0.
"""
from __future__ import annotations

import re

from analysis.tma.model import NoPmuError

_HW_COUNTER = r"(?:cpu_core/|cpu_atom/)?(?P<ev>cycles|instructions|TOPDOWN\.SLOTS|topdown-[\w-]+|slots)\b"
_NOT_SUPPORTED = "perf reports '<not supported>' for the hardware counter '{ev}'"
# (pattern, evidence); the first pattern that matches a line wins.
PATTERNS = [
    (re.compile(r"Cannot find PMU [`'](?P<ev>[^`']+)'.*Missing kernel support\?"),
     "perf could not open the TMA events ('Cannot find PMU `{ev}'. Missing kernel support?')"
     " and silently fell back to its default events"),
    (re.compile(r"top down event configuration requires system-wide mode \(-a\)"),
     "perf stat --topdown refused to run ('top down event configuration requires "
     "system-wide mode (-a)'); --topdown needs -a and topdown-capable PMU events"),
    (re.compile(r"No supported events found|topdown events not supported"),
     "perf found no supported events"),
    (re.compile(r"<not supported>[\s,]+" + _HW_COUNTER), _NOT_SUPPORTED),
    (re.compile(r'"counter-value"\s*:\s*"<not supported>".*"event"\s*:\s*"' + _HW_COUNTER),
     _NOT_SUPPORTED),
]


def check(stdout: str, stderr: str, rc: int | None, source: str) -> None:
    """Raise NoPmuError if the captured streams show perf ran without a hardware PMU."""
    for stream_name, text in (("stderr", stderr), ("output", stdout)):
        for lineno, line in enumerate(text.splitlines(), 1):
            for pat, msg in PATTERNS:
                m = pat.search(line)
                if m:
                    evidence = msg.format(**m.groupdict())
                    raise NoPmuError(source, None, f"{evidence} ({stream_name} line {lineno}, "
                                     f"exit code {rc})")
