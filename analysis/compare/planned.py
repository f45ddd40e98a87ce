"""What `--precision P --on FUNCTION[:flat|cum]` narrows: the function's CPU time per
operation in each paired rep, taken exactly as the row the report prints for it.

The run's plan (collectors/runner/precision.py, Stein's two-stage design) sets its reps
from the spread of these log ratios, and the printed row's two-stage interval is made of
them, so both must read the same numbers: the same thread view (the main thread when
io-threads hold samples, `profiles.choose_thread`, as `stallscope compare` chooses by
default; until 2026-11-28 the plan read all threads while the row was judged in the main
thread's view) and the same rule for a rep with no sample of the function (half a sample
added to every rep of both sides, analysis/counting.py; the plan used to drop such reps,
keeping the ones where the function happened to be sampled).
"""
from __future__ import annotations

import math

from analysis.compare import profile_reps, profiles
from analysis.inputs.rundir import RunDir


def function_log_ratios(run: RunDir, base: str, cand: str, fn: str, measure: str = "cum"
                        ) -> list[float]:
    """Each paired rep's log ratio cand/base of fn's flat or cumulative CPU time per
    operation, in rep order, in the thread view its row is judged in (the default view:
    a report asked for another with `--thread` judges the row there). Empty when the run's
    paired reps hold no profiles yet or fn has no sample in any of them."""
    reps = profile_reps.paired_profiles(run, (base, cand))
    if not reps[base] or not reps[cand]:
        return []
    names = profiles.main_names(run)
    thread, _ = profiles.choose_thread(reps, None, base, cand, names)
    sh = profiles.shares(reps, thread, names)
    if not any(fn in costs for v in (base, cand) for _, costs in sh[v]):
        return []
    factors = {v: {r.rep: 1.0 / r.ops.ops for r in reps[v]} for v in (base, cand)}
    weights = {v: {r.rep: r.sample_weight for r in reps[v]} for v in (base, cand)}
    b, c = profiles.cost_values(fn, measure, sh, weights, factors, base, cand)
    # a rep left at 0 only when sample weights are unknown (no correction is possible)
    return [math.log(y / x) for x, y in zip(b, c) if x > 0 and y > 0]
