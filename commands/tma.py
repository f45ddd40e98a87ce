"""`stallscope tma FILE`: parse one top-down output (Intel, AMD, Arm) and print the tree."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from analysis.command_end import UserError, end_command
from analysis.tma.catalog import DEFAULT_MODEL, models
from analysis.tma.formats import FORMATS, parse_file
from analysis.tma.model import TIME_WEIGHTED, IntervalChoice, TmaNode, domain_label, is_invalid, value_text

EPILOG = """examples:
  stallscope tma runs/RUN/base/1/tma.csv
  stallscope tma toplev.txt --scope S0-C0
  stallscope tma perf-stat.json --format perf-json --json
  stallscope tma amd-perf-stat.txt              # AMD: perf stat -M PipelineL1,PipelineL2
  stallscope tma topdown-tool.csv --catalog neoverse-v2
  stallscope tma perf-stat-I1000.txt --interval 3    # one interval of a -I output

Reads Intel toplev / perf TMA, AMD Zen pipeline utilization (perf -M PipelineL1,L2),
Arm Neoverse top-down (perf -M TopdownL1, topdown-tool text, table and CSV); the CPU
model's tree comes from the output, from the names it prints, or --catalog.
Values are percent of the node's count domain (Slots, Stalls, Clocks, Cycles ...);
Intel's deeper children are not fractions of their parent, AMD's level 2 sum to it.
Arm's Stage-2 metrics (MPKI, miss ratios) print in their own unit, apart from the tree.
'~' marks multiplexed (estimated) values, '<' below toplev's threshold, '<==' the
bottleneck, INVALID a value computed from a group that never ran, [derived: a + b] a
parent the tool did not print. With -I intervals (perf stat, toplev) the values are
their mean weighted by each interval's length, or the one --interval picks; the second
header line says which. Exit code 2 on unreadable input.
"""

INTERVAL_HELP = ("which interval(s) of a -I output give the values: time (default: the mean "
                 "weighted by each interval's length), mean (unweighted), last, N (the N-th "
                 "interval, from 1) or SECONDS with a point (the interval holding that time)")


def interval_choice(text: str) -> IntervalChoice:
    """--interval's value: "time", "mean", "last", N (1-based) or seconds ("2.5")."""
    t = text.strip().lower()
    if t in (TIME_WEIGHTED, "mean", "last"):
        return t
    try:
        return int(t) if t.isdigit() else float(t)
    except ValueError:
        raise UserError(f"--interval {text!r}: expected time, mean, last, an interval "
                        "number or a time in seconds") from None


def _lines(nodes: list[TmaNode], depth: int = 0) -> list[str]:
    out = []
    for n in nodes:
        val = value_text(n.value, n.domain)
        marks = []
        if n.derived:
            marks.append(f"[derived: {n.derived}]")
        if n.multiplexed:
            val = "~" + val
            marks.append(f"[ran {n.multiplex:.1f}% of the time]")
        if n.below_threshold:
            marks.append("<")
        if n.bottleneck:
            marks.append("<==")
        if n.implausible:
            # Out of range (broken counters) or computed from a group that never ran.
            marks.append("INVALID" if is_invalid(n.implausible) else "IMPLAUSIBLE")
        label = "  " * depth + n.leaf
        out.append(f"{label:<40} {domain_label(n.domain):<20} {val:>9}  {' '.join(marks)}".rstrip())
        out += _lines(n.children, depth + 1)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="stallscope tma", description=__doc__,
                                 epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", help="toplev, perf stat or topdown-tool output (stdout/-o file; "
                    "sibling .stderr/.rc are read)")
    ap.add_argument("--format", choices=FORMATS, help="skip auto-detection")
    ap.add_argument("--catalog", choices=models(),
                    help="CPU model whose top-down tree places the names (default: the model "
                         "the output names, else the one whose names it prints, else "
                         f"{DEFAULT_MODEL})")
    ap.add_argument("--scope", default="auto",
                    help="CPU scope: auto (default), global, mean, or a name (S0-C0, CPU3, cpu_core)")
    ap.add_argument("--interval", default=TIME_WEIGHTED, help=INTERVAL_HELP)
    ap.add_argument("--json", action="store_true", help="print the parsed values as JSON")
    args = ap.parse_args(argv)
    return end_command("stallscope tma", lambda: _show(args))


def _show(args: argparse.Namespace) -> int:
    try:
        res = parse_file(args.file, args.format, args.catalog)
        scope = None if args.scope == "global" else args.scope
        interval = interval_choice(args.interval)
        tree = res.tree(scope, interval)
        span = res.interval_text(interval)
    except KeyError as e:            # an unknown scope: its message lists the scopes there are
        raise UserError(e.args[0]) from None
    if args.json:
        print(json.dumps({"source": res.source, "format": res.fmt, "tool_version": res.tool_version,
                          "cpu": res.cpu_name, "catalog": res.catalog.model,
                          "intervals": [asdict(i) for i in res.timeline()], "shown": span,
                          "values": [asdict(v) for v in res.values], "warnings": res.warnings},
                         indent=2))
        return 0
    cat = res.catalog
    print(f"# {res.source}: {res.fmt}" + (f", {res.tool_version}" if res.tool_version else "")
          + (f" on {res.cpu_name}" if res.cpu_name else "") + f"; catalogue {cat.model}"
          + (f" ({cat.title}" + (f", {cat.slots} slots per cycle" if cat.slots else "") + ")"
             if cat.title else ""))
    if res.catalog_note:
        print(f"# {res.catalog_note}")
    scopes = [s or "global" for s in res.scopes()]
    print(f"# CPU scopes: {', '.join(scopes)}; intervals: {len(res.timeline()) or 'none'}; "
          f"values: {span}")
    # Arm's Stage-2 groups are metrics, not a tree: listed apart, in their own units.
    stage2 = [n for n in tree if n.name in cat and cat[n.name].stage2]
    print("\n".join(_lines([n for n in tree if n not in stage2])))
    if stage2:
        print("# Stage 2 (metric groups: not a tree, never summed or slot-normalised)")
        print("\n".join(_lines(stage2)))
    for v in res.unknown():
        print(f"# not in catalogue (kept, not in tree): {v.raw_name} = {v.value} % ({v.scope or 'global'})")
    for w in res.warnings:
        print(f"# warning: {w}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
