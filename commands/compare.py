"""`stallscope compare RUN_DIR`: compare the variants of a run directory and write
report.md, report.html and results.json (plus flame graphs and pprof files).

The command runs both stages, so it is the one module of analysis.compare that imports
analysis.report: the engine computes Results, the report package renders them.
"""
from __future__ import annotations

import argparse
import sys

from analysis.command_end import end_command
from analysis.compare.options import DEFAULT_TOP, MIN_SAMPLES, MIN_SHARE, THREAD_VIEWS, CompareOptions
from analysis.report.summary_text import text_lines
from analysis.report.writer import report_run


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stallscope compare",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Compare the variants of a run directory (throughput, profiles, TMA) and "
                    "write report.md (for a PR comment), report.html (self-contained) and "
                    "results.json, plus flame graphs (SVG) and pprof files, into OUT.",
        epilog="""examples:
  stallscope compare runs/20261121-234500-mset-50keys
  stallscope compare runs/X --out /tmp/rep --focus dictFind,lookupKey
  stallscope compare runs/X --thread all --noise 0.02 --regression 0.04

verdicts: improvement / regression / no change / unstable / insufficient data, decided by
the 95% confidence interval first, then the line (docs/statistics.md): a decided change
under it is "improvement/regression, below the line", the same line both ways unless
--regression sets another. Throughput's line is relative (--noise 0.03 = 3% of the base
median); function shares use percentage points (--noise-pp 0.5).""")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (runs/<run-id>/)")
    p.add_argument("--out", metavar="DIR", help="output directory (default reports/<run-id>/)")
    p.add_argument("--focus", metavar="F1,F2", type=lambda s: [x for x in s.split(",") if x],
                   help="functions to tabulate (default: the case's focus list in the manifest)")
    p.add_argument("--noise", type=float, default=0.03, metavar="FRAC",
                   help="the line a decided change must reach to be named plainly (below it: "
                        "'improvement/regression, below the line'), fraction of the base median, "
                        "both directions (default 0.03 = 3%%)")
    p.add_argument("--regression", type=float, default=None, metavar="FRAC",
                   help="another line for regressions alone, fraction (default: --noise's)")
    p.add_argument("--noise-pp", type=float, default=0.5, metavar="PP",
                   help="the line of a share's change in percentage points, both directions "
                        "(default 0.5 pp)")
    p.add_argument("--regression-pp", type=float, default=None, metavar="PP",
                   help="another line for a share's regressions alone (default: --noise-pp's)")
    p.add_argument("--thread", choices=THREAD_VIEWS, default=None,
                   help="thread view of the focus table and top movers (default: main when "
                        "io-threads are present, else all)")
    p.add_argument("--top", type=int, default=DEFAULT_TOP, metavar="N",
                   help=f"top movers to list (default {DEFAULT_TOP})")
    p.add_argument("--min-share", type=float, default=MIN_SHARE, metavar="PCT",
                   help=f"a function under this %% of samples on both sides is 'negligible', "
                        f"not judged (default {MIN_SHARE:g}%%)")
    p.add_argument("--min-samples", type=float, default=MIN_SAMPLES, metavar="N",
                   help=f"no verdict for a function with fewer samples than this behind its "
                        f"larger side, summed over the profile reps (default {MIN_SAMPLES:g})")
    p.add_argument("--base", metavar="VARIANT", help="baseline variant (default: the first)")
    p.add_argument("--cand", metavar="VARIANT", help="candidate variant (default: the second)")
    return p


def options(args: argparse.Namespace) -> CompareOptions:
    return CompareOptions(base=args.base, cand=args.cand, focus=args.focus, noise=args.noise,
                          regression=args.regression, noise_pp=args.noise_pp,
                          regression_pp=args.regression_pp, thread=args.thread, top=args.top,
                          min_share=args.min_share, min_samples=args.min_samples)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return end_command("stallscope compare", lambda: _compare(args))


def _compare(args: argparse.Namespace) -> int:
    r, paths = report_run(args.run_dir, args.out, options(args))
    print("\n".join(text_lines(r)))
    print(f"wrote {paths['md']}, {paths['html']}, {paths['json']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
