"""Memory stalls without a PMU: each function's out-of-cache cost per operation, from the run
and its in-cache control run (`<run>/incache/`, the same builds over a dataset of at most a
quarter of the last-level cache; collectors/runner/stall_control.py makes it).

cost per op = execution + memory stall. In cache the same code pays (almost) no DRAM stall,
so run - control is the out-of-cache cost of each function, per variant; base's minus cand's
is the stall the change removed, and that over base's is the share removed. The limits
(overlapped misses, the control's own misses, page size, the dict's size class) are in
docs/statistics.md, "Memory stalls without a PMU".
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from analysis.compare import profile_reps, stall_stats as st
from analysis.compare.options import CompareOptions
from analysis.compare.per_op import per_op
from analysis.compare.profiles import cost_values, main_names, shares
from analysis.compare.results import Results
from analysis.compare.stall_section import StallRow, StallSection, StallSide
from analysis.compare.throughput import paired
from analysis.inputs.layout import INCACHE_DIR, MANIFEST
from analysis.inputs.rundir import RunDir, load_run
from analysis.profile.stacks import Stacks, function_costs, view

TOP = 6              # functions by cost per op, per variant, beside the focus functions
MIN_SHARE = 1.0      # % of a variant's samples a row needs (a row costs every row width)
FAMILY_LEVEL = 0.95  # the chance that every interval of the table covers (Bonferroni)

# (function, "flat" | "cum" | "total") -> variant -> per-rep ns/op, in rep order
Costs = dict[tuple[str, str], dict[str, list[float]]]


@dataclass
class _RunCosts:
    costs: Costs
    paired: bool
    reason: str = ""


def _run_costs(run: RunDir, base: str, cand: str, thread: str, fns: list[tuple[str, str]],
               opts: CompareOptions) -> _RunCosts:
    """Each rep's CPU time per operation of every (function, kind) in one run, as the
    function rows of the run's own report take it (profiles.cost_values)."""
    reps = profile_reps.load(run, (base, cand))
    if not reps.get(base) or not reps.get(cand):
        return _RunCosts({}, False, f"{run.path.name}: no profile reps for both variants")
    names = main_names(run)
    is_paired = profile_reps.are_paired(reps)
    ops = per_op(run, reps, base, cand, thread, names, opts, is_paired)
    if ops.factors is None:
        return _RunCosts({}, False, f"{run.path.name}: no CPU time per operation ({ops.reason})")
    sh = shares(reps, thread, names)
    sw = {v: {r.rep: r.sample_weight for r in reps[v]} for v in (base, cand)}
    out: Costs = {}
    for fn, k in fns:
        if k == "total":
            out[(fn, k)] = {v: [view(r.stacks, thread, names).total * ops.factors[v][r.rep] for r in reps[v]]
                            for v in (base, cand)}
        else:
            b, c = cost_values(fn, k, sh, sw, ops.factors, base, cand)
            out[(fn, k)] = {base: b, cand: c}
    return _RunCosts(out, is_paired)


def chosen_functions(r: Results, merged: dict[str, Stacks], names: tuple[str, ...]) -> list[tuple[str, str]]:
    """The rows: all samples; each focus function flat and cumulative where it holds
    MIN_SHARE of either variant's samples; the TOP functions of each variant by their own
    cost in the run (where a change's stall is, and where it is left). Fewer rows, narrower
    intervals: every row shares the table's 95% (Bonferroni)."""
    rows = [("all samples", "total")]
    for f in r.profile.focus:
        for k in ("flat", "cum"):
            b, c = getattr(f, f"base_{k}"), getattr(f, f"cand_{k}")
            if max(b.median, c.median) >= MIN_SHARE:
                rows.append((f.name, k))
    for v in (r.base, r.cand):
        if v not in merged:
            continue
        costs = function_costs(view(merged[v], r.profile.thread, names))
        for fn in sorted(costs, key=lambda f: -costs[f].flat)[:TOP]:
            if (fn, "flat") not in rows and costs[fn].flat_share >= MIN_SHARE:
                rows.append((fn, "flat"))
    return rows


def _side(large: list[float], small: list[float], level: float) -> StallSide:
    ml, ms = st.mean_of(large), st.mean_of(small)
    return StallSide(ml.value, ms.value, len(large), len(small), st.interval(st.difference(ml, ms), level))


def _removed(lb, lc, sb, sc, paired_runs: bool) -> tuple[st.Mean, float]:
    """(base's out-of-cache cost - cand's, its covariance with base's out-of-cache cost)."""
    if paired_runs and len(lb) == len(lc) and len(sb) == len(sc):
        dl, ds = st.mean_of(st.pair_diffs(lb, lc)), st.mean_of(st.pair_diffs(sb, sc))
        cov = st.covariance(st.pair_diffs(lb, lc), lb) + st.covariance(st.pair_diffs(sb, sc), sb)
        return st.difference(dl, ds), cov
    big = st.difference(st.mean_of(lb), st.mean_of(lc))
    little = st.difference(st.mean_of(sb), st.mean_of(sc))
    return st.difference(big, little), st.mean_of(lb).var + st.mean_of(sb).var


def stall_row(fn: str, kind: str, large: dict[str, list[float]], small: dict[str, list[float]],
              base: str, cand: str, level: float, paired_runs: bool) -> StallRow:
    lb, lc, sb, sc = large[base], large[cand], small[base], small[cand]
    removed, cov = _removed(lb, lc, sb, sc, paired_runs)
    b_ooc = st.difference(st.mean_of(lb), st.mean_of(sb))
    row = StallRow(fn, kind, _side(lb, sb, level), _side(lc, sc, level), st.interval(removed, level))
    if row.base.out_of_cache.low is not None and row.base.out_of_cache.low > 0:
        share = st.fieller(removed, b_ooc, cov, level)
        row.share_removed = share if share.low is not None else None
    return row


def control_dir(run: RunDir) -> Path:
    return run.path / INCACHE_DIR


def section(run: RunDir, r: Results, merged: dict[str, Stacks], opts: CompareOptions) -> StallSection:
    """The stall section of a run, from its in-cache control run when it has one."""
    d = control_dir(run)
    if not (d / MANIFEST).is_file():
        sp = run.manifest.stalls   # None: a run made before the control (the report says nothing)
        return StallSection(False, reason="" if sp is None else
                            sp.reason or f"its in-cache control was not made ({d} has no manifest)")
    if not r.profile.available or not r.profile.per_op:
        return StallSection(False, reason="the run has no CPU time per operation: "
                                          + (r.profile.per_op_reason or r.profile.reason))
    ctl = load_run(d)
    other = _other_builds(run, ctl, (r.base, r.cand))
    if other:
        return StallSection(False, reason=f"the in-cache control ran other builds than the run ({other}): "
                                          "its costs are not the same code's")
    names = main_names(run)
    fns = chosen_functions(r, merged, names)
    big = _run_costs(run, r.base, r.cand, r.profile.thread, fns, opts)
    small = _run_costs(ctl, r.base, r.cand, r.profile.thread, fns, opts)
    if big.reason or small.reason:
        return StallSection(False, reason=big.reason or small.reason)
    level = 1 - (1 - FAMILY_LEVEL) / len(fns)
    sec = StallSection(True, control_dir=INCACHE_DIR, control_keys=ctl.manifest.case.dataset.keys,
                       keys=run.manifest.case.dataset.keys, command=r.profile.per_op_command,
                       thread=r.profile.thread, level=level, family_level=FAMILY_LEVEL,
                       latency=run.manifest.host.memory_latency or ctl.manifest.host.memory_latency)
    for ws, attr, m in ((run.manifest.case.working_set, "working_set", run.manifest),
                        (ctl.manifest.case.working_set, "control_working_set", ctl.manifest)):
        if ws is not None:
            setattr(sec, attr, ws.describe(m.case.dataset.keys))
    focus = {f.name for f in r.profile.focus}
    miss = sec.latency.miss_ns() if sec.latency is not None else None
    for fn, k in fns:
        row = stall_row(fn, k, big.costs[(fn, k)], small.costs[(fn, k)], r.base, r.cand, level,
                        big.paired and small.paired)
        row.focus = fn in focus
        if miss and miss > 0:
            row.base_trips = row.base.out_of_cache.value / miss
            row.cand_trips = row.cand.out_of_cache.value / miss
        sec.rows.append(row)
    _control_throughput(ctl, r, opts, sec)
    return sec


def _other_builds(run: RunDir, ctl: RunDir, names: tuple[str, str]) -> str:
    """The variants whose server binary differs between the run and its control ("" when
    none): a dir: tree edited or a git: branch moved while the run ran, or a --layouts run
    (its control is built in the upstream link order) would compare different code."""
    diff = [v for v in names
            if (run.manifest.variants.get(v) is None or ctl.manifest.variants.get(v) is None
                or run.manifest.variants[v].binary_sha256 != ctl.manifest.variants[v].binary_sha256)]
    return ", ".join(diff)


def _control_throughput(ctl: RunDir, r: Results, opts: CompareOptions, sec: StallSection) -> None:
    """The control's paired throughput change: what the change buys when the data is in cache."""
    rows = paired(ctl, r.base, r.cand, opts)
    if rows and rows[0].change.rel is not None:
        ch = rows[0].change
        sec.control_change, sec.control_low, sec.control_high = ch.rel, ch.rel_ci_low, ch.rel_ci_high
        sec.control_reps = rows[0].base.n
