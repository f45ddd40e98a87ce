"""`stallscope funnel A1 [A2 ...] --vs B1 [B2 ...]`: TMA funnel, baseline vs candidate."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from analysis.command_end import UserError, end_command
from analysis.report import funnel_md
from analysis.tma.catalog import models
from commands.tma import INTERVAL_HELP, interval_choice
from analysis.tma.funnel import compare
from analysis.tma.formats import FORMATS, parse_file

EPILOG = """examples:
  stallscope funnel base.txt --vs cand.txt
  stallscope funnel runs/R/base/*/tma.csv --vs runs/R/cand/*/tma.csv --labels unstable,PR
  stallscope funnel a1.json a2.json a3.json --vs b1.json b2.json b3.json --depth 3 --json funnel.json
  stallscope funnel a.txt --vs b.txt --nodes 'Backend_Bound*,Retiring' --format json
  make funnel BASE="a1 a2 a3" CAND="b1 b2 b3"

Inputs: toplev human or -x, CSV output, perf stat standard / -x, / -j output with
Intel tma_*, AMD Zen PipelineL1/L2 or Arm TopdownL1 metrics, Arm topdown-tool output
(format auto-detected; --input-format to force; the CPU model's tree from the output, or
--catalog), in any locale. Each file is one run and gives one value per node: from an
interval-mode (-I) output the mean of its intervals weighted by their length, or the one
--interval picks (a note under the table names the intervals of each file). With at least 2 runs per side every row gets a
confidence interval of the change (percentage points, pp; a ratio such as MPKI in its
own unit) and a verdict: 2 a side give a Welch t-interval (wide: it holds its 95% but
needs a large move to exclude 0), 3 or more the rank interval where it reaches 95%; with
1 run per side the verdict is "n/a (1 run per side)".
Default rows: level 1, the vendor's memory-stall nodes (Intel: Backend_Bound >
Memory_Bound > L1/L2/L3/DRAM/Store_Bound > MEM_Bandwidth/MEM_Latency; AMD:
backend_bound_memory; Arm: backend_bound (V3: backend_mem_bound), L1D and LLC MPKI) and
every node that moved. Runs of different vendors or CPU models are refused. Exit code 2
on unreadable input.
"""


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="stallscope funnel", description=__doc__,
                                 epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base", nargs="+", help="baseline runs (one TMA output file per run)")
    ap.add_argument("--vs", nargs="+", required=True, metavar="CAND", help="candidate runs")
    ap.add_argument("--depth", type=int, default=4, help="deepest TMA level shown (default 4)")
    ap.add_argument("--nodes", help="comma-separated node names or globs to show ('all' = every node)")
    ap.add_argument("--labels", default="baseline,candidate", help="column labels: BASE,CAND")
    ap.add_argument("--format", choices=("md", "json"), default="md", help="stdout format (default md)")
    ap.add_argument("--json", metavar="FILE", help="also write the JSON comparison to FILE")
    ap.add_argument("--scope", default="auto",
                    help="CPU scope: auto (default), global, mean, or a name (S0-C0, cpu_core)")
    ap.add_argument("--input-format", choices=FORMATS, help="skip input format detection")
    ap.add_argument("--catalog", choices=models(),
                    help="CPU model whose tree places the names (default: the model the output "
                         "names, else the one whose names it prints)")
    ap.add_argument("--interval", default="time", help=INTERVAL_HELP)
    ap.add_argument("--method", choices=("auto", "hl", "bootstrap"), default="auto",
                    help="CI method: auto (default) = Hodges-Lehmann/Mann-Whitney when it reaches "
                         "95%%, else Welch t; hl = rank interval only (3 vs 3 runs reach 90%%); "
                         "bootstrap = percentile bootstrap of the median difference")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return end_command("stallscope funnel", lambda: _funnel(args))


def _funnel(args: argparse.Namespace) -> int:
    labels = args.labels.split(",")
    if len(labels) != 2 or not all(l.strip() for l in labels):
        raise UserError(f"--labels needs two comma-separated names, got {args.labels!r}")
    if args.depth < 1:
        raise UserError("--depth must be at least 1")
    try:
        base = [parse_file(p, args.input_format, args.catalog) for p in args.base]
        cand = [parse_file(p, args.input_format, args.catalog) for p in args.vs]
        scope = None if args.scope == "global" else args.scope
        funnel = compare(base, cand, depth=args.depth,
                         nodes=[n.strip() for n in args.nodes.split(",")] if args.nodes else None,
                         base_label=labels[0].strip(), cand_label=labels[1].strip(),
                         scope=scope, method=args.method,
                         interval=interval_choice(args.interval))
    except KeyError as e:            # an unknown scope or node: its message says which
        raise UserError(e.args[0]) from None
    data = funnel.to_json()
    if args.json:
        try:
            Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
        except OSError as e:
            raise UserError(f"cannot write {args.json}: {e.strerror}") from None
    if args.format == "json":
        print(json.dumps(data, indent=2))
    else:
        print(funnel_md.render(funnel.doc()), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
