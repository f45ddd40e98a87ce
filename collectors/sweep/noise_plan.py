"""What this host's measured noise (collectors/host/noise.py) says of a sweep's plan: for
each point, the paired reps needed to resolve the change that matters there (an
experiment's seed change, or what the point's reps could resolve when there is none), and
the time that takes; for a --precision sweep, the reps its precision needs.

Printed by `stallscope sweep|experiment --plan` under the plan; nothing here changes what
runs. Without any noise measured on this host the lines say how to measure it. The sizes
are analysis/power.py's at the confidence the points will be judged at (the comparison's
setting, CompareOptions.confidence); the --precision count is the runner's own rule
(twostage.planned_reps, as collectors/runner/precision.py stops).
"""
from __future__ import annotations

import math
from typing import Callable

from analysis import power, twostage
from analysis.compare.options import CompareOptions
from analysis.intervals import level_text as level
from collectors.host import noise
from collectors.runner.progress import duration
from collectors.sweep.plan import Plan, PlannedPoint

NO_NOISE = ("noise: none measured on this host yet; an A/A run measures it (`stallscope run CASE "
            "--variant a=SPEC --variant b=SPEC`), as does any paired run or `make bench`")


def point_line(p: PlannedPoint, n: noise.Noise, plan: Plan, seed: float | None,
               confidence: float) -> str:
    o = plan.opts
    if o.precision is not None:
        need = twostage.planned_reps(n.sd, max(o.reps, twostage.MIN_PILOT), math.log1p(o.precision))
        what = f"±{o.precision:.1%} needs about {need} reps"
    elif seed is not None:
        need = power.units_to_detect(seed, n.sd, confidence)
        what = (f"the seed's {seed:+.1%} needs {need} reps" if need is not None
                else f"the seed's {seed:+.1%} is beyond reach (over 1000 reps)")
    else:
        need = None
        size = power.planned_change(o.reps, n.sd, confidence)
        what = f"{o.reps} reps see changes of about ±{size:.1%} or more"
    # the plan's estimate with its reps at this host's measured pace
    took = f", about {duration(max(p.estimate.time_s + (need - o.reps) * n.unit_s, 0))}" if need else ""
    return f"  {p.spec.id:<34} {what}{took}"


def noise_lines(plan: Plan, seed_of: Callable[[PlannedPoint], float | None] = lambda p: None,
                opts: CompareOptions | None = None) -> list[str]:
    """The plan's noise lines (`seed_of`: a point's seed change, a fraction, or None), at
    the confidence of `opts`, what the points' report will be judged with."""
    confidence = (opts or CompareOptions()).confidence
    points, host = plan.runnable, plan.host
    if not points:
        return []
    first = noise.lookup(host, points[0].case.name, plan.size, points[0].estimate.paired)
    if first is None:
        return [f"  {NO_NOISE}"]
    out = [f"  noise here: sd {first.sd:.3f} of a rep's log ratio, {first.unit_s:.0f} s a rep "
           f"({first.runs} run(s) of {first.source}, the latest {first.latest}); "
           f"{level(confidence)} confidence, {power.POWER:.0%} power:"]
    for p in points:
        n = noise.lookup(host, p.case.name, plan.size, p.estimate.paired) or first
        out.append(point_line(p, n, plan, seed_of(p), confidence))
    return out
