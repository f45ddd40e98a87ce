"""`stallscope run`'s arguments: the parser (its --help is the command's manual) and the
request it makes (collectors.runner.api.RunRequest). Shared by the command and by the
scheduler, whose job files carry extra `stallscope run` arguments."""
from __future__ import annotations

import argparse
from pathlib import Path

from collectors.variants.spec import GRAMMAR
from collectors.load import memtier
from collectors.runner.api import RunRequest
from collectors.runner.options import (DEFAULT_BUDGET_S, PAIRED_WINDOW_S, SEPARATE_PROFILE_REPS,
                                       PAIRED_WINDOWS, PRECISION_PILOT, RUNS_DIR,
                                       RunOptions, duration_type, precision_type)
from collectors.runner.plugins import plugins

HELP_EPILOG = """\
Examples:
  # Redis from Debian source vs the same with the MSET prefetch patch, 5 paired reps:
  stallscope run mset-50keys --variant base=debsrc:redis \\
      --variant cand=debsrc:redis+patch=cases/patches/mset-bucket-prefetch.patch --reps 5

  # small size, no profile, then render the report:
  stallscope run mset-10keys --size small --profile off --report \\
      --variant base=debsrc:redis --variant cand=debsrc:redis+patch=cases/patches/mset-bucket-prefetch.patch

  # config-only variants of one binary, measured in one server process (CONFIG SET windows):
  stallscope run mget-100keys \\
      --variant pf0=bin:/path/valkey-server+config=prefetch-batch-max-size=0 \\
      --variant pf16=bin:/path/valkey-server+config=prefetch-batch-max-size=16

  # one case field changed for this run (type-checked like the case file):
  stallscope run get-iothreads --set workload.pipeline=16 \\
      --variant pf0=debsrc:valkey+config=prefetch-batch-max-size=0 \\
      --variant pf16=debsrc:valkey+config=prefetch-batch-max-size=16

  # a small change: add paired reps until the interval is +-2% of the ratio, within 30 minutes:
  stallscope run mset-50keys --precision 2% --budget 30m \\
      --variant base=debsrc:redis --variant cand=debsrc:redis+patch=my.patch

  # an A/A run: the same build on both sides, to see this host's noise:
  stallscope run mset-50keys --variant a=debsrc:redis@8.0 --variant b=debsrc:redis@8.0 --report

  # finish a run that was interrupted (Ctrl-C, a crash, a reboot):
  stallscope run --resume runs/20261121-234500-mset-50keys

What happens: throughput is measured paired by default. Both variants' servers start from a
cached RDB snapshot of the case's dataset (127.0.0.1, free ports, the server CPU), their keyspace
is verified and left to finish rehashing, each gets its own load generator (redis-benchmark, on
the other CPU), and the load is switched between the two servers in short ABBA windows, each
window counted by the active server itself (config-only variants: one server, CONFIG SET
between windows). A paired rep is one such pair of server starts; the interval is over reps.
Where pairing cannot work (no room for two datasets, an rdb-load case, more than two variants)
or with --unpaired, every rep restarts one server and runs redis-benchmark (-n calibrated so a
rep lasts about duration_s), reps interleaved A B B A; stderr and manifest.json `pairing` say
which and why. A case with workload.tool memtier (suite imports), or --load-generator memtier,
runs memtier_benchmark for duration_s instead when it is installed (PATH or MEMTIER=/path).
Profiles: in a paired run perf (record -e cpu-clock -g) samples both servers in every other
ABBA block of the same windows, so each function's CPU per operation is a paired ratio per
rep and the blocks without perf measure perf's own cost; unpaired, 3 separate profile reps.
Progress goes to stderr: a bar on a terminal, one line per finished rep otherwise. Output:
runs/<run-id>/, layout in docs/run-directory.md. Exit status: 0 all reps ok, 1 some rep failed, 2 bad input,
130 interrupted (resume with --resume).
"""



def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stallscope run",
        description="Run a case for two or more variants into runs/<run-id>/ (see docs/run-directory.md).",
        epilog=GRAMMAR + "\n" + HELP_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("case", nargs="?", help="case name (cases/*.yaml, e.g. mset-50keys) or path to a case file")
    p.add_argument("--variant", action="append", default=[], metavar="NAME=SPEC",
                   help="a variant (repeat; at least two unless --resume); grammar below")
    p.add_argument("--reps", type=int, default=None,
                   help="paired reps (each both variants, side by side), or with separate reps "
                        f"throughput reps per variant (default 5; with --precision the first "
                        f"stage, default {PRECISION_PILOT})")
    p.add_argument("--size", default="default", help="case size knob: small | default | large (default: default)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override one case field after the size, type-checked like a case file "
                        "(repeat): workload.pipeline=16, dataset.keys=1M, server.config.NAME=VALUE")
    found = plugins()
    profilers = [x for pl in found for x in pl.PROFILERS] + ["off"]
    p.add_argument("--profile", choices=profilers, default="perf",
                   help="CPU profiler (default perf): in a paired run perf samples the paired "
                        "windows themselves, so each function's CPU time per operation is a "
                        "paired ratio per rep; where a run cannot pair, separate profile reps")
    p.add_argument("--profile-reps", type=int, default=None, metavar="N",
                   help="separate profiled reps per variant (default: none in a paired run, "
                        f"whose windows are profiled; {SEPARATE_PROFILE_REPS} where it cannot "
                        "pair, the fewest that give function costs a confidence interval)")
    p.add_argument("--frequency", type=int, default=None, metavar="HZ",
                   help="perf sampling frequency in Hz (default: the highest rate whose "
                        "predicted cost stays at or under 1%% of the server's CPU, from the "
                        "cost per sample this host's earlier server-bound runs measured (their perf "
                        "on/off blocks; 90%% upper bound, pooled with a seed of 35 ± 10 µs measured "
                        "on a 2-core KVM guest: 199 Hz before any). The report prints the rate and "
                        "the cost measured in this run")
    p.add_argument("--keep-perf-data", action="store_true", help="keep perf.data beside perf.folded")
    _measurement_arguments(p)
    p.add_argument("--load-generator", choices=memtier.CHOICES, default="auto",
                   help="auto (default): the case's workload.tool; memtier runs memtier_benchmark "
                        "(PATH or MEMTIER=/path) and falls back to redis-benchmark, saying why")
    p.add_argument("--resume", metavar="RUN_DIR", help="finish the reps of RUN_DIR that are not ok")
    p.add_argument("--out", default=RUNS_DIR, help="where run directories go (default runs/)")
    p.add_argument("--report", action="store_true", help="render the report at the end (analysis.compare)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress on stderr (neither the bar nor the per-rep lines)")
    for pl in found:
        pl.add_run_arguments(p)
    return p


def _measurement_arguments(p: argparse.ArgumentParser) -> None:
    """How throughput is measured: paired or not, and --precision."""
    pair = p.add_mutually_exclusive_group()
    pair.add_argument("--paired", dest="pairing", action="store_const", const="paired", default="auto",
                      help="pair or stop with the reason (the default pairs wherever it fits and "
                           "falls back to separate reps, saying why): two builds run as two "
                           "servers loaded at once, the load switched between them in short ABBA "
                           "windows; config-only variants share one server, CONFIG SET between "
                           "windows; the same spec on both sides (an A/A run) runs two servers of "
                           "that build")
    pair.add_argument("--unpaired", dest="pairing", action="store_const", const="unpaired",
                      help="separate reps: a server start (and dataset reload) per rep, interleaved "
                           "A B B A; no room needed for two datasets, but every restart's noise "
                           "stays in the interval (about 4x wider on a shared 2-core VM)")
    p.add_argument("--precision", type=precision_type, metavar="PCT",
                   help="add reps until the 95%% interval of the throughput change (an rdb-load "
                        "case: the load time) is at most PCT of the ratio wide either way (e.g. "
                        "2%%), or --budget is spent: the first --reps paired reps (unpaired: A/B "
                        "blocks) set the spread that decides how many (Stein's two-stage design: "
                        "the interval keeps its 95%%); the report says which ended the run")
    p.add_argument("--on", dest="precision_on", metavar="FUNCTION[:flat|cum]",
                   help="with --precision on a paired run: narrow this function's CPU time per "
                        "operation instead of the throughput (cumulative unless :flat), from the "
                        "profiles of the paired windows, by the same two-stage rule; e.g. "
                        "--precision 5%% --on dictFindByHash")
    p.add_argument("--budget", type=duration_type, metavar="TIME",
                   help="with --precision: wall time the run may take (30m, 1h, 1h30m; default "
                        "30m); a paired rep past the first stage starts only if it fits")
    p.add_argument("--paired-window", type=float, default=PAIRED_WINDOW_S, metavar="SECONDS",
                   help=f"length of one paired window in s (default {PAIRED_WINDOW_S:g}: short "
                        "windows pair better on a host whose noise drifts over seconds)")
    p.add_argument("--paired-windows", type=int, default=PAIRED_WINDOWS, metavar="N",
                   help=f"windows per paired rep, ABBA order (default {PAIRED_WINDOWS})")


KNOWN_DESTS = {"case", "variant", "reps", "size", "profile", "profile_reps", "frequency",
               "keep_perf_data", "pairing", "paired_window", "paired_windows", "resume", "out",
               "report", "no_progress", "load_generator", "set", "precision", "budget",
               "precision_on"}


def options_from_args(args: argparse.Namespace) -> RunOptions:
    extra = {k: v for k, v in vars(args).items() if k not in KNOWN_DESTS}
    reps = args.reps if args.reps is not None else (PRECISION_PILOT if args.precision else 5)
    budget = args.budget if args.budget is not None else (DEFAULT_BUDGET_S if args.precision else None)
    return RunOptions(reps=reps, profile=args.profile, profile_reps=args.profile_reps,
                      freq_hz=args.frequency, keep_perf_data=args.keep_perf_data,
                      pairing=args.pairing, paired_window_s=args.paired_window,
                      paired_windows=args.paired_windows, size=args.size,
                      load_generator=args.load_generator, precision=args.precision,
                      precision_on=args.precision_on,
                      budget_s=budget, extra=extra)


def request_from_args(args: argparse.Namespace, argv: list[str]) -> RunRequest:
    """The run the parsed arguments ask for; argv is kept as the manifest's command."""
    return RunRequest(case=args.case, variants=list(args.variant), options=options_from_args(args),
                      sets=list(args.set), out=Path(args.out), report=bool(args.report),
                      progress=not args.no_progress, command=list(argv))
