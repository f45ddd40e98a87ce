"""`stallscope run`'s arguments: the parser (its --help is the command's manual) and the
request it makes (collectors.runner.api.RunRequest). Shared by the command and by the
scheduler, whose job files carry extra `stallscope run` arguments."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from collectors.variants.spec import GRAMMAR
from collectors.load import memtier
from collectors.runner.api import RunRequest
from analysis.inputs.option_specs import (FREQUENCY, PRECISION, PROFILE, budget_for, first_stage,
                                          taken_by)
from collectors.runner.options import RUNS_DIR, RunOptions
from collectors.runner.plugins import plugins
from commands.options import add_option, add_run_flags

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
    shared = {o.name: o for o in taken_by("run")}
    add_option(shared["reps"], p, "run")
    add_option(shared["size"], p, "run")
    add_option(shared["layouts"], p, "run")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override one case field after the size, type-checked like a case file "
                        "(repeat): workload.pipeline=16, dataset.keys=1M, server.config.NAME=VALUE")
    found = plugins()
    add_option(PROFILE, p, "run", choices=[x for pl in found for x in pl.PROFILERS] + ["off"])
    add_option(shared["profile_reps"], p, "run")
    add_option(FREQUENCY, p, "run")
    p.add_argument("--keep-perf-data", action="store_true", help="keep perf.data beside perf.folded")
    _measurement_arguments(p, shared)
    p.add_argument("--load-generator", choices=memtier.CHOICES, default="auto",
                   help="auto (default): the case's workload.tool; memtier runs memtier_benchmark "
                        "(PATH or MEMTIER=/path) and falls back to redis-benchmark, saying why")
    p.add_argument("--resume", metavar="RUN_DIR", help="finish the reps of RUN_DIR that are not ok")
    p.add_argument("--out", default=RUNS_DIR, help="where run directories go (default runs/)")
    p.add_argument("--report", action="store_true", help="render the report at the end (analysis.compare)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress on stderr (neither the bar nor the per-rep lines)")
    for pl in found:
        add_run_flags(p, pl.RUN_FLAGS)
    return p


def _measurement_arguments(p: argparse.ArgumentParser, shared: dict) -> None:
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
    add_option(PRECISION, p, "run")
    p.add_argument("--on", dest="precision_on", metavar="FUNCTION[:flat|cum]",
                   help="with --precision on a paired run: narrow this function's CPU time per "
                        "operation instead of the throughput (cumulative unless :flat), from the "
                        "profiles of the paired windows, by the same two-stage rule; e.g. "
                        "--precision 5%% --on dictFindByHash")
    for name in ("budget_s", "paired_window_s", "paired_windows"):
        add_option(shared[name], p, "run")


def options_from_args(args: argparse.Namespace) -> RunOptions:
    # The plugins' flags, by their own declarations (RunFlag.dest): nothing listed by hand
    extra = {f.dest: getattr(args, f.dest) for pl in plugins() for f in pl.RUN_FLAGS.flags}
    shared = {o.name: getattr(args, o.name) for o in taken_by("run")}
    shared["reps"] = first_stage(args.reps, args.precision)
    shared["budget_s"] = budget_for(args.precision, args.budget_s)
    return RunOptions(**shared, keep_perf_data=args.keep_perf_data, pairing=args.pairing,
                      load_generator=args.load_generator, precision_on=args.precision_on, extra=extra)


# run's flags that set a RunRequest field (dest: field; "resume" is no request's), as
# request_from_args reads them; the others are RunOptions fields or plugins' RunFlags (extra)
_REQUEST_FIELDS = {"variant": "variants", "set": "sets", "out": "out", "report": "report",
                   "no_progress": "progress", "resume": "resume"}


def given(run_args: list[str]) -> dict[str, Any]:
    """What `stallscope run` flags alone (a schedule job's run-args) set, as data: the
    RunRequest fields they set ("resume" too, which no request has) and under "options" the
    RunOptions fields, plugin flags in "extra". A flag given is there even at its default
    value; a flag not given is not, and no default or rule is applied (the caller fills
    what was left open). SystemExit, argparse's message printed, on what run would refuse."""
    p = parser()
    for a in p._actions:             # no defaults: what parses is what was given
        a.default = argparse.SUPPRESS
    ns = vars(p.parse_args(["CASE", *run_args]))   # a case first: a stray word is an error
    del ns["case"]
    plugin_dests = {f.dest for pl in plugins() for f in pl.RUN_FLAGS.flags}
    out: dict[str, Any] = {_REQUEST_FIELDS[k]: v for k, v in ns.items() if k in _REQUEST_FIELDS}
    if "progress" in out:
        out["progress"] = not out["progress"]
    if "out" in out:
        out["out"] = Path(out["out"])
    options = {k: v for k, v in ns.items() if k not in _REQUEST_FIELDS and k not in plugin_dests}
    extra = {k: v for k, v in ns.items() if k in plugin_dests}
    out["options"] = {**options, **({"extra": extra} if extra else {})}
    return out


def request_from_args(args: argparse.Namespace, argv: list[str]) -> RunRequest:
    """The run the parsed arguments ask for; argv is kept as the manifest's command."""
    return RunRequest(case=args.case, variants=list(args.variant), options=options_from_args(args),
                      sets=list(args.set), out=Path(args.out), report=bool(args.report),
                      progress=not args.no_progress, command=list(argv))
