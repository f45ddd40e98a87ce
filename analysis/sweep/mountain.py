"""The memory mountain of a server: each focus function's out-of-cache CPU time per operation
against the dataset's size, from a sweep over a keyspace axis (docs/sweeps.md).

The point with the fewest keys is the in-cache reference: at every other point a function's
flat cost per operation minus the reference's is its out-of-cache cost there (the method of
docs/statistics.md, "Memory stalls without a PMU", with the sweep's smallest point as the
control), per variant, with a Welch 95% interval per cell (the cells are a picture, not a
family of verdicts). Where the reference itself is not in cache (a sweep whose smallest
point outgrows the cache), every cell is low by the reference's own stall; the table says
which point it is.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from analysis.compare import stall_stats as st
from analysis.compare.results import Results
from analysis.compare.stall_section import Interval

LEVEL = 0.95


@dataclass
class MountainCell:
    point: str                       # the point's id
    keys: int
    base: Interval | None = None     # base's out-of-cache cost there (ns/op); None: not measured
    cand: Interval | None = None


@dataclass
class MountainRow:
    function: str
    group: str = ""                  # the other axes' values ("value=10"); "" in a one-axis sweep
    reference: str = ""              # the group's in-cache point (its fewest keys)
    reference_keys: int = 0
    cells: list[MountainCell] = field(default_factory=list)


@dataclass
class Mountain:
    available: bool
    reason: str = ""
    reference_keys: int = 0          # the smallest reference's keys
    command: str = ""                # what one operation is
    level: float = LEVEL
    rows: list[MountainRow] = field(default_factory=list)


def _flat_ns(r: Results, fn: str, side: str) -> list[float] | None:
    row = next((f for f in r.profile.focus if f.name == fn), None)
    s = getattr(row, f"{side}_flat_ns", None) if row is not None else None
    return list(s.values) if s is not None and len(s.values) >= 2 else None


def mountain(points: list[tuple[str, str, int, Results | None]], keyspace_axis: bool) -> Mountain:
    """`points`: (id, group, keys, the point's comparison or None) of every point of the sweep;
    the group names the point's values of the axes other than the keys ("" for none)."""
    if not keyspace_axis:
        return Mountain(False, "a memory mountain needs a sweep along dataset.keys")
    groups: dict[str, list[tuple[str, int, Results]]] = {}
    for pid, group, keys, r in points:
        if r is not None and r.profile.per_op:
            groups.setdefault(group, []).append((pid, keys, r))
    groups = {g: sorted(v, key=lambda t: t[1]) for g, v in groups.items() if len(v) >= 2}
    if not groups:
        return Mountain(False, "fewer than two points of one group with CPU time per operation")
    first = next(iter(groups.values()))[0][2]
    out = Mountain(True, command=first.profile.per_op_command,
                   reference_keys=min(v[0][1] for v in groups.values()))
    for group, measured in groups.items():
        out.rows += _rows(group, measured)
    return out


def _rows(group: str, measured: list[tuple[str, int, Results]]) -> list[MountainRow]:
    ref_id, ref_keys, ref = measured[0]
    rows = []
    for fn in [f.name for f in ref.profile.focus]:
        row = MountainRow(fn, group, ref_id, ref_keys)
        for pid, keys, r in measured[1:]:
            cell = MountainCell(pid, keys)
            for side in ("base", "cand"):
                big, small = _flat_ns(r, fn, side), _flat_ns(ref, fn, side)
                if big is not None and small is not None:
                    setattr(cell, side, st.interval(st.difference(st.mean_of(big), st.mean_of(small)), LEVEL))
            row.cells.append(cell)
        if any(c.base is not None for c in row.cells):
            rows.append(row)
    return rows
