"""The rep order of a run: ABBA-interleaved reps, so slow drift of the machine hits every
variant alike. Throughput (or paired) reps first, then the separate profile reps."""
from __future__ import annotations

from analysis.inputs.manifest import Rep
from collectors.runner.layouts import rep_layout
from collectors.runner.options import RunOptions


def interleave(variants: list[str], reps: int) -> list[str]:
    """A B B A A B ...: block i runs the variants rotated by i, so each variant takes each
    position equally often and slow drift hits all of them alike."""
    order: list[str] = []
    n = len(variants)
    for i in range(reps):
        k = i % n
        order += variants[k:] + variants[:k]
    return order


def build_rep_order(variants: list[str], opts: RunOptions, workload_tool: str) -> list[Rep]:
    """Every rep of the run in execution order; reps are numbered per variant across kinds."""
    counters = {v: 0 for v in variants}
    sched: list[Rep] = []

    def add(v: str, kind: str) -> None:
        counters[v] += 1
        sched.append(Rep(variant=v, rep=counters[v], kind=kind))

    if opts.paired:
        # --layouts N: --reps reps on each layout, the layouts taking turns (layouts.py)
        for i in range(opts.reps * opts.layouts):
            sched.append(Rep(variant="paired", rep=i + 1, kind="paired", layout=rep_layout(opts, i)))
    else:
        for v in interleave(variants, opts.reps):
            add(v, "throughput")
    # rdb-load measures the server start: there is no steady window to profile.
    if opts.profile != "off" and workload_tool != "rdb-load":
        for v in interleave(variants, opts.profile_reps):
            add(v, "profile")
    return sched
