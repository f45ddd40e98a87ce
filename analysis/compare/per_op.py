"""CPU time per operation: a function's CPU time in a profile rep divided by the
operations the load generator completed while perf was attached.

Shares dilute (one function's gain raises every other share); ns per operation does not.
It is given only when every profile rep of both sides has an operation count: a median
over some reps only would compare different things.
"""
from __future__ import annotations

from dataclasses import dataclass

from analysis.compare.options import CompareOptions
from analysis.compare.profile_reps import ProfileRep
from analysis.compare.results import MetricRow
from analysis.compare.throughput import bench_rows, case_command, metric_row
from analysis.inputs.rundir import RunDir
from analysis.profile.stacks import view

# variant -> rep -> 1 / operations of the rep's window: weight (ns) × factor = ns/op
Factors = dict[str, dict[int, float]]


@dataclass
class PerOp:
    """What the profile section says about CPU time per operation."""
    factors: Factors | None
    reason: str = ""                 # why there is none
    command: str = ""                # what one operation is ("MSET")
    basis: str = ""                  # how the operations were counted
    ops: dict[str, list[float]] | None = None   # variant -> operations per rep
    total: MetricRow | None = None   # all samples of the view, ns/op


def op_command(run: RunDir, reps: dict[str, list[ProfileRep]]) -> str:
    """What one operation is, for "ns per MSET": the command of the profile reps' test."""
    for r in (r for v in reps for r in reps[v]):
        try:
            rows = bench_rows(r.dir, case_command(run))
        except (ValueError, OSError):
            continue
        if rows and rows[0].test:
            return rows[0].test.split()[0].upper()
    cmd = case_command(run)
    return cmd[0].upper() if cmd else "operation"


def per_op(run: RunDir, reps: dict[str, list[ProfileRep]], base: str, cand: str, thread: str,
           main_names: tuple[str, ...], opts: CompareOptions, paired: bool = False) -> PerOp:
    """The per-operation factors of every profile rep, and the all-samples row of the view."""
    if run.manifest.case.workload.tool == "rdb-load":
        return PerOp(None, "an rdb-load case has no load-generator operations")
    every = [r for v in (base, cand) for r in reps[v]]
    bad = sorted({r.ops.basis for r in every if r.ops.ops is None})
    if bad:
        return PerOp(None, "; ".join(bad))
    if any(not r.ops.ops for r in every):
        return PerOp(None, "a profile rep completed no operations")
    factors = {v: {r.rep: 1.0 / r.ops.ops for r in reps[v]} for v in (base, cand)}
    tot = {v: [(r.rep, view(r.stacks, thread, main_names).total * factors[v][r.rep])
               for r in reps[v]] for v in (base, cand)}
    total = metric_row("all samples", "CPU time per operation", "ns/op", False,
                       tot[base], tot[cand], opts, paired=paired)
    return PerOp(factors, command=op_command(run, reps),
                 basis="; ".join(sorted({r.ops.basis for r in every})),
                 ops={v: [r.ops.ops for r in reps[v]] for v in (base, cand)}, total=total)
