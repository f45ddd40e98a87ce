"""`stallscope bisect CASE --repo git:PATH --good REF --bad REF`: the commit of a range that
changed the case's throughput, decided step by step with paired reps (docs/bisect.md)."""
from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from analysis.bisect.report import markdown
from analysis.bisect.search import CULPRIT, NO_CULPRIT, Bisection
from analysis.clock import now_iso
from analysis.inputs.option_specs import (BUDGET, DEFAULT_BISECT_BUDGET_S, MIN_CHANGE,
                                          PAIRED_WINDOWS_OPT, SIZE)
from collectors.bisect import driver
from collectors.bisect.commits import BisectError
from collectors.command import run_command
from collectors.host import procs
from collectors.workload.cases import load_case
from commands.options import add_option


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stallscope bisect", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__ + "\n" + textwrap.fill(
            "Each step builds a commit (ccache and the dataset cache are reused) and compares it "
            "with the good end in paired reps, looking after 4 of them and then every 2 (a "
            "sequential test of no change against the minimum change): 'different', 'same', or "
            "more reps. The first commit shown different is the culprit, once it differs from its "
            "parent too; the report names it with each step's interval and the functions whose CPU "
            "per operation moved between its parent and it.", 88),
        epilog=("examples:\n"
                "  stallscope bisect mset-50keys --repo git:~/src/redis --good v8.0.0 --bad unstable\n"
                "  stallscope bisect mget-100keys@pipeline=16 --repo git:. --good HEAD~20 --bad HEAD "
                "--min-change 3% --budget 3h\n"
                "  stallscope bisect --resume reports/bisect/mset-50keys-2026-11-27T0800\n\n"
                "Exit status: 0 a culprit or 'no culprit' proven; 1 unresolved (budget spent or a "
                "step undecided); 2 bad input; 130 interrupted (resume it)."))
    p.add_argument("case", nargs="?", help="the case (stallscope cases list), e.g. mset-50keys")
    p.add_argument("--repo", help="git:PATH (or PATH) of a Redis/Valkey clone")
    p.add_argument("--good", help="a ref whose throughput is as it should be")
    p.add_argument("--bad", help="a later ref (first-parent descendant of --good) where it changed")
    add_option(MIN_CHANGE, p, "bisect")
    add_option(BUDGET, p, "bisect", default=DEFAULT_BISECT_BUDGET_S)
    add_option(SIZE, p, "bisect")
    add_option(PAIRED_WINDOWS_OPT, p, "bisect")
    p.add_argument("--out", type=Path, help="the bisection's directory (default reports/bisect/CASE-TIME)")
    p.add_argument("--resume", type=Path, metavar="DIR", help="go on with an interrupted bisection")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bars inside each run (the step lines stay on stderr)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    procs.install_signal_handlers()
    return run_command("stallscope bisect", lambda: _main(args),
                       "(finished reps are kept: stallscope bisect --resume DIR goes on)")


def _main(args: argparse.Namespace) -> int:
    log = (lambda m: print(m, file=sys.stderr))     # the steps' lines; --no-progress: no bars
    if args.resume:
        out = args.resume
        b = driver.load(out)
        if args.budget_s != DEFAULT_BISECT_BUDGET_S:
            b.budget_s = args.budget_s
    else:
        out, b = start(args, log)
    b = driver.bisect(out, b, log, progress=not args.no_progress)
    print(markdown(b))
    print(f"wrote {out / 'report.md'}, {out / driver.STATE}")
    return 0 if b.status in (CULPRIT, NO_CULPRIT) else 1


def start(args: argparse.Namespace, log) -> tuple[Path, Bisection]:
    if not (args.case and args.repo and args.good and args.bad):
        raise BisectError("give CASE, --repo, --good and --bad (or --resume DIR)")
    repo = Path(args.repo.removeprefix("git:")).expanduser().resolve()
    case = load_case(args.case, args.size)          # a misspelt case fails before any build
    out = args.out or Path("reports") / "bisect" / f"{case.name}-{now_iso()[:16].replace(':', '')}"
    b = driver.start(out, args.case, repo, args.good, args.bad, size=args.size, min_change=args.min_change,
                     budget_s=args.budget_s, paired_windows=args.paired_windows, log=log)
    return out, b


if __name__ == "__main__":
    sys.exit(main())
