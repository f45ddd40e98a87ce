"""An experiment's seed column: the published numbers of the seed (a PR or post), put beside
our row of the same setup, and whether the direction of the change agrees.

The seed rows come from the experiment file (cases/experiments/*.yaml) and are copied into
experiment.json, so an experiment directory is read alone. A seed row names the labels of
the point it stands beside (`at`); at a size where the labels differ (CI's small size has
other key counts) it stands beside the points that match the most of its labels, and
beside none that shares no label with it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from analysis.inputs.records import Record
from analysis.power import POWER
from analysis.sweep.results import PointRow

# A seed's change within this many % is "no gain" (the seeds' own 3% waterline).
SEED_NOISE = 0.03
# The seeds call a change under their 3% waterline flat; ours under our lines (minor, but
# decided) is compared on the same terms.
OURS = {"improvement": "gain", "regression": "loss", "no change": "flat",
        "minor improvement": "flat", "minor regression": "flat"}


@dataclass
class SeedRow(Record):
    at: dict[str, str] = field(default_factory=dict)   # axis -> value label of our point
    setup: str = ""                  # the seed's own setup, as it wrote it ("10M × 100 B")
    base: float | None = None        # the seed's baseline and candidate, in `unit`
    cand: float | None = None
    gain: float = 0.0                # the seed's change as a gain: +0.043 = 4.3% better
    unit: str = ""

    @property
    def direction(self) -> str:
        if self.gain >= SEED_NOISE:
            return "gain"
        if self.gain <= -SEED_NOISE:
            return "loss"
        return "flat"


def match(rows: list[SeedRow], labels: dict[str, str]) -> SeedRow | None:
    """The seed row beside a point: every label of `at` that the point has must agree, at
    least one must be shared (a row that names none of the point's axes says nothing of it),
    and the row agreeing on the most labels wins (the first on a tie). A row with an empty
    `at` stands beside every point."""
    best, score = None, -1
    for r in rows:
        shared = [k for k in r.at if k in labels]
        if any(labels[k] != r.at[k] for k in shared) or (r.at and not shared):
            continue
        if len(shared) > score:
            best, score = r, len(shared)
    return best


def seed_change(p: PointRow, seed: SeedRow) -> float:
    """The seed's change as our metric's relative change (cand / base - 1): a load time
    that fell 10.9% is -0.109 here, a throughput that rose 4.3% is +0.043."""
    if seed.base and seed.cand:
        return seed.cand / seed.base - 1
    higher = p.metric.higher_is_better if p.metric is not None else True
    return seed.gain if higher else -seed.gain


def _holds_seed(p: PointRow, seed: SeedRow) -> bool:
    ch = p.metric.change if p.metric is not None else None
    if ch is None or ch.rel_ci_low is None or ch.rel_ci_high is None:
        return False
    return ch.rel_ci_low <= seed_change(p, seed) <= ch.rel_ci_high


def _below(p: PointRow, seed: SeedRow) -> bool:
    """The seed's change is smaller than the smallest change our run could establish."""
    d = p.metric.change.detectable if p.metric is not None else None
    return d is not None and abs(seed_change(p, seed)) < d


def agreement(p: PointRow, seed: SeedRow | None) -> str:
    """yes | no | below (the seed's change is smaller than what our run could see) |
    undecided (our interval did not decide) | "" (no seed row). "No change" whose interval
    also holds the seed's change is not a disagreement: below what the run could see when
    the seed's change is smaller than our detectable size, else undecided."""
    if seed is None:
        return ""
    if p.metric is None:
        return "undecided"
    ours = OURS.get(p.metric.change.verdict)
    quiet = ours is None or (ours == "flat" and seed.direction != "flat" and _holds_seed(p, seed))
    if quiet:
        return "below" if _below(p, seed) else "undecided"
    return "yes" if ours == seed.direction else "no"


def _num(v: float | None, unit: str, show_unit: bool = True) -> str:
    if v is None:
        return ""
    text = f"{v:,.3f}" if unit == "s" else f"{v:,.0f}"
    return f"{text} {unit}" if show_unit and unit else text


def seed_cell(seed: SeedRow | None) -> str:
    """'+3.7% (10M × 100 B: 127,689 → 132,416 ops/s)'."""
    if seed is None:
        return "—"
    sign = "+" if seed.gain >= 0 else "−"
    nums = ""
    if seed.base is not None and seed.cand is not None:
        nums = f": {_num(seed.base, seed.unit, False)} → {_num(seed.cand, seed.unit)}"
    return f"{sign}{abs(seed.gain) * 100:.1f}% ({seed.setup}{nums})"


def agree_cell(p: PointRow, seed: SeedRow | None) -> str:
    a = agreement(p, seed)
    if not a:
        return ""
    if a == "below":
        return (f"below what this run could see (the seed's {seed_change(p, seed) * 100:+.1f}%; "
                f"ours could see ±{p.metric.change.detectable * 100:.1f}% ({POWER:.0%} power))").replace("-", "−")
    if a == "undecided":
        ours = p.metric.change.verdict if p.metric else "no data"
        if ours == "no change":
            return (f"undecided (ours: no change; our interval also holds the seed's "
                    f"{seed_change(p, seed) * 100:+.1f}%)".replace("-", "−"))
        return f"undecided (ours: {ours})"
    return f"{a} (seed: {seed.direction})"
