"""`make demo`: the main job on an embedded default.

Baseline: Redis built from its Debian source package. Candidate: the same source plus
cases/patches/mset-bucket-prefetch.patch (batched dict-bucket prefetch in MSET, the
technique of redis/redis#15043). Case: MSET with 50 keys per command over a keyspace
many times larger than L3. Throughput is measured paired: both builds loaded at once and
the load switched between them in short ABBA windows (--paired), which gives a far
narrower interval on a noisy host than a server restart per rep (--unpaired, the old
way); profile reps are separate, and each measures the profiler's own cost. Then the
reports in reports/demo/ (report.md, report.html, results.json, flame graphs, pprof).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.compare import cli as compare_cli
from collectors.runner import cli as run_cli

REPO = Path(__file__).resolve().parents[2]
PATCH = "cases/patches/mset-bucket-prefetch.patch"   # relative to REPO
# Pinned to the version the patch was written for (Debian testing will move past 8.0).
BASE = "base=debsrc:redis@8.0"
CAND = f"prefetch=debsrc:redis@8.0+patch={PATCH}"


def cand_spec(cwd: Path | None = None) -> str:
    """CAND as typed from the repository root (so the manifest and the report's reproduce
    command stay short); from any other directory the patch path is made absolute, or
    the build would look for cases/patches/ under that directory."""
    cwd = Path.cwd() if cwd is None else cwd
    if (cwd / PATCH).resolve() == (REPO / PATCH).resolve():
        return CAND
    return f"prefetch=debsrc:redis@8.0+patch={REPO / PATCH}"

# Per size: (case, paired reps (each: 64 ABBA windows of 0.25 s, 32 pairs), profile reps per
# variant). Unpaired (--unpaired), the first number is throughput reps per variant. The
# paired interval is over reps (docs/statistics.md, "The rep is the unit"): the per-rep log
# ratios of the demo spread by sd ~0.03 on this project's VM (2026-11-23/24), so 8 reps gave
# a half-width of 3.2 points (t 2.36/sqrt 8) and 10 gave 2.7 (t 2.26/sqrt 10) for 2 more
# minutes: under the 3 points issue #20 asks of the demo.
SIZES = {
    "default": ("mset-50keys", 10, 3),
    "small": ("mset-50keys", 2, 3),
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stallscope demo",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__,
        epilog=(
            "examples:\n"
            "  make demo                                   # full size, ~13 min on 2 cores (builds cached)\n"
            "  stallscope demo --size small      # CI size, a few minutes\n"
            "  stallscope demo --reps 16 --out reports/demo16   # a narrower interval\n\n"
            "The same comparison for any case and variants: make compare CASE=... BASE=... CAND=..."
        ),
    )
    p.add_argument("--size", choices=sorted(SIZES), default="default",
                   help="default: 10M keys (~1 GB, far beyond L3); small: 200k keys for CI")
    p.add_argument("--reps", type=int, help="paired reps, 32 window pairs each (default: 10, small: 2); "
                                            "with --unpaired: throughput reps per variant")
    p.add_argument("--profile-reps", type=int, help="perf profile reps per variant (default: 3)")
    p.add_argument("--unpaired", action="store_true",
                   help="restart the server for every throughput rep instead of pairing windows "
                        "(needs no room for two datasets; wider intervals)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override one field of the case, type-checked like a case file (repeat): "
                        "workload.pipeline=16, dataset.keys=1M")
    p.add_argument("--out", default="reports/demo", help="report directory (default reports/demo)")
    p.add_argument("--runs", default="runs", help="where the run directory goes (default runs/)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    case, reps, profile_reps = SIZES[args.size]
    reps = args.reps or reps
    profile_reps = args.profile_reps or profile_reps
    cand = cand_spec()
    run_argv = [case, "--variant", BASE, "--variant", cand, "--size", args.size,
                "--reps", str(reps), "--profile-reps", str(profile_reps), "--out", args.runs]
    for s in args.set:
        run_argv += ["--set", s]
    if args.unpaired:
        run_argv.append("--unpaired")
    if args.no_progress:
        run_argv.append("--no-progress")
    how = ("throughput reps per variant, interleaved" if args.unpaired
           else "paired reps (both servers loaded, ABBA windows)")
    print(f"stallscope demo: {BASE}  vs  {cand}\n"
          f"  case {case} (size {args.size}), {reps} {how} + {profile_reps} profile reps "
          f"per variant" + (f"; set: {', '.join(args.set)}" if args.set else ""), file=sys.stderr)

    before = _run_dirs(args.runs)
    rc = run_cli.main(run_argv)
    new = sorted(_run_dirs(args.runs) - before)
    run_dir = new[-1] if new else None
    if rc == 2 and run_dir is None:
        return 2        # bad input (a --set, a missing tool): stallscope run said what and how
    if rc not in (0, 1) or run_dir is None:
        print(f"stallscope demo: the run failed (exit {rc}); finished reps are kept, "
              f"finish it with: stallscope run --resume {run_dir or 'runs/<run-id>'}",
              file=sys.stderr)
        return rc or 1

    crc = compare_cli.main([str(run_dir), "--out", args.out])
    if crc == 0:
        print(f"stallscope demo: report in {args.out}/report.md, {args.out}/report.html, "
              f"{args.out}/results.json (run directory {run_dir})", file=sys.stderr)
    return crc


def _run_dirs(runs: str) -> set[Path]:
    return {p.parent for p in Path(runs).glob("*/manifest.json")}


if __name__ == "__main__":
    sys.exit(main())
