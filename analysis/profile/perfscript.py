"""Our own ingestion of raw `perf script` text into Stacks, keeping thread names and tids.

inferno-collapse-perf is the reference (tests check that both give the same total and
the same per-function flat counts on a real recording). Doing it in Python as well lets
analysis read a run directory that only kept `perf script` output, and keeps the tids
(`PerfScriptInfo.threads`) that inferno folds away; bench/run.py compares the two rates.

The input is perf's default `perf script` layout:

    redis-server 23630 [001]  552.310394:    1001001 cpu-clock:
    \tffffffff813349dd native_write_msr+0xd ([kernel.kallsyms])
    \t          5b21f3 dictFind+0x43 (/usr/bin/redis-server)
    <blank line>

The header is "comm [pid/]tid [cpu] time: [period] event:"; comm may contain spaces,
so the header is parsed from the right. Frame names follow inferno's defaults: the
`+0x..` offset is cut, an `[unknown]` symbol becomes `[<module basename>]`, and a
space in the thread name becomes `_`. Like inferno, a sample weighs its period when perf
printed one (for cpu-clock/task-clock that is nanoseconds of CPU time, so the unit is
"nanoseconds"; otherwise "events"), else 1 ("samples"); and only the first event type
seen is kept (a recording of cpu-clock and page-faults is not mixed).
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from analysis.profile.stacks import Stacks, normalize_stack

# comm, then pid/tid or tid, optional [cpu], time:, optional period, event:
_HEADER = re.compile(
    r"^(?P<comm>.+?)\s+(?:(?P<pid>\d+)/)?(?P<tid>\d+)\s+(?:\[\d+\]\s+)?"
    r"(?P<time>\d+\.\d+):\s+(?:(?P<period>\d+)\s+)?(?P<event>\S+?):?\s")
_FRAME = re.compile(r"^\s*(?P<addr>[0-9a-fA-F]+)\s+(?P<sym>.*?)\s+\((?P<mod>[^()]*)\)\s*$")
_OFFSET = re.compile(r"\+0x[0-9a-fA-F]+$")


class PerfScriptError(ValueError):
    """`perf script` text we cannot read; the message starts with source:line."""


@dataclass
class PerfScriptInfo:
    """What else the ingestion saw, beside the stacks."""
    samples: int               # samples kept (each weighs its period, see module doc)
    skipped: int               # samples of other event types (not the first one seen)
    event: str | None          # the event kept, e.g. "cpu-clock"
    threads: dict[int, str]    # tid -> thread name (comm)


def _frame_name(sym: str, mod: str) -> str:
    sym = _OFFSET.sub("", sym.strip())
    if sym in ("[unknown]", ""):
        base = mod.rsplit("/", 1)[-1]
        return f"[{base}]" if base and base != "[unknown]" else "[unknown]"
    return sym


def collapse_perf_script_info(lines: Iterable[str], source: str = "<stdin>") -> tuple[Stacks, PerfScriptInfo]:
    """Collapse `perf script` text; returns the stacks and what else was seen."""
    st = Stacks(unit="samples", thread_frame=True)
    weight = 1
    weights = st.weights
    threads: dict[int, str] = {}
    event: str | None = None
    kept = skipped = 0
    comm: str | None = None
    frames: list[str] = []
    take = False

    def flush() -> None:
        nonlocal kept
        if comm is not None and take:
            key = normalize_stack([comm] + frames[::-1])
            weights[key] = weights.get(key, 0) + weight
            kept += 1

    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip("\n")
        if not line.strip():
            flush()
            comm, frames = None, []
            continue
        if line[0] in " \t":
            if comm is None:
                raise PerfScriptError(f"{source}:{lineno}: stack frame with no sample header before it")
            m = _FRAME.match(line)
            if not m:
                raise PerfScriptError(f"{source}:{lineno}: cannot read stack frame {line.strip()[:80]!r}")
            frames.append(_frame_name(m["sym"], m["mod"]))
            continue
        if line.startswith("#"):
            continue
        flush()
        m = _HEADER.match(line)
        if not m:
            raise PerfScriptError(
                f"{source}:{lineno}: not a `perf script` sample header: {line[:80]!r} "
                "(expected 'comm tid time: period event:' - was the output made with -F?)")
        comm = m["comm"].strip().replace(" ", "_")
        frames = []
        ev = m["event"]
        if event is None:
            event = ev
            if m["period"] is not None:
                st.unit = "nanoseconds" if ev in ("cpu-clock", "task-clock") else "events"
        take = ev == event
        weight = int(m["period"]) if m["period"] is not None else 1
        if not take:
            skipped += 1
        threads.setdefault(int(m["tid"]), comm)
    flush()
    return st, PerfScriptInfo(kept, skipped, event, threads)


def collapse_perf_script(lines: Iterable[str], source: str = "<stdin>") -> Stacks:
    """`perf script` text -> Stacks (thread frame = comm), as inferno-collapse-perf does."""
    return collapse_perf_script_info(lines, source)[0]


def read_perf_script(path: str | Path) -> tuple[Stacks, PerfScriptInfo]:
    """Read a `perf script` text file (gzip when it ends in .gz)."""
    p = Path(path)
    if p.suffix == ".gz":
        import gzip
        opener = lambda: gzip.open(p, "rt", encoding="utf-8", errors="replace")  # noqa: E731
    else:
        opener = lambda: open(p, encoding="utf-8", errors="replace")  # noqa: E731
    try:
        with opener() as f:
            return collapse_perf_script_info(f, str(p))
    except FileNotFoundError:
        raise PerfScriptError(f"{p}: no such perf script file") from None


def main(argv: list[str] | None = None) -> int:
    import argparse
    from analysis.profile.stacks import write_folded
    ap = argparse.ArgumentParser(
        prog="python -m analysis.profile.perfscript",
        description="Collapse `perf script` text into folded stacks (first frame = thread name).",
        epilog="examples:\n  perf script -i perf.data | python -m analysis.profile.perfscript - -o perf.folded\n"
               "  python -m analysis.profile.perfscript perf.script.gz -o perf.folded --threads threads.tsv",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input", help="perf script text file (.gz ok), or - for stdin")
    ap.add_argument("-o", "--output", required=True, help="folded stacks file to write")
    ap.add_argument("--threads", help="also write 'tid<TAB>comm' lines here")
    a = ap.parse_args(argv)
    try:
        if a.input == "-":
            st, info = collapse_perf_script_info(sys.stdin, "<stdin>")
        else:
            st, info = read_perf_script(a.input)
    except PerfScriptError as e:
        print(f"perfscript: {e}", file=sys.stderr)
        return 1
    write_folded(st, a.output)
    if a.threads:
        Path(a.threads).write_text("".join(f"{t}\t{c}\n" for t, c in sorted(info.threads.items())))
    print(f"{info.samples} samples ({info.event}), {len(st.weights)} stacks, "
          f"{len(info.threads)} threads -> {a.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
