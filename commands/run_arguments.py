"""`stallscope run`'s arguments: the parser (its --help is the command's manual) and the
request it makes (collectors.runner.api.RunRequest). Shared by the command and by the
scheduler, whose job files carry extra `stallscope run` arguments."""
from __future__ import annotations

import argparse
from fractions import Fraction
from pathlib import Path
from typing import Any

from collectors.variants.spec import GRAMMAR
from collectors.load import memtier
from collectors.abba import as_share
from collectors.runner.api import RunRequest
from analysis.inputs.option_specs import (DEFAULT_TARGET_BUDGET_S, FREQUENCY, PAIRED_WINDOWS, PAIRING, PRECISION,
                                          PROFILE, TARGET_UNITS, TARGET_WINDOWS, budget_for, first_stage,
                                          taken_by)
from collectors.runner.options import RUNS_DIR, RunOptions
from collectors.runner.plugins import plugins
from analysis.sequential import looks
from collectors.host.sample_cost import PERTURBATION
from commands.options import add_option, add_run_flags

HELP_EPILOG = """\
Examples:
  # Redis from Debian source vs the same with the MSET prefetch patch: a run that decides
  # (throughput ±2%, focus functions ±5%, every 5% function ±10%, within 15 min):
  stallscope run mset-50keys --variant base=debsrc:redis \\
      --variant cand=debsrc:redis+patch=cases/patches/mset-bucket-prefetch.patch

  # the cheap run (5 paired reps of 64 windows, perf within 1%; it says what it could not see):
  stallscope run mset-50keys --quick --variant base=debsrc:redis --variant cand=...

  # the mechanics size, 3 paired reps, no profile, then render the report:
  stallscope run mset-10keys --size tiny --reps 3 --profile off --report \\
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


# What a run that decides does, in --quick's help (the numbers are the code's:
# tests/test_help_examples.py).
_DECIDES = ("its paired reps, their windows and perf's share of them planned together from this "
            "host's recorded spread and seconds a rep for the case "
            f"({TARGET_UNITS} of {TARGET_WINDOWS} windows before it has any, planned again after the "
            "first rep), perf at the rate the function rows need (its predicted cost within "
            f"{PERTURBATION:.0%}% of the server's CPU), within --budget "
            f"({DEFAULT_TARGET_BUDGET_S / 60:.0f} min, the in-cache control's share of it included); "
            "it looks at itself during the run (after "
            f"{', '.join(map(str, looks(TARGET_UNITS)[:-1]))} and {TARGET_UNITS} reps of a plan of "
            f"{TARGET_UNITS}) and stops once it has answered, and names each target it cannot reach, "
            "and why")


def parser(defaults: bool = True) -> argparse.ArgumentParser:
    """`stallscope run`'s parser. defaults=False: no argument has a default (argparse's
    SUPPRESS), so what parses is what was given, a flag given at its default value too."""
    own = {} if defaults else {"default": argparse.SUPPRESS}   # over each argument's own default
    p = argparse.ArgumentParser(
        prog="stallscope run",
        description="Run a case for two or more variants into runs/<run-id>/ (see docs/run-directory.md).",
        epilog=GRAMMAR + "\n" + HELP_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
        argument_default=None if defaults else argparse.SUPPRESS)
    p.add_argument("case", nargs="?", help="case name (cases/*.yaml, e.g. mset-50keys) or path to a case file")
    p.add_argument("--variant", action="append", metavar="NAME=SPEC",
                   help="a variant (repeat; at least two unless --resume); grammar below", **{"default": [], **own})
    shared = {o.name: o for o in taken_by("run")}
    for name in ("reps", "size", "llc_bytes", "layouts"):
        add_option(shared[name], p, "run", **own)
    p.add_argument("--set", action="append", metavar="FIELD=VALUE",
                   help="override one case field after the size, type-checked like a case file "
                        "(repeat): workload.pipeline=16, dataset.keys=1M, server.config.NAME=VALUE",
                   **{"default": [], **own})
    found = plugins()
    add_option(PROFILE, p, "run", choices=[x for pl in found for x in pl.PROFILERS] + ["off"], **own)
    add_option(shared["profile_reps"], p, "run", **own)
    add_option(FREQUENCY, p, "run", **own)
    p.add_argument("--keep-perf-data", action="store_true", help="keep perf.data beside perf.folded")
    p.add_argument("--quick", action="store_true", **{"default": False, **own},
                   help="the cheap run: 5 paired reps of 64 windows, perf within 1%% of the server's CPU "
                        "(a few minutes; its report says how large a change it could not see). Without "
                        "--quick, --reps or --precision a run decides: it aims at throughput ±2%%, each "
                        "focus function ±5%% and every function of 5%% of the samples or more ±10%% (the "
                        "smallest change each could be seen to): " + _DECIDES)
    stalls = p.add_mutually_exclusive_group()
    stalls.add_argument("--no-stalls", dest="stalls", action="store_const", const=False,
                        **{"default": None, **own},
                        help="no in-cache control: a run that decides runs the case again over a "
                             "dataset of at most 1/4 of the last-level cache (the same builds, paired, "
                             "a few minutes) to give each function's out-of-cache cost, the memory "
                             "stall a prefetch can hide (docs/statistics.md); this skips it")
    stalls.add_argument("--stalls", dest="stalls", action="store_const", const=True,
                        **{"default": None, **own},
                        help="the in-cache control after a run that does not decide (--reps, --precision)")
    _measurement_arguments(p, shared, own)
    p.add_argument("--load-generator", choices=memtier.CHOICES, **{"default": "auto", **own},
                   help="auto (default): the case's workload.tool; memtier runs memtier_benchmark "
                        "(PATH or MEMTIER=/path) and falls back to redis-benchmark, saying why")
    p.add_argument("--resume", metavar="RUN_DIR", help="finish the reps of RUN_DIR that are not ok")
    p.add_argument("--out", help="where run directories go (default runs/)", **{"default": RUNS_DIR, **own})
    p.add_argument("--report", action="store_true", help="render the report at the end (analysis.compare)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress on stderr (neither the bar nor the per-rep lines)")
    for pl in found:
        add_run_flags(p, pl.RUN_FLAGS, defaults)
    return p


def _measurement_arguments(p: argparse.ArgumentParser, shared: dict, own: dict) -> None:
    """How throughput is measured: paired or not (--pairing, or --paired / --unpaired for
    short), and --precision."""
    pair = p.add_mutually_exclusive_group()
    add_option(PAIRING, pair, "run", **own)
    pair.add_argument("--paired", dest=PAIRING.name, action="store_const", const="paired",
                      **{"default": PAIRING.default, **own},
                      help="--pairing paired: pair or stop with the reason (the default pairs wherever "
                           "it fits and falls back to separate reps, saying why): two builds run as two "
                           "servers loaded at once, the load switched between them in short ABBA "
                           "windows; config-only variants share one server, CONFIG SET between "
                           "windows; the same spec on both sides (an A/A run) runs two servers of "
                           "that build")
    pair.add_argument("--unpaired", dest=PAIRING.name, action="store_const", const="unpaired",
                      **{"default": PAIRING.default, **own},
                      help="--pairing unpaired: separate reps, a server start (and dataset reload) "
                           "per rep, interleaved A B B A; no room needed for two datasets, but every restart's noise "
                           "stays in the interval (about 4x wider on a shared 2-core VM)")
    add_option(PRECISION, p, "run", **own)
    p.add_argument("--on", dest="precision_on", metavar="FUNCTION[:flat|cum]",
                   help="with --precision on a paired run: narrow this function's CPU time per "
                        "operation instead of the throughput (cumulative unless :flat), from the "
                        "profiles of the paired windows, by the same two-stage rule; e.g. "
                        "--precision 5%% --on dictFindByHash")
    for name in ("budget_s", "paired_window_s"):
        add_option(shared[name], p, "run", **own)
    p.add_argument("--perf-share", dest="perf_share", type=_share, metavar="K/M", **own,
                   help="perf's share of a paired rep's ABBA blocks of windows: 1/2, 2/3 or 3/4 "
                        "(default: 1/2, or what a run that decides plans from the seconds a rep "
                        "takes here; the blocks without perf measure its overhead and check "
                        "that its cost cancels)")
    # no default here: a run that decides takes TARGET_WINDOWS, any other PAIRED_WINDOWS
    add_option(shared["paired_windows"], p, "run", **{"default": None, **own},
               help=f"windows per paired rep, ABBA order (default {PAIRED_WINDOWS}; {TARGET_WINDOWS} in a "
                    "run that decides)")


def options_from_args(args: argparse.Namespace) -> RunOptions:
    """The run the flags ask for. None of --reps, --precision, --quick (nor --layouts): a
    run that decides (collectors/runner/targets.py: its reps planned before it from this
    host's records, the clock its only early stop); --quick: the cheap run."""
    # The plugins' flags, by their own declarations (RunFlag.dest): nothing listed by hand
    extra = {f.dest: getattr(args, f.dest) for pl in plugins() for f in pl.RUN_FLAGS.flags}
    shared = {o.name: getattr(args, o.name) for o in taken_by("run")}
    targets = (not args.quick and args.reps is None and args.precision is None and args.layouts == 1
               and args.precision_on is None)
    if targets:     # the reps are planned from this host's records (collectors/runner/targets.py)
        shared.update(reps=TARGET_UNITS,
                      budget_s=DEFAULT_TARGET_BUDGET_S if args.budget_s is None else args.budget_s)
    else:
        shared["reps"] = first_stage(args.reps, args.precision)
        shared["budget_s"] = budget_for(args.precision, args.budget_s)
    if shared["paired_windows"] is None:
        shared["paired_windows"] = TARGET_WINDOWS if targets else PAIRED_WINDOWS
    return RunOptions(**shared, keep_perf_data=args.keep_perf_data, targets=targets, quick=args.quick,
                      load_generator=args.load_generator, precision_on=args.precision_on, extra=extra,
                      stalls=args.stalls, perf_share=args.perf_share)


def _share(text: str) -> float:
    """--perf-share: "3/4" or 0.75 -> 0.75 (argparse's error names the flag on ValueError)."""
    try:
        return float(as_share(Fraction(text.strip())))
    except (ValueError, ZeroDivisionError) as e:
        raise argparse.ArgumentTypeError(str(e)) from None


# run's flags that set a RunRequest field (dest: (field, the value from the flag's)), read
# by request_from_args and given() alike; "resume" is no request's field, the case is given()'s
# caller's; the others are RunOptions fields or plugins' RunFlags (extra)
_REQUEST_FIELDS = {"variant": ("variants", list), "set": ("sets", list), "out": ("out", Path),
                   "report": ("report", bool), "no_progress": ("progress", lambda v: not v)}


def _request_fields(ns: dict[str, Any]) -> dict[str, Any]:
    """The RunRequest fields of the parsed flags in `ns` (those it has)."""
    return {name: value(ns[dest]) for dest, (name, value) in _REQUEST_FIELDS.items() if dest in ns}


def given(run_args: list[str]) -> dict[str, Any]:
    """What `stallscope run` flags alone (a schedule job's run-args) set, as data: the
    RunRequest fields they set ("resume" too, which no request has) and under "options" the
    RunOptions fields, plugin flags in "extra". A flag given is there even at its default
    value; a flag not given is not, and no default or rule is applied (the caller fills
    what was left open). SystemExit, argparse's message printed, on what run would refuse."""
    # no defaults: what parses is what was given; a case first: a stray word is an error
    ns = vars(parser(defaults=False).parse_args(["CASE", *run_args]))
    del ns["case"]
    plugin_dests = {f.dest for pl in plugins() for f in pl.RUN_FLAGS.flags}
    out = _request_fields(ns) | ({"resume": ns.pop("resume")} if "resume" in ns else {})
    options = {k: v for k, v in ns.items() if k not in _REQUEST_FIELDS and k not in plugin_dests}
    extra = {k: v for k, v in ns.items() if k in plugin_dests}
    out["options"] = {**options, **({"extra": extra} if extra else {})}
    return out


def request_from_args(args: argparse.Namespace, argv: list[str]) -> RunRequest:
    """The run the parsed arguments ask for; argv is kept as the manifest's command."""
    return RunRequest(case=args.case, options=options_from_args(args), command=list(argv),
                      **_request_fields(vars(args)))
