"""Was the server the bottleneck? The saturation section, from each rep's CPU facts
(rep.json saturation: per-thread server CPU and the load generator's CPU over the load)
and from the main thread's profile (the share it spent polling in the event loop).

A throughput verdict only says something about the server when the server's main thread
was the one working flat out. When it waited for the client (100 unpipelined clients on
2 cores), or the host ran out of CPUs, a change in the server cannot show in throughput
however much CPU it saves; the report then says so beside the verdict.
"""
from __future__ import annotations

import statistics
from typing import Iterable

from analysis.compare.results import SaturationSection, SaturationSide
from analysis.inputs.repfacts import Saturation
from analysis.inputs.rundir import RunDir
from analysis.profile.stacks import Stacks, thread_groups

# The main thread is doing the server's work when it works at least this share of the time.
WORKING = 0.80
# The load generator (or the host) is saturated at this share of its CPUs.
SATURATED = 0.85
# The main thread was kept off its CPU (runnable, waiting) at least this share of the window.
CONTENDED = 0.10
# Where an event loop spends CPU without serving anyone: in epoll itself, or computing its
# next timeout in a loop that does not block (Valkey's main thread while io-threads work).
POLL_FRAMES = {"epoll_wait", "__x64_sys_epoll_wait", "do_epoll_wait", "aeApiPoll"}
EVENT_LOOP = {"aeMain", "aeProcessEvents", "aeProcessEvents.part.0"}
CLOCKS = {"getMonotonicUs", "getMonotonicUs_x86", "ustime", "mstime", "monotonicInit",
          "clock_gettime", "__clock_gettime", "__vdso_clock_gettime"}
# glibc's local-time conversion (localtime_r: the loop refreshing its cached time on every
# iteration). glibc has no frame pointers, so these samples lose their callers; a stack
# made of nothing else is the event loop's clock refresh too.
LOCALTIME = {"localtime_r", "__localtime_r", "__localtime64_r", "__offtime", "__tz_convert",
             "__tzfile_compute", "__tzstring", "__tzstring_len", "__tz_compute", "[unknown]"}


def polling_share(stacks: Stacks, main_names: tuple[str, ...] = ()) -> float | None:
    """Share of the main thread's samples spent polling (0..1); None without main samples."""
    main = thread_groups(stacks, main_names).get("main") if stacks.thread_frame else stacks
    if main is None or main.total <= 0:
        return None
    waiting = 0.0
    for frames, w in main.weights.items():
        fns = main.functions_of(frames)
        if POLL_FRAMES.intersection(fns) or (
                len(fns) >= 2 and fns[-1] in CLOCKS and fns[-2] in EVENT_LOOP) or (
                fns and set(fns) <= LOCALTIME | CLOCKS and fns[-1] in LOCALTIME):
            waiting += w
    return waiting / main.total


def _median(xs: Iterable[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return statistics.median(vals) if vals else None


def _side(facts: list[Saturation], polling: float | None, cpus: int) -> SaturationSide:
    mains = [f.main_thread() for f in facts]
    main_busy = _median(m.busy for m in mains if m is not None)
    others: dict[str, list[float]] = {}
    for f in facts:
        for t in f.server_threads:
            if t.tid != f.main_tid and t.busy >= 0.01:
                others.setdefault(t.name, []).append(t.busy)
    client = _median(f.client_busy for f in facts)
    capacity = _median(f.client_capacity for f in facts)
    host = _median(f.host_busy if f.host_busy is not None else
                   (sum(t.busy for t in f.server_threads) + (f.client_busy or 0.0)) / cpus
                   for f in facts)
    working = None if main_busy is None else main_busy * (1.0 - (polling or 0.0))
    return SaturationSide(len(facts), main_busy, polling, working,
                          {k: statistics.median(v) for k, v in sorted(others.items())},
                          client, capacity, host,
                          main_waiting=_median(m.waiting for m in mains if m is not None),
                          host_steal=_median(f.host_steal for f in facts))


def _facts_of(run: RunDir, variant: str) -> list[Saturation]:
    """The throughput-measuring reps of a variant (paired reps serve both variants), else
    its profile reps."""
    m = run.manifest
    for kinds in (("throughput", "paired"), ("profile",)):
        reps = [r for r in m.reps() if r.kind in kinds and r.variant in (variant, "paired")]
        # Paired servers: each server's own windows; one process: the rep's whole window.
        facts = [f for f in (run.facts(r).saturation_by_variant.get(variant) or run.facts(r).saturation
                             for r in reps) if f is not None]
        if facts:
            return facts
    return []


def main_busy(run: RunDir, variant: str) -> float | None:
    """The median share of the window the variant's server main thread was on a CPU."""
    mains = [f.main_thread() for f in _facts_of(run, variant)]
    return _median(m.busy for m in mains if m is not None)


def _verdict(s: SaturationSide, cpus: int) -> tuple[str, str, list[str]]:
    """(bottleneck, sentence, suggestions) of one side."""
    busy, working = s.main_busy or 0.0, s.main_working or 0.0
    polling = f" ({s.main_polling:.0%} of its samples polling the event loop)" if s.main_polling else ""
    client_load = (s.client_busy or 0.0) / (s.client_capacity or 1.0)
    if working >= WORKING:
        return "server", f"server main thread {busy:.0%} busy{polling}: the server was the bottleneck", []
    waiting = s.main_waiting or 0.0
    # Polling is no work whether on a CPU or waiting for one: discount it from both.
    wanted = (busy + waiting) * (1.0 - (s.main_polling or 0.0))
    if wanted >= WORKING and waiting >= CONTENDED:
        # It always had work but had to wait for a CPU: the server is the bottleneck, on a
        # host where something else took its CPU. Its throughput is understated and noisy.
        steal = f", {s.host_steal:.0%} stolen by the hypervisor" if s.host_steal else ""
        return ("contended", f"server main thread had work {wanted:.0%} of the window but "
                f"was on a CPU only {busy:.0%}: other processes took the rest (host CPUs "
                f"{s.host_busy or 0.0:.0%} busy{steal}); the server was the bottleneck, but its "
                "throughput is understated and noisier than on a quiet host",
                ["run on a quiet host (nothing else running; stallscope doctor shows the load)",
                 "more reps or paired windows to narrow the interval"])
    more = ["pipeline the load (workload.pipeline, e.g. --set workload.pipeline=16 or a case's "
            "pipeline=16 point)", "more load-generator threads (workload.threads)",
            "the load generator on another host"]
    if client_load >= SATURATED:
        return ("client", f"server main thread {busy:.0%} busy{polling}: throughput was limited by "
                f"the client (load generator at {client_load:.0%} of its {s.client_capacity:g} "
                "CPU); a change in the server cannot show here", more)
    if (s.host_busy or 0.0) >= SATURATED:
        server = (busy + sum(s.other_threads.values())) / cpus
        client = (s.client_busy or 0.0) / cpus
        return ("host", f"server main thread {busy:.0%} busy{polling} while this host's {cpus} CPUs "
                f"were {s.host_busy:.0%} busy (server threads {server:.0%}, load generator "
                f"{client:.0%}, other processes the rest): the host, not the server's main thread, "
                "limited throughput; a change in the server may not show here",
                more[:1] + ["fewer io-threads than CPUs, or a host with more cores"])
    return ("latency", f"neither the server main thread ({busy:.0%} busy{polling}) nor the load "
            f"generator ({client_load:.0%}) was saturated: too few requests in flight to load the "
            "server; a change in the server may not show here", more[:1] + ["more clients (workload.clients)"])


def saturation(run: RunDir, base: str, cand: str, merged: dict[str, Stacks],
               main_names: tuple[str, ...] = ()) -> SaturationSection:
    cpus = run.manifest.host.logical_cpus or 1
    sides = {}
    for v in (base, cand):
        facts = _facts_of(run, v)
        if facts:
            polling = polling_share(merged[v], main_names) if v in merged else None
            sides[v] = _side(facts, polling, cpus)
    if len(sides) < 2:
        return SaturationSection(False, reason="the reps carry no saturation facts (runs made "
                                               "before stallscope recorded them, or rdb-load)")
    verdicts = {v: _verdict(s, cpus) for v, s in sides.items()}
    # The base decides: it is where the candidate's saving would have to show.
    kind, note, suggest = verdicts[base]
    if kind in ("server", "contended") and verdicts[cand][0] not in ("server", kind):
        kind, note, suggest = verdicts[cand]
        note = f"{cand}: {note}"
    return SaturationSection(True, sides=sides, bottleneck=kind, note=note, suggestions=suggest)
