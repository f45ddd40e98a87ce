"""`stallscope experiment --only PART[:AXIS=VALUE,...]`: run some rows of an experiment, not
all of them. A seed row that one run left undecided is re-run alone (for example with
--precision) without paying for the rows that were decided; the report then holds only the
selected rows, each beside its seed row as in a whole run.

A selector names a part by its id and, optionally, the axis values its points must have
(`load:value=10,keys=10M`); values are matched as the plan labels them (`10M`, not
`10000000`). Selectors are OR-ed; a part no selector names is left out."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from collectors.sweep.plan import Plan, PlanError


@dataclass
class Selector:
    part: str
    labels: dict[str, str] = field(default_factory=dict)
    text: str = ""

    def matches(self, labels: dict[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.labels.items())


def parse_selector(text: str) -> Selector:
    part, _, rest = text.partition(":")
    if not part.strip():
        raise PlanError(f"--only {text!r}: give PART or PART:AXIS=VALUE[,AXIS=VALUE] "
                        "(e.g. --only load:value=10,keys=10M)")
    labels: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        k, eq, v = item.partition("=")
        if not eq or not k.strip() or not v.strip():
            raise PlanError(f"--only {text!r}: {item!r} is not AXIS=VALUE")
        labels[k.strip()] = v.strip()
    return Selector(part.strip(), labels, text)


Keep = Callable[[dict[str, str]], bool]


def select(parts: Sequence[str], plans: Sequence[Plan], texts: Sequence[str]) -> dict[int, Keep | None]:
    """The parts to run, by index, each with the test its points must pass (None: all of
    them), for make_plan's `keep`: a part is planned again with only those points, so
    its estimates (which point writes a shared dataset) are those of the points that run.
    PlanError when a selector names no part or matches no point, listing what exists."""
    if not texts:
        return {i: None for i in range(len(plans))}
    sels = [parse_selector(t) for t in texts]
    for s in sels:
        if s.part not in parts:
            raise PlanError(f"--only {s.text!r}: no part {s.part!r} (parts: {', '.join(parts)})")
        plan = plans[parts.index(s.part)]
        if not any(s.matches(p.spec.labels) for p in plan.points):
            have = "; ".join(",".join(f"{k}={v}" for k, v in p.spec.labels.items())
                             for p in plan.points)
            raise PlanError(f"--only {s.text!r}: no point of part {s.part!r} has those values "
                            f"(its points: {have})")
    kept: dict[int, Keep | None] = {}
    for i, part in enumerate(parts):
        mine = [s for s in sels if s.part == part]
        if mine:
            kept[i] = lambda labels, mine=mine: any(s.matches(labels) for s in mine)
    return kept
