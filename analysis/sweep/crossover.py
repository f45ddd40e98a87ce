"""Where the change turns from noise into a gain (or a loss): per series of points along the
plot's axis, the first point from which every verdict to the end is the same decisive one.

A series is the set of points that share the labels of every other axis. Data only; the
renderers word it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from analysis.sweep.results import PointRow, SweepResults

DECISIVE = ("improvement", "regression")


@dataclass
class Series:
    labels: dict[str, str]           # the other axes' values
    points: list[PointRow] = field(default_factory=list)   # ordered along the x axis

    @property
    def name(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.labels.items())


@dataclass
class Crossover:
    series: Series
    verdict: str                     # improvement | regression | "" (none)
    at: str | None = None            # first x label of the run of that verdict to the end
    before: str | None = None        # the x label just before it (None: from the first point)


def _order(res: SweepResults, x: str) -> dict[str, int]:
    return {v: i for i, v in enumerate(res.axis(x).values)}


def series(res: SweepResults) -> list[Series]:
    """The points grouped by the other axes, each group ordered along res.x_axis."""
    x = res.x_axis
    if x is None:
        return [Series({}, list(res.points))]
    order = _order(res, x)
    groups: dict[tuple, Series] = {}
    for p in res.points:
        key = tuple((a.name, p.labels.get(a.name, "")) for a in res.axes if a.name != x)
        groups.setdefault(key, Series(dict(key))).points.append(p)
    for s in groups.values():
        s.points.sort(key=lambda p: order.get(p.labels.get(x, ""), 0))
    return list(groups.values())


def _verdict(p: PointRow) -> str:
    return p.metric.change.verdict if p.metric is not None else ""


def crossovers(res: SweepResults) -> list[Crossover]:
    out = []
    x = res.x_axis
    for s in series(res):
        verdicts = [_verdict(p) for p in s.points]
        if not verdicts or verdicts[-1] not in DECISIVE or x is None:
            out.append(Crossover(s, ""))
            continue
        i = len(verdicts) - 1
        while i > 0 and verdicts[i - 1] == verdicts[-1]:
            i -= 1
        before = s.points[i - 1].labels.get(x) if i > 0 else None
        out.append(Crossover(s, verdicts[-1], s.points[i].labels.get(x), before))
    return out


def sentence(c: Crossover, x: str | None, direction: str = "") -> str:
    """Plain text: 'value=10: an improvement from keys=1M on (noise at keys=100K)'."""
    head = f"{c.series.name}: " if c.series.name else ""
    if not c.verdict:
        last = c.series.points[-1] if c.series.points else None
        v = _verdict(last) if last else ""
        return head + (f"no gain or loss established at the last point ({v or 'no data'})")
    what = "an improvement" if c.verdict == "improvement" else "a regression"
    if c.before is None:
        return head + f"{what} at every point{direction}"
    return head + f"{what} from {x}={c.at} on; not at {x}={c.before}{direction}"
