"""Throughput and latency of the load generator, per test, and paired windows.

Throughput reps: every bench.csv / bench.json / bench.txt of a variant's throughput reps,
grouped by test (redis-benchmark -t set,get writes one row per test). Paired reps: the
windows of paired.json (one server process, CONFIG SET between windows, or two servers),
the k-th base window paired with the k-th cand window of the same rep; the interval is
over reps, each its pairs' geometric means (pair_clusters.py says why).
"""
from __future__ import annotations

import dataclasses

import math
from pathlib import Path

from analysis.compare import layouts, pair_clusters
from analysis.compare.errors import CompareError
from analysis.compare.options import CompareOptions
from analysis.compare.results import ChangeOut, MetricRow, Side
from analysis.inputs import bench
from analysis.inputs.bench import RepThroughput
from analysis.inputs.layout import BENCH_CSV, BENCH_FILES, BENCH_JSON, PAIRED_JSON
from analysis.inputs.paired import PairedWindows, read_paired
from analysis.inputs.rundir import RunDir, RunDirError

Values = list[tuple[int, float]]      # (rep number, value), in rep order


def case_command(run: RunDir) -> list[str]:
    """The case's command words (the workload's `command`), as the load generator ran them."""
    return [str(x) for x in run.manifest.case.workload.command or []]


def bench_rows(rep_dir: Path, command: list[str] | None = None) -> list[RepThroughput]:
    """The load generator's rows of one rep (one per test)."""
    csv = rep_dir / BENCH_CSV
    if csv.is_file():  # may hold several tests (redis-benchmark -t set,get)
        return bench.parse_redis_benchmark_csv(csv)
    row = bench.load_rep(rep_dir)
    if Path(row.source).name == BENCH_JSON and row.test == "Totals" and command:
        # memtier calls its one row "Totals"; the table should name the command, as
        # redis-benchmark's rows do (the case's command words, as memtier ran them).
        row.test = " ".join(command)
    return [row]


def blocks(run: RunDir, base: str, cand: str, b: Values, c: Values
           ) -> tuple[Values, Values, list[int]]:
    """The reps of separate-rep runs as pairs by block: the i-th throughput rep scheduled for
    each variant (failed ones included) is block i, one A/B block of the interleaving; a
    --precision run replaces a failed rep with a whole new block at the end. Pairing the
    k-th *measured* values instead let one failure shift every later pair by a block.
    Returns (base, cand) of the complete blocks in block order, and the incomplete blocks
    (1-based) left out."""
    index: dict[tuple[str, int], int] = {}
    count = {base: 0, cand: 0}
    for rep in run.manifest.schedule:
        if rep.kind == "throughput" and rep.variant in count:
            count[rep.variant] += 1
            index[(rep.variant, rep.rep)] = count[rep.variant]
    by = {v: {index.get((v, n), -1): (n, x) for n, x in vals}
          for v, vals in ((base, b), (cand, c))}
    both = sorted(k for k in by[base].keys() & by[cand].keys() if k > 0)
    dropped = sorted((by[base].keys() ^ by[cand].keys()) - {-1})
    return [by[base][k] for k in both], [by[cand][k] for k in both], dropped


def metric_row(test: str, metric: str, unit: str, higher_is_better: bool, b: Values, c: Values,
               opts: CompareOptions, paired: bool = False, pilot: int | None = None,
               by_block: tuple[RunDir, str, str] | None = None) -> MetricRow:
    """One metric's row. With `pilot` (a --precision run of separate reps; `by_block`: its
    run, base and cand) the base and cand values of one block are pairs (`blocks`) and the
    interval is the two-stage one over them (analysis/twostage.py). Paired, the interval
    carries the run's spread between runs (CompareOptions.widened)."""
    dropped: list[int] = []
    if pilot is not None and by_block is not None:
        b, c, dropped = blocks(*by_block, b, c)
        paired = True
        pilot = pilot if len(b) >= pilot else None     # a run cut before its pilot ended
    ch = opts.relative([v for _, v in b], [v for _, v in c], higher_is_better=higher_is_better,
                       paired=paired, pilot=pilot)
    row = MetricRow(test, metric, unit, higher_is_better, Side.of(ch.base, [n for n, _ in b]),
                    Side.of(ch.cand, [n for n, _ in c]), ChangeOut.of(ch, unit))
    if dropped:
        row.change.method += (f"; block(s) {', '.join(map(str, dropped))} left out: a rep of "
                              f"one side failed, so the block has no pair")
    return row


def _rows_by_test(run: RunDir, variant: str) -> dict[str, list[tuple[int, RepThroughput]]]:
    out: dict[str, list[tuple[int, RepThroughput]]] = {}
    for rep in run.manifest.reps(variant, "throughput"):
        d = run.rep_dir(rep)
        if not any((d / f).is_file() for f in BENCH_FILES):
            continue
        for row in bench_rows(d, case_command(run)):
            out.setdefault(row.test, []).append((rep.rep, row))
    for rows in out.values():
        rows.sort(key=lambda t: t[0])
    return out


def pilot_of(run: RunDir) -> int | None:
    """The first-stage reps of a --precision run (None for a run of fixed reps)."""
    return run.manifest.pilot or None


def throughput(run: RunDir, base: str, cand: str, opts: CompareOptions
               ) -> tuple[list[MetricRow], list[MetricRow]]:
    """(throughput rows, latency rows): ops/s per test, and its p50/p99 latency in ms. In a
    --precision run of separate reps the first test's throughput is the metric its reps
    were added for: its k-th reps are pairs (the interleaved A/B of one block)."""
    per = {v: _rows_by_test(run, v) for v in (base, cand)}
    tput, lat = [], []
    for i, test in enumerate(per[base]):
        b, c = per[base][test], per[cand].get(test, [])
        if not c:
            continue
        tput.append(metric_row(test, "throughput", "ops/s", True,
                               [(n, r.ops_per_sec) for n, r in b],
                               [(n, r.ops_per_sec) for n, r in c], opts,
                               pilot=pilot_of(run) if i == 0 else None,
                               by_block=(run, base, cand)))
        for q in ("p50", "p99"):
            bv = [(n, r.latency_ms[q]) for n, r in b if q in r.latency_ms]
            cv = [(n, r.latency_ms[q]) for n, r in c if q in r.latency_ms]
            if bv and cv:
                lat.append(metric_row(test, f"{q} latency", "ms", False, bv, cv, opts))
    return tput, lat


def paired_docs(run: RunDir) -> list[tuple[int, PairedWindows]]:
    """(rep number, paired.json) of each paired rep that has one, in rep order."""
    out = []
    for rep in run.manifest.reps(kind="paired"):
        p = run.rep_dir(rep) / PAIRED_JSON
        if not p.is_file():
            continue
        try:
            out.append((rep.rep, read_paired(p)))
        except RunDirError as e:
            raise CompareError(str(e)) from None
    return out


def cold_blocks(run: RunDir) -> int:
    """How many paired reps had their cold first block left out (pair_clusters.settled)."""
    return sum(len(pair_clusters.settled(d.windows)) < len(d.windows) for _, d in paired_docs(run))


def paired_units(run: RunDir, base: str, cand: str) -> dict[int, list[tuple[float, float]]]:
    """Each paired rep's window pairs (base rate, cand rate): the k-th base window with the
    k-th cand window of the same rep, in rep order; a profiled rep's cold first block left
    out (pair_clusters.settled)."""
    by_rep: dict[int, list[tuple[float, float]]] = {}
    for rep_no, doc in paired_docs(run):
        kept = pair_clusters.settled(doc.windows)
        for x, y in zip(*([w for w in kept if w.variant == v] for v in (base, cand))):
            rx, ry = x.rate, y.rate
            if rx is not None and ry is not None:
                by_rep.setdefault(rep_no, []).append((float(rx), float(ry)))
    return dict(sorted(by_rep.items()))


def cold_note(run: RunDir) -> str:
    """The method's words for the cold first blocks left out, or "" when none were."""
    n = cold_blocks(run)
    return (f"; the first ABBA block of {n} profiled rep(s) left out (its first window runs "
            f"cold as perf attaches to both servers)") if n else ""


def paired(run: RunDir, base: str, cand: str, opts: CompareOptions) -> list[MetricRow]:
    """Paired windows as pairs (so slow drift cancels), the interval over reps
    (analysis/compare/pair_clusters.py says why): one row, or none without windows."""
    pairs = paired_units(run, base, cand)
    cl, how = pair_clusters.units(pairs)
    if not cl:
        return []
    cl, how = _over_layouts(run, pairs, cl, how)
    name = str(run.manifest.case.name or "")
    how_paired = "two servers" if getattr(run.manifest.paired, "mode", "") == "servers" else "one process"
    pilot = pilot_of(run) if len(cl) >= pair_clusters.MIN_REPS else None
    row = metric_row(f"{name} paired windows ({how_paired})".strip(), "paired throughput",
                     "ops/s", True, [(c.rep, c.base) for c in cl], [(c.rep, c.cand) for c in cl],
                     opts, paired=True, pilot=pilot)
    row.change.method += "; " + how + cold_note(run)
    if len({c.rep for c in cl}) < pair_clusters.MIN_REPS:
        # Window pairs of one or two reps as independent units: an interval 2-3x too narrow
        # (pair_clusters). It is shown, but it decides nothing, and it joins no family.
        ch = row.change
        row.change = dataclasses.replace(
            ch, verdict="insufficient data", p_value=None, line=None,
            reason=(f"no verdict from {len({c.rep for c in cl})} rep(s): the interval shown is "
                    f"over window pairs, which leaves out the rep-to-rep variation (2-3x too "
                    f"narrow on a shared host); {pair_clusters.MIN_REPS} reps or more give an "
                    f"interval over reps that decides."))
    return [row]


def _over_layouts(run: RunDir, pairs: dict[int, list[tuple[float, float]]],
                  cl: list[pair_clusters.Unit], how: str) -> tuple[list[pair_clusters.Unit], str]:
    """A --layouts run: with 3 layouts or more the units are the layouts (each its reps'
    geometric means), so the layout spread is inside the interval (layouts.py says why);
    with 2 the interval stays over reps and its method says what it leaves out."""
    by = layouts.group(pair_clusters.rep_units(pairs), layouts.rep_layouts(run))
    if len(by) < 2:
        return cl, how
    if len(by) >= pair_clusters.MIN_REPS:
        reps = sum(len(us) for us in by.values())
        return layouts.layout_units(by), (
            f"over {len(by)} code layouts, each the geometric mean of its reps ({reps} reps in "
            f"all): a layout's effect is shared by all its reps, so the layout spread is inside "
            f"this interval")
    return cl, how + (f"; {len(by)} code layouts, fewer than {pair_clusters.MIN_REPS}: this "
                      f"interval leaves the layout-to-layout spread out (the layout line gives it)")


def layout_spread(run: RunDir, base: str, cand: str, confidence: float) -> layouts.LayoutSpread | None:
    """The change per code layout and over layouts (None for a run without --layouts)."""
    return layouts.of_run(run, pair_clusters.rep_units(paired_units(run, base, cand)), confidence)


def load_time(run: RunDir, base: str, cand: str, opts: CompareOptions) -> list[MetricRow]:
    """rdb-load cases: the RDB load time of each rep (rep.json rdb_load_result), lower is
    better; one row, or none for other cases or without loads on both sides."""
    if run.manifest.case.workload.tool != "rdb-load":
        return []
    b, c = _load_times(run, base), _load_times(run, cand)
    if not b or not c:
        return []
    return [metric_row("RDB load", "load time", "s", False, b, c, opts, pilot=pilot_of(run),
                       by_block=(run, base, cand))]


def _load_times(run: RunDir, variant: str) -> Values:
    out = []
    for rep in run.manifest.reps(variant, "throughput"):
        res = run.facts(rep).rdb_load_result
        secs = res.load_seconds_s if res is not None else None
        if isinstance(secs, (int, float)) and secs > 0:
            out.append((rep.rep, float(secs)))
    return out


def main_log_ratios(run: RunDir, base: str, cand: str) -> list[float]:
    """The log ratio cand/base of the run's main metric per unit, in the order measured:
    each paired rep (its windows' geometric means), or else each complete A/B block (RDB
    load time in rdb-load cases, the first test's ops/s otherwise): the values a
    --precision run plans its reps from (collectors/runner/precision.py)."""
    if run.manifest.reps(kind="paired"):
        return [math.log(u.cand / u.base)
                for u in pair_clusters.rep_units(paired_units(run, base, cand))]
    if run.manifest.case.workload.tool == "rdb-load":
        b, c = _load_times(run, base), _load_times(run, cand)
    else:
        per = {v: _rows_by_test(run, v) for v in (base, cand)}
        test = next(iter(per[base]), None)
        b = [(n, r.ops_per_sec) for n, r in per[base].get(test, [])] if test else []
        c = [(n, r.ops_per_sec) for n, r in per[cand].get(test, [])] if test else []
    b, c, _ = blocks(run, base, cand, b, c)
    return [math.log(y / x) for (_, x), (_, y) in zip(b, c) if x > 0 and y > 0]

