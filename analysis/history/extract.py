"""What the history keeps of one run: results.json (docs/results-json.md) flattened into
series points, one per variant role ("base" / "cand") and metric, plus the in-run change
of each series. Series keys (docs/history.md):

  throughput:<test>           ops/s, higher is better (unpaired reps)
  paired:<test>               ops/s from paired windows
  p50 latency:<test> ...      ms
  cpu_per_op:all              CPU time per operation, all samples (ns/op)
  cpu_per_op:<function>       a focus or top function's flat CPU time per operation (ns/op)
  cum_per_op:<function>       a focus function's cumulative CPU time per operation (ns/op)
  flat_share:<function>       % of samples, flat (focus and top functions); cum_share:<function>
                              cumulative (focus functions)
  tma:<node>                  a TMA node (% of its domain)
  new:<function>, gone:<function>   in-run changes only: a top mover the run calls new in
                              the candidate (or gone from it), its own CPU time per operation
                              as a share of the baseline's whole (rel), no interval

Values are the side's median; low/high the spread of its reps (min, max). Fields a newer
results.json adds are ignored, fields an older one lacks leave their series out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator


@dataclass(frozen=True)
class Point:
    series: str
    variant: str                 # "base" | "cand": the role, stable across runs of a job
    value: float
    low: float | None
    high: float | None
    n: int
    unit: str
    higher_is_better: bool
    values: list[float] | None = None     # the reps' values, when results.json lists them


@dataclass(frozen=True)
class InRunChange:
    series: str
    rel: float | None            # cand vs base, a ratio - 1 on the log scale
    rel_low: float | None
    rel_high: float | None
    verdict: str


def _side(series: str, variant: str, side: Any, unit: str, hib: bool) -> Point | None:
    if not isinstance(side, dict) or side.get("median") is None or not side.get("n"):
        return None
    vals = side.get("values")
    vals = [float(v) for v in vals if isinstance(v, (int, float))] if isinstance(vals, list) else None
    return Point(series, variant, float(side["median"]), _f(side.get("min")), _f(side.get("max")),
                 int(side.get("n") or 0), unit, hib, vals)


def _f(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) else None


def _change(series: str, ch: Any) -> InRunChange | None:
    if not isinstance(ch, dict):
        return None
    return InRunChange(series, _f(ch.get("rel")), _f(ch.get("rel_ci_low")), _f(ch.get("rel_ci_high")),
                       str(ch.get("verdict") or ""))


def _rows(results: dict) -> Iterator[tuple[str, dict, dict, Any, str, bool]]:
    """(series, base side, cand side, change, unit, higher_is_better) of every metric row."""
    for key, prefix in (("throughput", "throughput"), ("paired", "paired"), ("latency", None)):
        for row in results.get(key) or []:
            name = f"{prefix or row.get('metric', 'latency')}:{row.get('test', '')}"
            yield (name, row.get("base"), row.get("cand"), row.get("change"), row.get("unit", ""),
                   bool(row.get("higher_is_better", key != "latency")))
    prof = results.get("profile") or {}
    total = prof.get("per_op_total")
    if isinstance(total, dict):
        yield ("cpu_per_op:all", total.get("base"), total.get("cand"), total.get("change"),
               total.get("unit", "ns/op"), False)
    for f in prof.get("focus") or []:
        name = f.get("name", "")
        for series, b, c, ch, unit in (
                (f"cpu_per_op:{name}", "base_flat_ns", "cand_flat_ns", "flat_ns_change", "ns/op"),
                (f"cum_per_op:{name}", "base_cum_ns", "cand_cum_ns", "cum_ns_change", "ns/op"),
                (f"flat_share:{name}", "base_flat", "cand_flat", "flat_change", "%"),
                (f"cum_share:{name}", "base_cum", "cand_cum", "cum_change", "%")):
            yield series, f.get(b), f.get(c), f.get(ch), unit, False
    # The run's top functions (its top movers: every function with a share of the CPU
    # large enough to be one, ranked by how much it moved): their flat cost per operation
    # and share, so each is a series of its own (function_series.py tests them together).
    for f in prof.get("movers") or []:
        name = f.get("name", "")
        if any(g.get("name") == name for g in prof.get("focus") or []):
            continue
        for series, b, c, ch, unit in (
                (f"cpu_per_op:{name}", "base_flat_ns", "cand_flat_ns", "flat_ns_change", "ns/op"),
                (f"flat_share:{name}", "base_flat", "cand_flat", "flat_change", "%")):
            yield series, f.get(b), f.get(c), f.get(ch), unit, False
    funnel = (results.get("tma") or {}).get("funnel") or {}
    for row in funnel.get("rows") or []:
        ch = {"rel": None, "verdict": row.get("verdict", "")}
        yield (f"tma:{row.get('node', '')}", row.get("base"), row.get("cand"), ch,
               row.get("unit") or "%", bool(row.get("higher_is_better")))


def one_sided(results: dict) -> list[InRunChange]:
    """The top movers the run calls new in the candidate or gone: new code's own price is
    what moved when, say, a commit swaps in a slower hash function; a relative change of a
    cost that was 0 has no ratio, so it is given against the baseline's whole CPU time per
    operation (+0.47: the new function costs 47% of what every operation cost before)."""
    prof = results.get("profile") or {}
    total = ((prof.get("per_op_total") or {}).get("base") or {}).get("median")
    out = []
    for f in prof.get("movers") or []:
        verdict = (f.get("flat_verdict") or {}).get("verdict")
        if verdict not in ("new in candidate", "gone") or not total:
            continue
        side = f.get("cand_flat_ns" if verdict == "new in candidate" else "base_flat_ns") or {}
        if side.get("median") is None:
            continue
        sign = 1 if verdict == "new in candidate" else -1
        prefix = "new" if sign > 0 else "gone"
        out.append(InRunChange(f"{prefix}:{f.get('name', '')}", sign * float(side["median"]) / float(total),
                               None, None, verdict))
    return out


def extract(results: dict) -> tuple[list[Point], list[InRunChange]]:
    points, changes = [], []
    for series, base, cand, ch, unit, hib in _rows(results):
        for variant, side in (("base", base), ("cand", cand)):
            p = _side(series, variant, side, unit, hib)
            if p is not None:
                points.append(p)
        c = _change(series, ch)
        if c is not None and (base or cand):
            changes.append(c)
    return points, changes + one_sided(results)
