"""The profile section: the focus functions' flat and cumulative shares (and their CPU
time per operation), the top movers, the callers of the focus functions and the share of
each thread group, all in one thread view.

The view is the main thread when io-threads hold samples: busy-polling io-threads would
dilute every process-wide share (docs/results-json.md, ProfileSection.thread).
"""
from __future__ import annotations

from pathlib import Path

from analysis import counting, stats
from analysis.compare import profile_reps
from analysis.compare.options import CompareOptions
from analysis.compare.materiality import Measure, judge
from analysis.compare.families import Counted, function_fdr
from analysis.compare.per_op import Factors, PerOp, per_op
from analysis.compare.time_split import TimeSplit, absent, time_split
from analysis.compare.truncated_reps import truncated_stacks
from analysis.compare.profile_reps import ProfileRep
from analysis.compare.results import CallerRow, ChangeOut, FunctionRow, ProfileSection, Side, ThreadRow
from analysis.inputs.rundir import RunDir
from analysis.stats import summarize
from analysis.profile.stacks import (THREAD_GROUPS, FunctionCost, Stacks, callers, function_costs,
                                     merge, thread_groups, view)

CALLERS_PER_FOCUS = 5
MOVER_MIN_SHARE = 0.1       # % of the view's samples in some rep, to be a mover candidate

# variant -> [(rep, function -> cost)] in one thread view
Shares = dict[str, list[tuple[int, dict[str, FunctionCost]]]]
# variant -> rep -> the weight of one sample (None: unknown)
SampleWeights = dict[str, dict[int, float | None]]

_ASKED = {"main": "main thread only (% of the main thread's samples), as asked (--thread main).",
          "all": "all threads (% of all samples), as asked (--thread all).",
          "io-threads": "io-threads only (% of their samples), as asked (--thread io-threads)."}


def main_names(run: RunDir) -> tuple[str, ...]:
    """Thread names of the main thread beside the known ones: the server binaries' names,
    cut to the 15 characters of a comm."""
    return tuple(sorted({Path(str(v.server_bin or "")).name[:15]
                         for v in run.manifest.variants.values()} - {""}))


def _io_share(s: Stacks, main_names: tuple[str, ...]) -> float:
    io = thread_groups(s, main_names).get("io-threads")
    return 100 * io.total / s.total if io else 0.0


def _has_threads(reps: dict[str, list[ProfileRep]]) -> bool:
    return all(r.stacks.thread_frame for v in reps for r in reps[v])


def choose_thread(reps: dict[str, list[ProfileRep]], asked: str | None, base: str, cand: str,
                  main_names: tuple[str, ...]) -> tuple[str, str]:
    """(thread view, the sentence the report prints about it)."""
    if not _has_threads(reps):
        return "all", "the profiles carry no thread frame: shares are process-wide."
    if asked is not None:
        return asked, _ASKED[asked]
    io = {v: max(_io_share(r.stacks, main_names) for r in reps[v]) for v in (base, cand)}
    if max(io.values()) > 0:
        return "main", ("main thread only (% of the main thread's samples): io-threads hold up "
                        "to " + ", ".join(f"{io[v]:.1f}% ({v})" for v in (base, cand))
                        + " of the samples, and busy-polling io-threads would dilute every "
                          "process-wide share; `--thread all` for process-wide shares.")
    return "all", "all threads (no io-threads in the profiles)."


def shares(reps: dict[str, list[ProfileRep]], thread: str, main_names: tuple[str, ...]) -> Shares:
    return {v: [(r.rep, function_costs(view(r.stacks, thread, main_names))) for r in reps[v]]
            for v in reps}


def _side_change(b: list[tuple[int, float]], c: list[tuple[int, float]], ch, unit: str
                 ) -> tuple[Side, Side, ChangeOut]:
    return (Side.of(ch.base, [n for n, _ in b]), Side.of(ch.cand, [n for n, _ in c]),
            ChangeOut.of(ch, unit))


def _samples(fn: str, sh: Shares, sw: SampleWeights, v: str, attr: str) -> list[float] | None:
    out = []
    for n, costs in sh[v]:
        w = sw.get(v, {}).get(n)
        if not w:
            return None
        out.append(round((getattr(costs[fn], attr) if fn in costs else 0.0) / w, 3))
    return out


def _dispersion(row: FunctionRow, k: str, counts: tuple[list[float] | None, list[float] | None],
                sh: Shares, sw: SampleWeights, factors: Factors | None, base: str, cand: str,
                paired: bool) -> counting.Dispersion | None:
    """The spread of the measure that speaks against what counting its samples predicts
    (analysis/counting.py): the CPU time per operation the statistic took, else the shares."""
    if counts[0] is None or counts[1] is None:
        return None
    if factors:
        b, c = cost_values(row.name, k, sh, sw, factors, base, cand)
    else:
        b, c = getattr(row, f"base_{k}").values, getattr(row, f"cand_{k}").values
    return counting.of_row(b, c, counts[0], counts[1], paired)


def counted_rows(rows: list[FunctionRow], sh: Shares, sw: SampleWeights, factors: Factors | None,
                 base: str, cand: str, paired: bool, into: Counted | None = None) -> Counted:
    """Each row's statistic values of CPU time per operation (cost_values: what every
    interval of the row is computed from, a zero-sample rep given half a sample) and, in a
    paired run, their dispersion against counting (the movers' moderated t, families.py);
    empty without operation counts. `into`: a mapping to add them to (another view's)."""
    out: Counted = {} if into is None else into
    if not factors:
        return out
    for row in rows:
        for k in ("flat", "cum"):
            b, c = cost_values(row.name, k, sh, sw, factors, base, cand)
            nb, nc = getattr(row, f"base_{k}_samples"), getattr(row, f"cand_{k}_samples")
            d = counting.of_row(b, c, nb, nc, True) if paired and nb is not None and nc is not None else None
            out[(row.thread, row.name, k)] = (b, c, d)
    return out


def _judge(row: FunctionRow, sh: Shares, sw: SampleWeights, base: str, cand: str,
           opts: CompareOptions, total: ChangeOut | None = None, factors: Factors | None = None,
           paired: bool = False) -> None:
    """Both verdicts of a row (materiality.judge); `total`: the verdict of the view's whole
    CPU time per operation; `factors`: 1/operations per rep, when the run counted them."""
    for k in ("flat", "cum"):
        sb, sc = (_samples(row.name, sh, sw, v, k) for v in (base, cand))
        setattr(row, f"base_{k}_samples", sb)
        setattr(row, f"cand_{k}_samples", sc)
        m = Measure(getattr(row, f"base_{k}"), getattr(row, f"cand_{k}"),
                    getattr(row, f"{k}_change"), sb, sc, getattr(row, f"base_{k}_ns"),
                    getattr(row, f"cand_{k}_ns"), getattr(row, f"{k}_ns_change"),
                    _dispersion(row, k, (sb, sc), sh, sw, factors, base, cand, paired))
        # a function ran on a side if its cumulative share is there (a wrapper's own cost
        # can be 0 samples in the base and rise in the candidate: a change, not new code)
        ran = (row.base_cum.median > 0, row.cand_cum.median > 0) if k == "flat" else None
        setattr(row, f"{k}_verdict", judge(m, opts.min_share, opts.min_samples, total, ran))


def cost_values(fn: str, k: str, sh: Shares, sw: SampleWeights, factors: Factors, base: str,
                cand: str) -> tuple[list[float], list[float]]:
    """Each rep's CPU time per operation of fn's flat or cumulative cost (`k`), base and
    cand, as its statistic takes them: weight x 1/operations, or, when some rep of either
    side holds no sample of fn and every rep's sample weight is known, (samples + 1/2) x
    one sample's weight x 1/operations in every rep (analysis/counting.py: the printed
    row and the --precision plan take zero-sample reps alike)."""
    raw = {v: [(getattr(costs[fn], k) if fn in costs else 0.0) * factors[v][n] for n, costs in sh[v]]
           for v in (base, cand)}
    weights = {v: [sw.get(v, {}).get(n) for n, _ in sh[v]] for v in (base, cand)}
    if (all(raw[base]) and all(raw[cand])) or not all(w for v in weights for w in weights[v]):
        return raw[base], raw[cand]
    counts = {v: [x / (factors[v][n] * w) for x, (n, _), w in zip(raw[v], sh[v], weights[v])]
              for v in (base, cand)}
    nb, nc = counting.corrected(counts[base], counts[cand])
    return ([float(x * w * factors[base][n]) for x, (n, _), w in zip(nb, sh[base], weights[base])],
            [float(x * w * factors[cand][n]) for x, (n, _), w in zip(nc, sh[cand], weights[cand])])


def _function_row(fn: str, sh: Shares, base: str, cand: str, thread: str, opts: CompareOptions,
                  factors: Factors | None, sw: SampleWeights | None = None,
                  total: ChangeOut | None = None, paired: bool = False,
                  planned: tuple[str, str, int] | None = None) -> FunctionRow:
    """Flat and cumulative share of one function; with `factors` also its CPU time per
    operation (weight in ns × 1 / operations of the rep's window); its verdicts after
    the materiality rules (analysis/compare/materiality.py). `paired`: the profiles come
    from the paired reps, the k-th of each side a pair. `planned`: (function, measure, pilot)
    of a `--precision P --on FUNCTION` run, whose cost per operation gets the two-stage
    interval the run's reps were added for."""
    def values(v: str, attr: str, scale: Factors | None = None) -> list[tuple[int, float]]:
        return [(n, (getattr(costs[fn], attr) if fn in costs else 0.0)
                 * (scale[v][n] if scale else 1.0)) for n, costs in sh[v]]

    out = {}
    for k in ("flat", "cum"):
        b, c = values(base, f"{k}_share"), values(cand, f"{k}_share")
        out[k] = _side_change(b, c, opts.points([x for _, x in b], [x for _, x in c],
                                                paired=paired), "pp")
    row = FunctionRow(fn, thread, *out["flat"], *out["cum"])
    if factors:
        ns = {}
        for k in ("flat", "cum"):
            b, c = values(base, k, factors), values(cand, k, factors)
            # the statistic's values: a rep with no sample of fn gets half a sample, as the
            # --precision plan takes it (analysis/counting.py); the sides print as measured
            sb, sc = cost_values(fn, k, sh, sw or {}, factors, base, cand)
            # An absolute cost: relative waterlines like throughput's, lower is better.
            pilot = planned[2] if planned and planned[:2] == (fn, k) and len(b) >= planned[2] else None
            if pilot is None:
                ch = ChangeOut.of(opts.relative(sb, sc, higher_is_better=False, paired=paired), "ns/op")
            else:       # the --on row: the wider of Stein's and the t over all pairs (twostage)
                ch = stats.compare(
                    sb, sc, higher_is_better=False, noise=opts.noise, regression=opts.regression,
                    max_cv=opts.max_cv, confidence=opts.confidence, paired=paired, pilot=pilot,
                    method="two-stage+t")
                ch = ChangeOut.of(opts.widened(ch, False) if paired else ch, "ns/op")
                ch.level = opts.confidence      # its own 95%, among rows at the family's level
            ns[k] = (Side.of(summarize([x for _, x in b]), [n for n, _ in b]),
                     Side.of(summarize([x for _, x in c]), [n for n, _ in c]), ch)
        row.base_flat_ns, row.cand_flat_ns, row.flat_ns_change = ns["flat"]
        row.base_cum_ns, row.cand_cum_ns, row.cum_ns_change = ns["cum"]
    _judge(row, sh, sw or {}, base, cand, opts, total, factors, paired)
    return row


def _planned(run: RunDir, paired: bool) -> tuple[str, str, int] | None:
    """(function, measure, pilot) of a --precision run on a function (--on)."""
    m = run.manifest
    on = m.options.precision_function if m.precision is not None and paired else None
    return (on[0], on[1], m.pilot) if on and m.pilot else None


def _mover_key(r: FunctionRow) -> tuple:
    c = r.flat_change
    established = c.ci_low is not None and (c.ci_low > 0 or c.ci_high < 0)
    # new and gone functions are moves too (their interval may touch 0 with few reps)
    one_sided = r.flat_verdict is not None and r.flat_verdict.verdict in ("new in candidate", "gone")
    return (not (established or one_sided), -abs(c.delta), r.name)


def _candidates(sh: Shares, base: str, cand: str, thread: str, opts: CompareOptions,
                factors: Factors | None, sw: SampleWeights, total: ChangeOut | None,
                paired: bool = False) -> list[FunctionRow]:
    """Every function that could be a top mover (a flat share of MOVER_MIN_SHARE or more in
    some rep). All of them are judged together (the focus functions among them in their own
    family, analysis/compare/families.py) before the movers are picked: picking the 15 that
    look established at 95% first and correcting over those 15 alone let selection make the
    discoveries (a false one in 25% of null runs)."""
    names = sorted({fn for v in sh for _, c in sh[v] for fn, fc in c.items()
                    if fc.flat_share >= MOVER_MIN_SHARE})
    return [_function_row(fn, sh, base, cand, thread, opts, factors, sw, total, paired)
            for fn in names]


def _time_split(sh: Shares, ops: PerOp, base: str, cand: str, thread: str, paired: bool,
                confidence: float) -> TimeSplit:
    """Where the time went (analysis/compare/time_split.py): each rep's functions' own CPU
    time per operation, split from the view's total."""
    if ops.factors is None or ops.total is None:
        return absent(ops.reason or "no CPU time per operation")
    per_rep = {v: [{fn: c.flat * ops.factors[v][n] for fn, c in costs.items() if c.flat > 0}
                   for n, costs in sh[v]] for v in (base, cand)}
    totals = {base: ops.total.base.values, cand: ops.total.cand.values}
    return time_split(per_rep, totals, base, cand, paired, confidence, thread)


def _pick_movers(rows: list[FunctionRow], top: int) -> list[FunctionRow]:
    """Established moves (interval clear of 0 at the family's level) first, then by size."""
    return sorted(rows, key=_mover_key)[:top]


def _callers(merged: dict[str, Stacks], focus: list[str], base: str, cand: str, thread: str,
             main_names: tuple[str, ...]) -> list[CallerRow]:
    out = []
    for fn in focus:
        per = {}
        for v in (base, cand):
            mv = view(merged[v], thread, main_names)
            tot = mv.total or 1.0
            per[v] = {k: 100.0 * w / tot for k, w in callers(mv, fn).items()}
        names = sorted(set(per[base]) | set(per[cand]),
                       key=lambda k: (-max(per[base].get(k, 0), per[cand].get(k, 0)), k))
        out += [CallerRow(fn, k, per[base].get(k, 0.0), per[cand].get(k, 0.0))
                for k in names[:CALLERS_PER_FOCUS]]
    return out


def _thread_rows(reps: dict[str, list[ProfileRep]], base: str, cand: str,
                 main_names: tuple[str, ...], opts: CompareOptions,
                 paired: bool = False) -> list[ThreadRow]:
    groups = {v: [(r.rep, thread_groups(r.stacks, main_names), r.stacks.total) for r in reps[v]]
              for v in (base, cand)}
    present = {g for v in groups for _, gs, _ in groups[v] for g in gs}
    rows = []
    for g in sorted(present, key=THREAD_GROUPS.index):
        b, c = ([(n, 100.0 * gs[g].total / tot if g in gs else 0.0) for n, gs, tot in groups[v]]
                for v in (base, cand))
        ch = opts.points([x for _, x in b], [x for _, x in c], higher_is_better=True,
                         paired=paired)
        rows.append(ThreadRow(g, *_side_change(b, c, ch, "pp")))
    return rows


def profiles(run: RunDir, base: str, cand: str, focus: list[str], opts: CompareOptions
             ) -> tuple[ProfileSection, dict[str, Stacks]]:
    """The section, and each variant's profile reps merged (for flame graphs and pprof)."""
    reps = profile_reps.load(run, (base, cand))
    merged = {v: merge([r.stacks for r in reps[v]]) for v in reps if reps[v]}
    missing = [v for v in (base, cand) if not reps[v]]
    if missing:
        # the side that has profiles still gets its flame graph and pprof file
        unit = next(iter(merged.values())).unit if merged else "samples"
        return ProfileSection(False, reason=f"no profile reps (perf.folded or profile.pb.gz) "
                                            f"for {', '.join(missing)}", weight_unit=unit), merged
    names = main_names(run)
    thread, note = choose_thread(reps, opts.thread, base, cand, names)
    sh = shares(reps, thread, names)
    known = {fn for v in sh for _, c in sh[v] for fn in c}
    paired = profile_reps.are_paired(reps)
    planned = _planned(run, paired)
    # --precision --on FUNCTION asked that function before the run, focus or not: its row
    # stands with the focus rows, the measure planned with its two-stage interval
    asked = focus + ([planned[0]] if planned and planned[0] not in focus else [])
    present = [f for f in asked if f in known]
    ops = per_op(run, reps, base, cand, thread, names, opts, paired)
    sec = ProfileSection(
        True, thread=thread, thread_note=note, weight_unit=reps[base][0].stacks.unit,
        samples={v: [r.stacks.total for r in reps[v]] for v in (base, cand)},
        reps={v: [r.rep for r in reps[v]] for v in (base, cand)},
        missing_focus=[f for f in asked if f not in known],
        per_op=ops.factors is not None, per_op_reason=ops.reason, per_op_command=ops.command,
        per_op_basis=ops.basis, ops=ops.ops or {}, per_op_total=ops.total, paired=paired,
        sample_counts={v: [round(r.stacks.total / r.sample_weight) for r in reps[v]
                           if r.sample_weight] for v in (base, cand)})
    sw = {v: {r.rep: r.sample_weight for r in reps[v]} for v in (base, cand)}
    total = ops.total.change if ops.total is not None else None
    sec.focus = [_function_row(f, sh, base, cand, thread, opts, ops.factors, sw, total, paired,
                               planned) for f in present]
    views = {thread: sh}
    if thread != "all":
        views["all"] = shares(reps, "all", names)
        sec.focus_other_view = [_function_row(f, views["all"], base, cand, "all", opts,
                                              ops.factors, sw, paired=paired) for f in present]
    candidates = _candidates(sh, base, cand, thread, opts, ops.factors, sw, total, paired)
    sec.truncated = truncated_stacks(reps, base, cand, thread, names)
    sec.time_split = _time_split(sh, ops, base, cand, thread, paired, opts.confidence)
    sec.callers = _callers(merged, present, base, cand, thread, names)
    if _has_threads(reps):
        sec.threads = _thread_rows(reps, base, cand, names, opts, paired)
    # correct first (every candidate in its family), then pick the movers (not the focus
    # functions: they have their own table and family)
    counted = counted_rows(sec.focus + candidates, sh, sw, ops.factors, base, cand, paired)
    counted_rows(sec.focus_other_view, views.get("all", sh), sw, ops.factors, base, cand, paired,
                 counted)
    sec.fdr, sec.movers_fdr = function_fdr(sec, opts, candidates, counted)
    asked = {r.name for r in sec.focus}
    sec.movers = _pick_movers([c for c in candidates if c.name not in asked], opts.top)
    final = sec.per_op_total.change if sec.per_op_total is not None else None
    for row in sec.focus + sec.movers + sec.focus_other_view:
        # the verdicts again, from the intervals at the family's level
        _judge(row, views[row.thread], sw, base, cand, opts, final if row.thread == thread else None,
               ops.factors, paired)
    return sec, merged
