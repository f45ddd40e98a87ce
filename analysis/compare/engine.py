"""`python -m analysis compare RUN_DIR`: compare the variants of a run directory and write
report.md, report.html and results.json (plus flame graphs and pprof files).

Pure: reads the run directory only (inferno renders the flame graphs from files). The
same run directory always gives the same report.md and results.json: no clock is read,
the statistics are exact or seeded.
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
from pathlib import Path
from typing import Any

from analysis import stats
from analysis.compare.results import (Artifacts, CallerRow, ChangeOut, FunctionRow, MetricRow,
                                      ProfileSection, Results, Side, SummaryItem, ThreadRow,
                                      TmaSection)
from analysis.inputs.repfacts import TIME_EVENTS, RepFacts
from analysis.inputs.rundir import BENCH_FILES, RunDir, read_rep_facts

DEFAULT_TOP = 15
CALLERS_PER_FOCUS = 5
THREAD_VIEWS = ("main", "all", "io-threads")


class CompareError(Exception):
    """A run directory that cannot be compared; the message names the file and the fix."""


# ------------------------------------------------------------------------ throughput

def _bench_rows(rep_dir: Path, command: list[str] | None = None) -> list[Any]:
    from analysis.inputs import bench
    csv = rep_dir / "bench.csv"
    if csv.is_file():  # may hold several tests (redis-benchmark -t set,get)
        return bench.parse_redis_benchmark_csv(csv)
    row = bench.load_rep(rep_dir)
    if Path(row.source).name == "bench.json" and row.test == "Totals" and command:
        # memtier calls its one row "Totals"; the table should name the command, as
        # redis-benchmark's rows do (the case's command words, as memtier ran them).
        row.test = " ".join(command)
    return [row]


def _case_command(run: RunDir) -> list[str]:
    return [str(x) for x in (run.manifest.case.get("workload") or {}).get("command") or []]


def short_test(name: str, limit: int = 48) -> str:
    """Long custom-command test names (MSET with 10 keys and 100-byte values) fit a table
    cell: repeated arguments are counted, long ones cut."""
    words = name.split()
    if len(name) <= limit:
        return name
    head = words[0] if words else name
    args = words[1:]
    if args and len(set(args[0::2])) == 1 and len(args) % 2 == 0:
        return f"{head} ({len(args) // 2} × {args[0]} {_cut(args[1], 12)})"
    return _cut(name, limit)


def _cut(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def _throughput(run: RunDir, base: str, cand: str, opts: argparse.Namespace
                ) -> tuple[list[MetricRow], list[MetricRow]]:
    kinds = ["throughput"]
    per: dict[str, dict[str, list[tuple[int, Any]]]] = {}
    for v in (base, cand):
        for kind in kinds:
            for rep in run.manifest.reps(v, kind):
                d = run.rep_dir(rep)
                if not any((d / f).is_file() for f in BENCH_FILES):
                    continue
                for row in _bench_rows(d, _case_command(run)):
                    per.setdefault(row.test, {}).setdefault(v, []).append((rep.rep, row))
    tput, lat = [], []
    for test, sides in per.items():
        b, c = sides.get(base, []), sides.get(cand, [])
        if not b or not c:
            continue
        b.sort(key=lambda t: t[0])
        c.sort(key=lambda t: t[0])
        tput.append(_metric(test, "throughput", "ops/s", True,
                            [(n, r.ops_per_sec) for n, r in b], [(n, r.ops_per_sec) for n, r in c],
                            opts))
        for q in ("p50", "p99"):
            bv = [(n, r.latency_ms[q]) for n, r in b if q in r.latency_ms]
            cv = [(n, r.latency_ms[q]) for n, r in c if q in r.latency_ms]
            if bv and cv:
                lat.append(_metric(test, f"{q} latency", "ms", False, bv, cv, opts))
    return tput, lat


def _metric(test: str, metric: str, unit: str, hib: bool, b: list[tuple[int, float]],
            c: list[tuple[int, float]], opts: argparse.Namespace, paired: bool = False) -> MetricRow:
    ch = stats.compare([v for _, v in b], [v for _, v in c], higher_is_better=hib,
                       noise=opts.noise, regression=opts.regression, paired=paired)
    return MetricRow(test, metric, unit, hib, Side.of(ch.base, [n for n, _ in b]),
                     Side.of(ch.cand, [n for n, _ in c]), ChangeOut.of(ch, unit))


def _paired(run: RunDir, base: str, cand: str, opts: argparse.Namespace) -> list[MetricRow]:
    """Paired windows (one process, CONFIG SET between windows): the k-th base window is
    paired with the k-th cand window of the same rep, so slow drift cancels."""
    b, c = [], []
    for rep in run.manifest.reps(kind="paired"):
        p = run.rep_dir(rep) / "paired.json"
        if not p.is_file():
            continue
        try:
            doc = json.loads(p.read_text())
        except json.JSONDecodeError as e:
            raise CompareError(f"{p}:{e.lineno}: malformed JSON: {e.msg}") from None
        wins = doc.get("windows", [])
        # calls/s of the case's command when the server counted them; ops/s also
        # counts the INFO/CONFIG commands of the switching itself.
        rate = (lambda w: w.get("calls_per_s") if w.get("calls_per_s") is not None
                else w.get("ops_per_s"))
        bw = [rate(w) for w in wins if w.get("variant") == base]
        cw = [rate(w) for w in wins if w.get("variant") == cand]
        k = min(len(bw), len(cw))
        for i in range(k):
            if bw[i] is not None and cw[i] is not None:
                b.append((rep.rep, float(bw[i])))
                c.append((rep.rep, float(cw[i])))
    if not b:
        return []
    cmd = str(run.manifest.case.get("name") or "")
    return [_metric(f"{cmd} paired windows (one process)".strip(), "paired throughput", "ops/s",
                    True, b, c, opts, paired=True)]


# -------------------------------------------------------------------------- profiles

def _load_stacks(d: Path) -> Any | None:
    from analysis.profile import stacks as profile
    if (d / "perf.folded").is_file():
        return profile.read_folded(d / "perf.folded")
    if (d / "profile.pb.gz").is_file():
        from analysis.profile import pprof
        return pprof.read_pprof(d / "profile.pb.gz")
    return None


def _view(stacks: Any, view: str, main_names: tuple[str, ...]) -> Any:
    from analysis.profile import stacks as profile
    if view == "all" or not stacks.thread_frame:
        return stacks
    return profile.thread_groups(stacks, main_names).get(view, profile.Stacks(unit=stacks.unit))


def _function_rows(names: list[str], shares: dict[str, list[tuple[int, dict[str, Any]]]],
                   base: str, cand: str, view: str, opts: argparse.Namespace,
                   per_op: dict[str, dict[int, float]] | None = None) -> list[FunctionRow]:
    """Share rows; with `per_op` (variant -> rep -> ns per weight unit / operations of the
    rep's window) also the CPU time per operation of the same view."""
    rows = []
    for fn in names:
        vals = {}
        for v in (base, cand):
            vals[v] = {k: [(n, (costs[fn].flat_share if fn in costs else 0.0) if k == "flat"
                            else (costs[fn].cum_share if fn in costs else 0.0))
                           for n, costs in shares[v]] for k in ("flat", "cum")}
        out = {}
        for k in ("flat", "cum"):
            bv, cv = vals[base][k], vals[cand][k]
            ch = stats.compare_shares([x for _, x in bv], [x for _, x in cv],
                                      noise_pp=opts.noise_pp, regression_pp=opts.regression_pp)
            out[k] = (Side.of(ch.base, [n for n, _ in bv]), Side.of(ch.cand, [n for n, _ in cv]),
                      ChangeOut.of(ch, "pp"))
        row = FunctionRow(fn, view, *out["flat"], *out["cum"])
        if per_op:
            ns = {}
            for k in ("flat", "cum"):
                side = {v: [(n, (getattr(costs[fn], k) if fn in costs else 0.0) * per_op[v][n])
                            for n, costs in shares[v]] for v in (base, cand)}
                # Absolute cost: relative waterlines like throughput's, lower is better.
                ch = stats.compare([x for _, x in side[base]], [x for _, x in side[cand]],
                                   higher_is_better=False, noise=opts.noise,
                                   regression=opts.regression)
                ns[k] = (Side.of(ch.base, [n for n, _ in side[base]]),
                         Side.of(ch.cand, [n for n, _ in side[cand]]), ChangeOut.of(ch, "ns/op"))
            (row.base_flat_ns, row.cand_flat_ns, row.flat_ns_change) = ns["flat"]
            (row.base_cum_ns, row.cand_cum_ns, row.cum_ns_change) = ns["cum"]
        rows.append(row)
    return rows


# ------------------------------------------------------------ operations per profile rep

def _not_ns(rep_dir: Path, stacks: Any, profiling: Any, facts: RepFacts | None = None) -> str | None:
    """None when the rep's weights are nanoseconds of CPU time, else why not.

    pprof (Parca) weights are ns already. A perf.folded of a cpu-clock/task-clock
    recording sums sample periods (~1e9/hz ns each) when inferno folds periods; a
    count-per-sample fold would be taken for ns and make every per-op number a million
    times too small, so the sample count perf recorded must agree."""
    if stacks.unit == "nanoseconds":
        return None
    facts = read_rep_facts(rep_dir) if facts is None else facts
    perf = facts.perf
    ev = (perf.event if perf else None) or profiling.event
    if ev not in TIME_EVENTS:
        return (f"{rep_dir.name}: folded weights are not CPU time (perf event "
                f"{ev or 'not recorded'}; cpu-clock periods are ns)")
    hz = (perf.frequency_hz if perf else None) or profiling.frequency_hz
    n_samples = perf.samples if perf else None
    if hz and n_samples:
        per = stacks.total / n_samples
        if not 0.5 < per * hz / 1e9 < 2.0:
            return (f"{rep_dir.name}: perf.folded holds {per:.4g} per sample, "
                    f"not the ~{1e9 / hz:.4g} ns period of {hz} Hz cpu-clock")
    return None


def _profile_ops(rep_dir: Path, stacks: Any, profiling: Any, command: list[str]
                 ) -> tuple[float | None, float, str]:
    """(operations completed in the profile window, ns per weight unit, basis) of one
    profile rep; (None, 0, reason) when the rep cannot say.

    Operations: the rep's own ops/s (its load generator ran under the profiler) × the
    seconds perf was attached (rep.json collectors.perf.window_s, else the planned
    window.profile_window_s), capped at the requests the load generator completed (-n):
    perf may outlive the load. A rep whose window has neither (the hand-recorded layout of
    tests/data/runs/record.sh) had perf attached before the load started and stopped after
    it ended, so all -n requests fall inside the profile."""
    facts = read_rep_facts(rep_dir)
    why_not = _not_ns(rep_dir, stacks, profiling, facts)
    if why_not:
        return None, 0.0, why_not
    ns_per_unit = 1.0
    if not any((rep_dir / f).is_file() for f in BENCH_FILES):
        return None, 0.0, "the profile reps hold no load-generator output (no operation count)"
    try:
        rows = _bench_rows(rep_dir, command)
    except ValueError as e:
        return None, 0.0, f"unreadable load-generator output: {e}"
    if len(rows) != 1:
        return None, 0.0, (f"{len(rows)} tests in one profile rep: the window mixes "
                           "operations of different commands")
    rate = rows[0].ops_per_sec
    n = facts.requests
    win = facts.window
    perf_s = facts.perf.window_s if facts.perf else None
    secs, what = ((perf_s, "perf's recorded attach time") if perf_s
                  else (win.profile_window_s if win else None, "the planned profile window"))
    if secs:
        ops = rate * float(secs)
        if n is not None and ops > n:
            return n, ns_per_unit, f"all {n:,.0f} requests of the load (perf outlived the load)"
        return ops, ns_per_unit, f"the rep's ops/s × {what}"
    if n is not None and win is not None and win.perf_covers_load:
        return n, ns_per_unit, ("all requests of the load (-n): perf was attached before the "
                                "load started and stopped after it ended")
    return None, 0.0, f"{rep_dir.name}: no profile window or request count in rep.json"


def _op_command(run: RunDir, rep_dirs: list[Path]) -> str:
    """What one operation is, for "ns per MSET": the command of the profile reps' test."""
    for d in rep_dirs:
        try:
            rows = _bench_rows(d, _case_command(run))
        except (ValueError, OSError):
            continue
        if rows and rows[0].test:
            return rows[0].test.split()[0].upper()
    cmd = (run.manifest.case.get("workload") or {}).get("command") or []
    return str(cmd[0]).upper() if cmd else "operation"


def _mover_key(r: FunctionRow) -> tuple:
    c = r.flat_change
    established = c.ci_low is not None and (c.ci_low > 0 or c.ci_high < 0)
    return (not established, -abs(c.delta), r.name)


def _profiles(run: RunDir, base: str, cand: str, focus: list[str], opts: argparse.Namespace
              ) -> tuple[ProfileSection, dict[str, Any]]:
    from analysis.profile import stacks as profile
    m = run.manifest
    kinds = ["profile"]
    loaded: dict[str, list[tuple[int, Any]]] = {base: [], cand: []}
    ops: dict[str, dict[int, tuple[float | None, float, str]]] = {base: {}, cand: {}}
    rep_dirs: list[Path] = []
    all_ns = True
    for v in (base, cand):
        for kind in kinds:
            for rep in m.reps(v, kind):
                try:
                    s = _load_stacks(run.rep_dir(rep))
                except (profile.FoldedError, ValueError) as e:
                    raise CompareError(str(e)) from None
                if s is not None and s.total > 0:
                    loaded[v].append((rep.rep, s))
                    ops[v][rep.rep] = _profile_ops(run.rep_dir(rep), s, m.profiling,
                                                   _case_command(run))
                    rep_dirs.append(run.rep_dir(rep))
                    all_ns = all_ns and _not_ns(run.rep_dir(rep), s, m.profiling) is None
        loaded[v].sort(key=lambda t: t[0])
    if all_ns:
        # cpu-clock folds: the weights are ns, so say so in results.json, the flame
        # graphs and the pprof files (one unit for all reps: they are merged and diffed).
        for v in loaded:
            for _, s in loaded[v]:
                s.unit = "nanoseconds"
    merged = {v: profile.merge([s for _, s in loaded[v]]) for v in loaded if loaded[v]}
    if not loaded[base] or not loaded[cand]:
        missing = [v for v in (base, cand) if not loaded[v]]
        return ProfileSection(False, reason=f"no profile reps (perf.folded or profile.pb.gz) "
                                            f"for {', '.join(missing)}"), merged
    main_names = tuple(sorted({Path(str(vv.server_bin or "")).name[:15]
                               for vv in m.variants.values()} - {""}))
    has_threads = all(s.thread_frame for v in loaded for _, s in loaded[v])
    io_share = {v: max((100 * profile.thread_groups(s, main_names)["io-threads"].total / s.total
                        if "io-threads" in profile.thread_groups(s, main_names) else 0.0)
                       for _, s in loaded[v]) if has_threads else 0.0 for v in loaded}
    thread, note = opts.thread, ""
    if not has_threads:
        thread, note = "all", "the profiles carry no thread frame: shares are process-wide."
    elif thread is None:
        if max(io_share.values()) > 0:
            thread = "main"
            note = ("main thread only (% of the main thread's samples): io-threads hold up to "
                    + ", ".join(f"{io_share[v]:.1f}% ({v})" for v in (base, cand))
                    + " of the samples, and busy-polling io-threads would dilute every "
                      "process-wide share; `--thread all` for process-wide shares.")
        else:
            thread = "all"
            note = "all threads (no io-threads in the profiles)."
    else:
        note = {"main": "main thread only (% of the main thread's samples), as asked (--thread main).",
                "all": "all threads (% of all samples), as asked (--thread all).",
                "io-threads": "io-threads only (% of their samples), as asked (--thread io-threads)."
                }[thread]

    def shares_for(view: str) -> dict[str, list[tuple[int, dict[str, Any]]]]:
        return {v: [(n, profile.function_costs(_view(s, view, main_names))) for n, s in loaded[v]]
                for v in (base, cand)}

    sh = shares_for(thread)
    known = {fn for v in sh for _, c in sh[v] for fn in c}
    focus_present = [f for f in focus if f in known]
    sec = ProfileSection(True, thread=thread, thread_note=note,
                         weight_unit=loaded[base][0][1].unit,
                         samples={v: [s.total for _, s in loaded[v]] for v in (base, cand)},
                         reps={v: [n for n, _ in loaded[v]] for v in (base, cand)},
                         missing_focus=[f for f in focus if f not in known])
    per_op = _per_op(run, sec, ops, rep_dirs, loaded, base, cand, thread, main_names, opts)
    sec.focus = _function_rows(focus_present, sh, base, cand, thread, opts, per_op)
    if thread != "all":
        sec.focus_other_view = _function_rows(focus_present, shares_for("all"), base, cand,
                                              "all", opts, per_op)
    # Movers: every function that reached 0.1% of the view's samples in some rep.
    cands = sorted({fn for v in sh for _, c in sh[v] for fn, fc in c.items()
                    if fc.flat_share >= 0.1})
    movers = _function_rows(cands, sh, base, cand, thread, opts, per_op)
    sec.movers = sorted(movers, key=_mover_key)[: opts.top]
    for fn in focus_present:
        per = {}
        for v in (base, cand):
            mv = _view(merged[v], thread, main_names)
            tot = mv.total or 1.0
            per[v] = {k: 100.0 * w / tot for k, w in profile.callers(mv, fn).items()}
        names = sorted(set(per[base]) | set(per[cand]),
                       key=lambda k: (-max(per[base].get(k, 0), per[cand].get(k, 0)), k))
        for k in names[:CALLERS_PER_FOCUS]:
            sec.callers.append(CallerRow(fn, k, per[base].get(k, 0.0), per[cand].get(k, 0.0)))
    if has_threads:
        groups = sorted({g for v in loaded for _, s in loaded[v]
                         for g in profile.thread_groups(s, main_names)},
                        key=lambda g: profile.THREAD_GROUPS.index(g))
        for g in groups:
            vals = {v: [(n, 100.0 * profile.thread_groups(s, main_names).get(
                g, profile.Stacks()).total / s.total) for n, s in loaded[v]] for v in (base, cand)}
            ch = stats.compare_shares([x for _, x in vals[base]], [x for _, x in vals[cand]],
                                      higher_is_better=True, noise_pp=opts.noise_pp,
                                      regression_pp=opts.regression_pp)
            sec.threads.append(ThreadRow(g, Side.of(ch.base, sec.reps[base]),
                                         Side.of(ch.cand, sec.reps[cand]), ChangeOut.of(ch, "pp")))
    return sec, merged


def _per_op(run: RunDir, sec: ProfileSection, ops: dict[str, dict[int, tuple]],
            rep_dirs: list[Path], loaded: dict[str, list[tuple[int, Any]]], base: str, cand: str,
            thread: str, main_names: tuple[str, ...], opts: argparse.Namespace
            ) -> dict[str, dict[int, float]] | None:
    """Fill sec.per_op*; the factor (ns/op per weight unit) of every profile rep, or None
    (and sec.per_op_reason) when any rep lacks an operation count: a per-op median over
    some reps only would compare different things."""
    if run.manifest.case.get("workload", {}).get("tool") == "rdb-load":
        sec.per_op_reason = "an rdb-load case has no load-generator operations"
        return None
    bad = sorted({r[2] for v in ops for r in ops[v].values() if r[0] is None})
    if bad:
        sec.per_op_reason = "; ".join(bad)
        return None
    factor = {v: {n: ns_unit / o for n, (o, ns_unit, _) in ops[v].items() if o}
              for v in ops}
    if any(len(factor[v]) != len(ops[v]) for v in ops):
        sec.per_op_reason = "a profile rep completed no operations"
        return None
    sec.per_op = True
    sec.per_op_command = _op_command(run, rep_dirs)
    sec.ops = {v: [ops[v][n][0] for n, _ in loaded[v]] for v in (base, cand)}
    bases = sorted({r[2] for v in ops for r in ops[v].values()})
    sec.per_op_basis = "; ".join(bases)
    tot = {v: [(n, _view(s, thread, main_names).total * factor[v][n]) for n, s in loaded[v]]
           for v in (base, cand)}
    sec.per_op_total = _metric(f"all samples ({THREAD_LABEL[thread]})", "CPU time per operation",
                               "ns/op", False, tot[base], tot[cand], opts)
    return factor


def _artifacts(merged: dict[str, Any], base: str, cand: str, out: Path,
               hz: float | None = None) -> Artifacts:
    from analysis.report import flamegraph
    from analysis.profile import pprof
    from analysis.profile import stacks as profile
    art = Artifacts()
    # ns weights: pprof needs what one sample is worth to give sample counts too
    period_ns = round(1e9 / hz) if hz else None
    for v, s in merged.items():
        folded = out / f"{v}.folded"
        profile.write_folded(s, folded)
        art.folded[v] = folded.name
        try:
            pprof.write_pprof(s, out / f"{v}.pb.gz", period_ns=period_ns)
            art.pprof[v] = f"{v}.pb.gz"
        except (OSError, ValueError) as e:
            art.errors.append(f"pprof for {v}: {e}")
    count = "samples" if next(iter(merged.values())).unit == "samples" else "ns"
    try:
        for v in merged:
            svg = out / f"flame-{v}.svg"
            flamegraph.flamegraph_svg(out / art.folded[v], svg, title=f"{v}: CPU flame graph "
                                      f"(all threads, profile reps merged)", count_name=count)
            art.flamegraphs[v] = svg.name
        if base in merged and cand in merged:
            svg = out / "flame-diff.svg"
            flamegraph.diff_flamegraph_svg(out / art.folded[base], out / art.folded[cand], svg,
                                           normalize=True, count_name=count,
                                           title=f"Differential flame graph: {cand} vs {base} "
                                                 f"(normalised; red grew, blue shrank)")
            art.diff_flamegraph = svg.name
    except flamegraph.FlameGraphError as e:
        art.errors.append(f"flame graphs not rendered: {e}")
    return art


# ------------------------------------------------------------------------------- TMA

TMA_FILES = ("tma.csv", "tma.json", "tma.txt")


def _tma(run: RunDir, base: str, cand: str) -> TmaSection:
    from analysis.tma import funnel, formats
    from analysis.tma import model as tma
    m = run.manifest
    mt = m.tma
    res: dict[str, list[Any]] = {base: [], cand: []}
    srcs: dict[str, list[str]] = {base: [], cand: []}
    no_pmu = None
    bad: list[str] = []
    for v in (base, cand):
        for rep in m.reps(v):
            for name in TMA_FILES:
                p = run.rep_dir(rep) / name
                if not p.is_file():
                    continue
                try:
                    res[v].append(formats.parse_file(p))
                    srcs[v].append(f"{rep.dir}/{name}")
                except tma.NoPmuError as e:
                    no_pmu = e.evidence
                except tma.TmaParseError as e:
                    # One unreadable TMA file must not cost the whole report: the TMA
                    # section says which file and line instead.
                    bad.append(str(e))
                break
    replay = mt.backend == "replay" or mt.status == "replay"
    if res[base] and res[cand]:
        f = funnel.compare(res[base], res[cand], depth=4, base_label=base, cand_label=cand)
        return TmaSection("replay" if replay else "measured",
                          reason=str(mt.reason or "") if replay else "",
                          funnel=f.to_json(), funnel_markdown=f.to_markdown(), sources=srcs)
    if bad:
        return TmaSection("absent", reason="unreadable TMA output: " + "; ".join(bad), sources=srcs)
    reason = mt.reason or (f"no hardware PMU ({no_pmu})" if no_pmu else None)
    if not reason:
        backend = mt.backend or "off"
        reason = (f"no tma.* files in the reps (TMA backend: {backend})" if not any(res.values())
                  else f"TMA data for only one side ({', '.join(v for v in res if res[v])})")
    return TmaSection("absent", reason=str(reason), sources=srcs)


# ----------------------------------------------------------------------- environment

def _environment(run: RunDir, base: str, cand: str) -> dict[str, Any]:
    m = run.manifest
    keep = ("source", "version", "commit", "binary_sha256", "make_flags", "config", "patches",
            "spec", "callgraph", "frame_pointers")
    return {"host": dict(m.host), "tools": dict(m.tools), "placement": m.placement.to_json(),
            "profiling": m.profiling.to_json(), "load_generator": dict(m.load_generator),
            "variants": {v: {k: m.variants[v].to_json().get(k) for k in keep} for v in (base, cand)}}


# --------------------------------------------------------------------------- summary

def fmt_pct(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None else f"{x * 100:+.{digits}f}%".replace("-", "−")


def fmt_signed(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None else f"{x:+.{digits}f}".replace("-", "−")


def rel_ci(c: ChangeOut) -> str:
    if c.rel_ci_low is None or c.rel_ci_high is None:
        return "[n/a]"
    return f"[{fmt_signed(c.rel_ci_low * 100)}, {fmt_signed(c.rel_ci_high * 100)}]"


def pp_ci(c: ChangeOut, digits: int = 1) -> str:
    if c.ci_low is None or c.ci_high is None:
        return "[n/a]"
    return f"[{fmt_signed(c.ci_low, digits)}, {fmt_signed(c.ci_high, digits)}]"


def fmt_ns(x: float | None) -> str:
    """CPU time per operation, 3 significant digits, in ns, µs or ms (a reader takes
    "44.0 µs" in at a glance, "44012 ns" not)."""
    if x is None:
        return "n/a"
    a, unit, scale = abs(x), "ns", 1.0
    if a >= 1e6:
        unit, scale = "ms", 1e6
    elif a >= 1e3:
        unit, scale = "µs", 1e3
    v = x / scale
    digits = 0 if abs(v) >= 100 or v == 0 else (1 if abs(v) >= 10 else 2)
    return f"{v:.{digits}f} {unit}"


THREAD_LABEL = {"main": "main thread", "all": "all threads", "io-threads": "io-threads"}


def _summary(r: Results) -> list[SummaryItem]:
    out = []
    for row in r.throughput:
        c = row.change
        out.append(SummaryItem(f"Throughput {short_test(row.test, 32)}",
                               f"{fmt_pct(c.rel)} {rel_ci(c)}%", c.verdict))
    for row in r.paired:
        c = row.change
        out.append(SummaryItem("Paired throughput", f"{fmt_pct(c.rel)} {rel_ci(c)}%", c.verdict))
    for row in r.profile.focus:
        c = row.flat_change
        n = row.flat_ns_change
        per_op = n is not None and row.base_flat_ns is not None and row.cand_flat_ns is not None
        # The per-operation cost does not dilute, so it carries the verdict; a share
        # verdict that disagrees stays in sight (a share can rise while the cost falls).
        share_v = f", share: {c.verdict}" if per_op and n.verdict != c.verdict else ""
        text = (f"{row.base_flat.median:.1f}% → {row.cand_flat.median:.1f}% "
                f"({fmt_signed(c.delta)} pp {pp_ci(c)} pp{share_v})")
        verdict = c.verdict
        if per_op:
            text += (f", {fmt_ns(row.base_flat_ns.median)} → {fmt_ns(row.cand_flat_ns.median)}"
                     f" per {r.profile.per_op_command} ({fmt_pct(n.rel, 0)} {rel_ci(n)}%)")
            verdict = n.verdict
        out.append(SummaryItem(f"{row.name} flat ({THREAD_LABEL[row.thread]})", text, verdict))
    t = r.tma
    if t.status == "absent":
        # The full reason (with how to fix it) is in the TMA section; one glance needs its head.
        head = re.split(r"[:;(]", t.reason, maxsplit=1)[0].strip()
        out.append(SummaryItem("TMA", f"not collected ({head}; see the TMA section)", ""))
    else:
        rows = (t.funnel or {}).get("rows", [])
        tag = " (REPLAY of recorded fixture files, not this run)" if t.status == "replay" else ""
        sig = [x for x in rows if x.get("significant")]
        moved = sig or [x for x in rows if x.get("notable")]
        if moved:
            top = max(moved, key=lambda x: abs(x.get("delta_pp") or 0))
            est = "" if sig else ", not established"
            out.append(SummaryItem("TMA", f"{top['node']} {fmt_signed(top.get('delta_pp'))} pp "
                                          f"({len(moved)} node(s) moved{est}){tag}",
                                   top.get("verdict", "") if sig else ""))
        else:
            out.append(SummaryItem("TMA", f"no node moved beyond noise{tag}", "no change"))
    return out


# ------------------------------------------------------------------------------ main

def analyse(run: RunDir, opts: argparse.Namespace, out: Path | None = None) -> Results:
    m = run.manifest
    names = run.variant_names
    if len(names) < 2:
        raise CompareError(f"{run.path / 'manifest.json'}: needs two variants to compare, "
                           f"has {names}")
    base = opts.base or names[0]
    cand = opts.cand or next(n for n in names if n != base)
    for v in (base, cand):
        if v not in names:
            raise CompareError(f"{run.path / 'manifest.json'}: no variant {v!r} (has {names})")
    focus = opts.focus if opts.focus is not None else list(m.case.get("focus") or [])
    settings = {"noise": opts.noise, "regression": opts.regression, "noise_pp": opts.noise_pp,
                "regression_pp": opts.regression_pp, "thread": opts.thread or "auto",
                "top": opts.top, "confidence": 0.95, "max_cv": 0.10, "focus": focus}
    r = Results(run_id=m.run_id, created=m.created,
                case={"name": m.case.get("name", ""), "description": m.case.get("description", ""),
                      "size": m.size, "focus": focus,
                      "command": (m.case.get("workload") or {}).get("command", [])},
                base=base, cand=cand, settings=settings)
    r.throughput, r.latency = _throughput(run, base, cand, opts)
    r.paired = _paired(run, base, cand, opts)
    r.profile, merged = _profiles(run, base, cand, focus, opts)
    if out is not None and merged:
        hz = m.profiling.frequency_hz
        r.artifacts = _artifacts(merged, base, cand, out,
                                 float(hz) if isinstance(hz, (int, float)) and hz > 0 else None)
    r.tma = _tma(run, base, cand)
    r.environment = _environment(run, base, cand)
    r.reproduce = {"run": shlex.join(m.command) if m.command else "",
                   "report": shlex.join(["python", "-m", "analysis", "compare", str(opts.run_dir)])}
    l3 = m.dataset.l3_warning
    if l3:
        r.notes.append(l3)
    if not r.throughput and not r.paired:
        r.notes.append("no throughput reps with bench.csv/bench.json/bench.txt on both sides")
    failed = [f"{x.dir} ({x.reason or 'failed'})" for x in m.schedule if x.status == "failed"]
    if failed:
        r.notes.append("failed reps left out: " + "; ".join(failed))
    pending = [x.dir for x in m.schedule if x.status in ("pending", "running")]
    if pending:
        r.notes.append("run not finished; reps not done: " + ", ".join(pending))
    r.summary = _summary(r)
    return r


def write_reports(r: Results, out: Path, md_limit: int | None = None) -> dict[str, Path]:
    from analysis.report import html as report_html
    from analysis.report import markdown as report_md
    out.mkdir(parents=True, exist_ok=True)
    paths = {"md": out / "report.md", "html": out / "report.html", "json": out / "results.json"}
    kw = {"limit": md_limit} if md_limit else {}
    paths["md"].write_text(report_md.render(r, **kw))
    paths["json"].write_text(r.dumps())
    paths["html"].write_text(report_html.render(r, out))
    return paths
