"""Sweep directory -> `SweepResults`: every point's run directory compared (the same
analysis.compare.engine as `stallscope compare`), reduced to its table row.

The headline of a point is what the case measures: the paired-window throughput when the
point was run paired, the throughput of the interleaved reps otherwise, and the load time
of an rdb-load case (with the best rep of each side beside it, the seeds' min-of-N).
The lookup column is one focus function's flat CPU time per operation.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from analysis.compare.engine import analyse_with_profiles
from analysis.compare.errors import CompareError
from analysis.compare.families import sweep_fdr
from analysis.compare.options import CompareOptions
from analysis.compare.results import FunctionRow, MetricRow, Results
from analysis.compare.summary import speaking_measure
from analysis.inputs.rundir import RunDir, RunDirError, load_run
from analysis.inputs.run_spread import RunSpread
from analysis.report.artifacts import write_profiles
from analysis.sweep.hosts import host_notes
from analysis.sweep.mountain import mountain
from analysis.sweep.sweep_manifest import SweepManifest, SweepPoint, load_sweep
from analysis.sweep.results import AxisOut, FanoutSummary, LookupCost, PointRow, SweepResults

# States whose run directory holds reps worth reading.
MEASURED = ("complete", "incomplete", "interrupted", "running")


@dataclass
class PointAnalysis:
    """A point's row and, when it has a run, the full comparison behind it."""
    row: PointRow
    results: Results | None = None
    # the point's run's spread between runs (manifest.json `run_spread`): its headline was
    # widened by it, and the points' family recomputes it with it (families.sweep_fdr)
    spread: RunSpread | None = None


def _method(run: RunDir) -> str:
    p = run.manifest.paired
    if p is not None:
        return ("paired windows, two servers loaded at once" if p.mode == "servers"
                else "paired windows, one server process (CONFIG SET between windows)")
    return "interleaved reps, a server start each"


def headline(run: RunDir, r: Results, opts: CompareOptions) -> tuple[MetricRow | None, str]:
    """(the point's headline metric, how it was measured)."""
    if run.manifest.case.workload.tool == "rdb-load":
        rows = [t for t in r.throughput if t.metric == "load time"]
        return (rows[0] if rows else None), ("RDB load at server start, one load per rep"
                                              if rows else "RDB load at server start")
    if r.paired:
        return r.paired[0], _method(run)
    if r.throughput:
        return r.throughput[0], _method(run)
    return None, _method(run)


# The key lookup of each server generation (Redis 8.0 dictFindByHash, later Redis
# dictFindLinkInternal, Valkey 8+ hashtableFind), then the generic wrappers: the lookup
# column's function when the sweep names none (--lookup) and the focus list holds one.
LOOKUP_FUNCTIONS = ("dictFindLinkInternal", "dictFindByHash", "hashtableFind", "dictFind",
                    "lookupKey", "lookupKeyRead", "lookupKeyWrite")
# A lookup must exist on both sides and have a verdict: never a path new in the candidate.
QUIET = ("negligible", "too few samples", "new in candidate", "gone")


def _measure(f: FunctionRow) -> str | None:
    """The summary's choice (flat, or cumulative for an inlined lookup such as Valkey's
    hashtableFind), when that measure has a CPU time per operation on both sides."""
    k = speaking_measure(f, QUIET)
    return k if k is not None and getattr(f, f"{k}_ns_change") is not None else None


def _lookup_row(r: Results, names: list[str] | None) -> tuple[FunctionRow, str] | None:
    rows = {f.name: f for f in r.profile.focus}
    for n in (names or LOOKUP_FUNCTIONS):
        f = rows.get(n)
        k = _measure(f) if f is not None else None
        if k is not None:
            return f, k
    if names:
        return None
    # No lookup in the focus list: the focus function the baseline spends most on per op.
    judged = [(f, _measure(f)) for f in r.profile.focus]
    judged = [(f, k) for f, k in judged if k is not None]
    return max(judged, key=lambda t: getattr(t[0], f"base_{t[1]}_ns").median, default=None)


def lookup_cost(r: Results, names: list[str] | None) -> LookupCost:
    p = r.profile
    if not p.available:
        return LookupCost(reason=p.reason or "no profile reps")
    if not p.per_op:
        return LookupCost(reason=p.per_op_reason or "no operation counts in the profile reps")
    found = _lookup_row(r, names)
    if found is None:
        asked = ", ".join(names) if names else "the focus functions"
        return LookupCost(reason=f"{asked}: not in the profiles with a CPU time per operation",
                          thread=p.thread, command=p.per_op_command)
    f, k = found
    j = getattr(f, f"{k}_verdict")
    return LookupCost(f.name, f.thread, p.per_op_command, getattr(f, f"base_{k}_ns"),
                      getattr(f, f"cand_{k}_ns"), getattr(f, f"{k}_ns_change"),
                      measure="flat" if k == "flat" else "cumulative",
                      verdict=j.verdict if j is not None else "")


def _best(row: MetricRow | None, base: str, cand: str) -> dict[str, float]:
    if row is None:
        return {}
    pick = max if row.higher_is_better else min
    return {base: pick(row.base.values), cand: pick(row.cand.values)}


def analyse_point(sweep_dir: Path, m: SweepManifest, p: SweepPoint, opts: CompareOptions,
                  lookup: list[str] | None, out: Path | None) -> PointAnalysis:
    est = p.estimate
    row = PointRow(**p.identity(), status=p.status, keys=est.keys, dataset_bytes=est.dataset_bytes,
                   run_dir=p.run_dir, reason=p.reason or "", host=p.host)
    if p.status not in MEASURED or not p.run_dir:
        row.reason = row.reason or {"pending": "not run yet", "skipped": "skipped"}.get(p.status, p.status)
        return PointAnalysis(row)
    try:
        run = load_run(sweep_dir / p.run_dir)
        r, merged = analyse_with_profiles(run, opts)
        if out is not None:
            write_profiles(r, merged, out)
    except (RunDirError, CompareError, ValueError) as e:
        row.reason = f"cannot compare: {e}"
        return PointAnalysis(row)
    row.metric, row.method = headline(run, r, opts)
    row.best = _best(row.metric, r.base, r.cand)
    row.lookup = lookup_cost(r, lookup)
    row.notes = list(r.notes)
    if row.metric is None:
        row.reason = row.reason or "no measurement on both sides"
    return PointAnalysis(row, r, run.manifest.run_spread)


def x_axis(m: SweepManifest) -> str | None:
    """The axis the crossover plot runs along: a keyspace axis, else the first numeric one,
    else the first axis."""
    if not m.axes:
        return None
    numeric = [a.name for a in m.axes
               if all(p.x.get(a.name) is not None for p in m.points)]
    keyspace = [a.name for a in m.axes if a.keyspace and a.name in numeric]
    return (keyspace or numeric or [m.axes[0].name])[0]


def analyse_sweep(sweep_dir: str | Path, opts: CompareOptions | None = None,
                  lookup: list[str] | None = None, out: Path | None = None
                  ) -> tuple[SweepResults, list[PointAnalysis]]:
    """The sweep's results; with `out`, each point's folded profiles go to out/<point id>/
    (where its report is rendered)."""
    sweep_dir = Path(sweep_dir)
    opts = opts or CompareOptions()
    m = load_sweep(sweep_dir)
    names = m.variant_names
    lookup = lookup if lookup is not None else (m.options.lookup or None)
    points = [analyse_point(sweep_dir, m, p, opts, lookup, (out / p.id) if out else None)
              for p in m.points]
    res = SweepResults(
        sweep_id=m.sweep_id, created=m.created, case=m.case, size=m.size,
        base=opts.base or names[0], cand=opts.cand or (names[1] if len(names) > 1 else names[0]),
        axes=[AxisOut(a.name, a.kind, list(a.values), a.keyspace) for a in m.axes],
        points=[pa.row for pa in points], x_axis=x_axis(m), l3_bytes=m.host.l3_bytes,
        noise=opts.noise, regression=opts.regression, confidence=opts.confidence,
        status=m.status, command=list(m.command), sets=dict(m.sets), fanout=_fanout(m))
    res.fdr = sweep_fdr([(pa.row.id, pa.row.metric, _paired(pa), _pilot(pa), pa.spread) for pa in points
                         if pa.row.metric is not None and pa.results is not None], opts)
    res.notes = _notes(m, res) + host_notes(res.points)
    keyspace = any(a.keyspace and a.name == res.x_axis for a in res.axes)
    res.mountain = mountain([(pa.row.id, _group(pa.row, res.x_axis), pa.row.keys, pa.results)
                             for pa in points], keyspace)
    return res, points


def _group(row: PointRow, x_axis: str | None) -> str:
    """The point's values of the axes other than the keys ("value=10"), its mountain's group."""
    return ",".join(f"{a}={v}" for a, v in row.labels.items() if a != x_axis)


def _paired(pa: PointAnalysis) -> bool:
    """Is the point's headline a comparison of pairs (paired windows, or a --precision run's
    blocks)?"""
    return pa.row.metric.metric == "paired throughput" or "two-stage" in pa.row.metric.change.method


def _pilot(pa: PointAnalysis) -> int | None:
    m = pa.results.measurement if pa.results is not None else None
    return m.pilot if m is not None and "two-stage" in pa.row.metric.change.method else None


def _fanout(m: SweepManifest) -> FanoutSummary | None:
    """What results.json says of a sweep run over many runners (None when run whole)."""
    f = m.fanout
    if f is None:
        return None
    if f.merged is not None:
        return FanoutSummary(plan=f.plan, merged=[x.point for x in f.merged])
    return FanoutSummary(plan=f.plan, point=f.point)


def _notes(m: SweepManifest, res: SweepResults) -> list[str]:
    notes = []
    left = [p.id for p in m.points if p.status in ("pending", "running", "interrupted")]
    if left:
        notes.append(f"sweep not finished ({m.status}): points not done: {', '.join(left)}; "
                     "`stallscope sweep --resume` finishes it")
    skipped = [f"{p.id} ({p.reason})" for p in m.points if p.status == "skipped"]
    if skipped:
        notes.append("points not run: " + "; ".join(skipped))
    l3 = {n for pr in res.points for n in pr.notes if "not larger than this host's L3" in n}
    if l3:
        notes.append(f"{len(l3)} point(s) have a dataset that fits in L3: their lookups stay in "
                     "cache (see each point's report)")
    return notes
