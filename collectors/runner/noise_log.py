"""After a run: keep its spread as this host's noise (collectors/host/noise.py), so that
plans know how many reps a change needs here. Paired runs and runs of A/B blocks count;
a failure to read or write the store never fails the run (it is a cache)."""
from __future__ import annotations

from analysis.compare.throughput import main_log_ratios
from analysis.inputs.rundir import RunDir
from collectors.host import noise
from collectors.runner.context import RunContext
from collectors.runner.new_manifest import rep_seconds


def keep(run: RunContext) -> bool:
    m = run.manifest
    names = list(run.variants)
    if m.pairing is None or len(names) != 2:
        return False
    try:
        ratios = main_log_ratios(RunDir(run.run_dir, m), names[0], names[1])
    except (OSError, ValueError):
        return False
    kind = "paired" if m.paired is not None else "throughput"
    secs = [s for r in m.schedule if r.kind == kind and r.status == "ok"
            if (s := rep_seconds(r)) is not None]
    per_unit = 1 if kind == "paired" else len(names)      # a block is one rep of each variant
    try:
        return noise.record(m.host, run.case.name, run.case.size,
                            noise.entry(m.run_id, m.pairing.mode, m.pairing.aa, ratios,
                                        [s * per_unit for s in secs], m.created))
    except OSError:
        return False
