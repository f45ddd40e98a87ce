"""Which threads perf unwinds with DWARF: chosen once per run, from a measurement.

Frame-pointer call graphs (-g) are cheap (the kernel follows %rbp) but end at any frame
that uses %rbp for something else. Debian's glibc has no frame pointers, and its
localtime_r keeps an argument in %rbp (__tz_convert): Valkey calls it in afterSleep() on
every event-loop iteration, and in the README's pipelined Valkey run 8-16% of the main
thread's samples (__offtime, __tz_convert, __tzfile_compute ... under localtime_r) lost
every caller. DWARF call graphs copy the user stack with each sample and unwind it
afterwards from .eh_frame, through glibc too, but cost more per sample, make perf.data
~80 times larger, and do worse where a stack is deeper than the copy: Valkey's
io-threads under jemalloc's tcache flush lost 3% of their stacks with DWARF at 16 KiB,
none with frame pointers.

Frame pointers also skip frames without truncating: while a sample is in code that keeps
no frame (glibc's memcmp, write, clock_gettime; the vDSO), the walk starts from its caller's
frame and lists the caller's caller, so the caller itself is missing (`call;clock_gettime;
__vdso_clock_gettime` where msetGenericCommand called clock_gettime): every cumulative row
misses the time its function spends directly in the C library. analysis/profile/skipped.py
counts such samples; a Redis MSET main thread skips a caller in 5-23% of its samples
(write, memcmp, read, epoll_wait), and DWARF in none.

So `--call-graph auto` measures before it chooses: the first profile rep of a run starts
with a short frame-pointer probe (PROBE_HZ for a tenth of its window, at most
PROBE_MAX_S; none in a window under MIN_PROBE_WINDOW_S, which keeps frame pointers), and
every thread (by name) whose probe stacks are truncated, or skip a caller, over SWITCH_PCT %
with 95% confidence (the one-sided lower bound of the binomial share, `over_the_line`) is
unwound with DWARF in every profile rep of the run, the other threads with frame pointers.
A paired rep probes each of its two servers in its warm-up and unwinds a thread with DWARF
in both when either needs it (`merge`), so both are sampled alike. A bound,
not the share seen: a Redis MSET main thread truncates 0.4-1.3% of ~240 probe samples (3 of
240 is 1.25%), and the point estimate alone flipped a run's mode from run to run; a thread
that needs DWARF is far over the line (Valkey's main thread: 8-16%). The probe is outside
the rep's profile windows (it measures neither the profile nor perf's cost); its facts go
into every profile rep's rep.json (collectors.perf.unwind_probe), so a resumed run keeps
the choice and the report says what was chosen and why.
"""
from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from scipy.stats import binomtest

from analysis.inputs.collector_facts import PerfFacts, ThreadProbe, UnwindProbe
from analysis.inputs.rundir import RunDirError, read_rep_facts
from analysis.profile.skipped import ThreadSkips
from analysis.profile.stacks import Stacks, read_folded
from analysis.profile.truncation import truncation
from collectors.host import procs
from collectors.profilers.perf.record import ProfileError, fold, record_argv, require_tools
from collectors.profilers.perf.windows import PerfControl

PROBE_HZ = 999           # ~1000 samples per busy thread in a 1 s probe: a 1% share is ±0.3
PROBE_MAX_S = 1.0
PROBE_SHARE = 0.1        # of the rep's window (--size small: 0.24 s of a 2.4 s window);
                         # perf's start and the folding add ~0.5 s (more on a busy host)
SWITCH_PCT = 1.0         # % of a thread's probe samples with a truncated stack
CONFIDENCE = 0.95        # one-sided: the share's lower bound must pass SWITCH_PCT
MIN_SAMPLES = 30         # a thread with fewer probe samples is not judged (keeps fp)
MIN_PROBE_WINDOW_S = 2.0  # a shorter profile window gets no probe (frame pointers)
ROOTS_KEPT = 5


@dataclass
class Unwinding:
    """How perf unwinds in a rep: one mode for all threads, or DWARF for some."""
    callgraph: str                                    # fp | dwarf | fp+dwarf
    dwarf_threads: list[str] = field(default_factory=list)   # with fp+dwarf: thread names
    probe: UnwindProbe | None = None                  # the measurement that chose it


def choose(asked: str, binary_mode: str, pid: int, rep_dir: Path, window_s: float,
           cpus: list[int] | None, stem: str = "perf.probe") -> Unwinding:
    """`asked`: fp | dwarf | auto | whole (--call-graph); `binary_mode`: dwarf when the server
    has no frame pointers at all (collectors/variants/binary.py), then every thread needs it.
    auto switches a thread to DWARF for truncated stacks, whole for skipped callers too."""
    if asked in ("fp", "dwarf"):
        return Unwinding(asked)
    if binary_mode == "dwarf":
        return Unwinding("dwarf")
    probe = earlier_probe(rep_dir)
    if probe is None and window_s < MIN_PROBE_WINDOW_S:
        # The probe costs about a second of wall time whatever its length (perf's start,
        # the folding): in a window this short it would leave almost nothing to profile
        # (a 1.2 s window kept 0.3 s and 9 samples). Frame pointers then; the report still
        # counts truncated stacks in the profile itself (analysis/profile/truncation.py).
        return Unwinding("fp")
    if probe is None:
        probe = run_probe(pid, rep_dir, min(PROBE_MAX_S, PROBE_SHARE * window_s), cpus, stem)
    return decide(probe, skipped=asked == "whole")


def decide(probe: UnwindProbe, skipped: bool = False) -> Unwinding:
    """DWARF for every thread of the probe whose stacks are truncated (or, with `skipped`:
    --call-graph whole, skip a caller) over the line (over_the_line), frame pointers for the
    others. Skipped callers alone do not switch by default: a DWARF sample costs the server up
    to twice a frame-pointer one, and that cost lands in every absolute CPU time per operation
    (a 3 us known cost read +5.0 us [+4.4, +5.6], and three functions beside it were called
    regressions: docs/statistics.md, "Skipped callers"); the report counts them and says how to
    recover them."""
    names = sorted(n for n, t in probe.threads.items() if needs_dwarf(t, skipped))
    return Unwinding("fp+dwarf" if names else "fp", names, probe)


def needs_dwarf(t: ThreadProbe, skipped: bool = True) -> bool:
    return (over_the_line(t.samples, t.truncated_pct)
            or (skipped and t.skipped_pct is not None and over_the_line(t.samples, t.skipped_pct)))


def merge(a: UnwindProbe, b: UnwindProbe) -> UnwindProbe:
    """Two servers' probes as one (a paired rep probes each: both are then unwound alike):
    per thread the probe that needs DWARF more (its larger share), the first one's times."""
    worse = lambda t: max(t.truncated_pct, t.skipped_pct or 0.0)  # noqa: E731
    threads = dict(a.threads)
    for name, t in b.threads.items():
        if name not in threads or (needs_dwarf(t), worse(t)) > (needs_dwarf(threads[name]), worse(threads[name])):
            threads[name] = t
    out = UnwindProbe.from_json(a.to_json())
    out.threads, out.rep = threads, f"{a.rep}, {b.rep}" if b.rep != a.rep else a.rep
    out.seconds = round(a.seconds + b.seconds, 3)
    return out


def over_the_line(samples: int, truncated_pct: float, line_pct: float = SWITCH_PCT) -> bool:
    """A thread's probe says its stacks are truncated over `line_pct` %: enough samples
    (MIN_SAMPLES) and the one-sided lower bound at CONFIDENCE of the truncated share
    (Clopper-Pearson) above the line."""
    if samples < MIN_SAMPLES:
        return False
    k = round(samples * truncated_pct / 100)
    if k == 0:
        return False
    # a two-sided interval at 1 - 2(1 - CONFIDENCE) has the one-sided lower bound
    two_sided = 1 - 2 * (1 - CONFIDENCE)
    low = binomtest(k, samples).proportion_ci(confidence_level=two_sided, method="exact").low
    return 100 * low > line_pct


def earlier_probe(rep_dir: Path) -> UnwindProbe | None:
    """The probe an earlier profile rep of this run made (the first, by its time), read
    from the run directory's rep.json files; None outside a run directory."""
    run_dir = rep_dir.parent.parent
    if not (run_dir / "manifest.json").is_file():
        return None
    found = []
    for f in run_dir.glob("*/*/rep.json"):
        try:
            facts = read_rep_facts(f.parent)
        except (OSError, RunDirError):
            continue
        # a profile rep's collectors.perf, or a paired rep's collectors["perf:<variant>"]
        for c in facts.collectors.values():
            if isinstance(c, PerfFacts) and c.unwind_probe is not None:
                found.append(c.unwind_probe)
    return min(found, key=lambda p: p.at) if found else None


def run_probe(pid: int, rep_dir: Path, seconds: float, cpus: list[int] | None,
              stem: str = "perf.probe") -> UnwindProbe:
    """Frame-pointer samples of every thread for `seconds`; per thread name, the share of
    stacks that do not reach the thread's entry and where they start. The folded probe is
    kept as <stem>.folded (perf.probe.folded)."""
    perf, collapse = require_tools()
    data, err_path = rep_dir / f"{stem}.data", rep_dir / "perf.stderr"
    t0 = time.time()
    argv = record_argv(perf, pid, data, PROBE_HZ, "fp")
    control = PerfControl()
    # Sampling starts at "enable", once perf is attached (~0.2 s): the probe lasts `seconds`.
    # --no-bpf-event: without it perf's BPF side-band thread holds its exit up to 1 s.
    argv[2:2] = [*control.argv(), "--no-bpf-event"]
    with open(err_path, "ab") as err:
        p = procs.spawn(argv, stdout=err, stderr=err, cpus=cpus)
        try:
            control.send("enable", perf=p)
            time.sleep(seconds)
        except RuntimeError:
            pass                  # perf exited or never answered: its status says why, below
        finally:
            control.close()
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
            rc = p.wait(30)
            procs.forget(p)
    if rc not in (0, -signal.SIGINT, 128 + signal.SIGINT) or not data.is_file():
        raise ProfileError(f"perf record (unwinding probe) exited with status {rc}; see {err_path}")
    folded = rep_dir / f"{stem}.folded"
    skips = fold(perf, collapse, [data], folded, err_path).skipped
    data.unlink()
    threads = {name: _thread_facts(st, skips.get(name)) for name, st
               in by_thread_name(read_folded(folded)).items()}
    return UnwindProbe(at=round(t0, 3), rep=f"{rep_dir.parent.name}/{rep_dir.name}",
                       seconds=round(seconds, 3), wall_s=round(time.time() - t0, 3),
                       frequency_hz=PROBE_HZ, callgraph="fp", switch_pct=SWITCH_PCT,
                       min_samples=MIN_SAMPLES, confidence=CONFIDENCE, threads=threads)


def by_thread_name(stacks: Stacks) -> dict[str, Stacks]:
    out: dict[str, Stacks] = {}
    for frames, w in stacks.weights.items():
        out.setdefault(frames[0], Stacks(unit=stacks.unit)).add(frames, w)
    return out


def _thread_facts(st: Stacks, skips: ThreadSkips | None) -> ThreadProbe:
    """A thread's truncated share (of the folded weight) and skipped share (of the samples
    perf script printed for its name: inferno names a folded stack by the same comm)."""
    t = truncation(st)
    period_ns = 1e9 / PROBE_HZ          # cpu-clock at -F: a fixed period per sample
    roots = {k: round(100 * w / t.total, 2) for k, w in list(t.roots.items())[:ROOTS_KEPT]}
    out = ThreadProbe(round(t.total / period_ns), round(t.share, 2), roots)
    if skips is not None and skips.samples:
        out.skipped_pct = round(100 * skips.skipped / skips.samples, 2)
        out.sites = {k: round(100 * n / skips.samples, 2) for k, n in skips.sites.most_common(ROOTS_KEPT)}
    return out


def recordings(u: Unwinding, pid: int) -> list[tuple[str, int | list[int]]]:
    """(mode, pid or tids) per perf record: one for the whole process, or with fp+dwarf one
    with DWARF for the threads that need it and one with frame pointers for the others
    (each thread's tids as they are now; threads started later are followed by the perf of
    the thread that starts them)."""
    if u.callgraph != "fp+dwarf":
        return [(u.callgraph, pid)]
    dwarf, other = thread_ids(pid, u.dwarf_threads)
    if dwarf and other:
        return [("dwarf", dwarf), ("fp", other)]
    return [("dwarf" if dwarf else "fp", pid)]


def thread_ids(pid: int, dwarf_threads: list[str]) -> tuple[list[int], list[int]]:
    """(tids whose name is in dwarf_threads, the other tids) of a running process."""
    dwarf, other = [], []
    for task in sorted(Path(f"/proc/{pid}/task").iterdir(), key=lambda p: int(p.name)):
        try:
            name = (task / "comm").read_text().strip()
        except OSError:
            continue                      # a thread that just ended
        (dwarf if name in dwarf_threads else other).append(int(task.name))
    return dwarf, other
