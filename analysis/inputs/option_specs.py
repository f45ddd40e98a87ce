"""The options several commands share, each declared once: its name (the field of RunOptions,
SweepOptions and the argparse dest), flag, parser, default, unit, help and the commands that
take it; and the rules between them, each written once as a function (docs/statistics.md,
"A target precision").

    run, sweep, experiment    their arguments are made from these (commands/options.py)
    demo, experiment github   --size, --reps, --profile-reps too
    pr config, schedule       read their defaults and parsers from here (the file's keys)

tests/test_option_specs.py fails when one of these defaults or rules is written a second time
anywhere else in analysis/ or collectors/. Standard library only: the PR config reader and
every manifest reader import it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from analysis.errors import UserError

# --------------------------------------------------------------------- the defaults
DEFAULT_REPS = 5           # throughput reps per variant, or paired reps, without --precision
PRECISION_PILOT = 8        # --precision without --reps: the first stage (t at 7 df: 2.36)
MIN_PILOT = 3              # fewest first-stage units: s0 needs 2 degrees of freedom to mean anything
DEFAULT_BUDGET_S = 1800.0  # --precision without --budget: 30 minutes of wall time
DEFAULT_BISECT_BUDGET_S = 7200.0  # stallscope bisect without --budget: 2 hours of wall time
DEFAULT_MIN_CHANGE = 0.05       # stallscope bisect on a host that has recorded no noise for the case
PR_PRECISION = 0.02        # the PR config's precision when it names none
# perf's sampling rate when none is chosen from this host's measured cost per sample
# (collectors/host/sample_cost.py chooses it: the highest rate that keeps the profiler
# under 1% of the server's CPU); what a caller without a host gets.
DEFAULT_FREQ_HZ = 99
SEPARATE_PROFILE_REPS = 3  # where profiles cannot be paired: 3, the fewest with a CI
# Short windows pair better: on the 2-core VM the host's noise drifts over seconds, so two
# 0.25 s windows side by side differ by ~8% where two 2 s windows differ by ~11%, and 8x as
# many pairs fit in the same time (docs/statistics.md, "Paired windows").
PAIRED_WINDOW_S = 0.25     # length of one paired window (s)
PAIRED_WINDOWS = 64        # windows per paired rep (ABBA...): 32 pairs
DEFAULT_SIZE = "default"   # the case's own size
# `stallscope run` with none of --reps, --precision, --quick: a run that decides
# (collectors/runner/targets.py). Detectable sizes at 80% power, as fractions of the ratio:
TARGET_THROUGHPUT = 0.02   # the throughput row: the paired reps are planned for it
TARGET_FOCUS = 0.05        # each focus function's CPU time per operation, at its family's level
TARGET_MOVERS = 0.10       # every function of TARGET_SHARE of the samples or more (the perf rate)
TARGET_SHARE = 0.05
TARGET_UNITS = 13          # paired reps before this host has recorded the case's spread
# ... and the fewest and most a recorded spread may plan. The fewest is the function rows':
# a focus function of ~10% of the samples (lookupKey's flat cost) read ±9-12% in 10 reps of
# 128 windows at 1249-1499 Hz on the Intel guest of 2026-11-28; 13 reps of 96 take the same
# time (a rep's fixed cost, two dataset loads and the rehash, is ~25 s of its ~57) and judge
# it 15% tighter (the rank interval's K/sqrt(n) falls faster than the samples a rep lose)
TARGET_MIN_UNITS = 13
TARGET_MAX_UNITS = 40
TARGET_WINDOWS = 96        # windows per paired rep
DEFAULT_TARGET_BUDGET_S = 900.0   # 15 minutes of wall time after the builds
# --layouts: code layouts per variant; 1 is the upstream link order, as before layouts existed
DEFAULT_LAYOUTS = 1
# A case's sizes (docs/cases.md): tiny is the mechanics (seconds to preload; it may fit in
# cache); small, default and large outgrow the host's last-level cache 2x, 4x and 8x where
# the case is about DRAM (collectors/workload/working_set.py)
SIZES = ("tiny", "small", "default", "large")
SIZE_WORDS = ("tiny (the mechanics: seconds to preload, may fit in cache) | small (a DRAM "
              "case's dataset at least 2x this host's last-level cache) | default (at least 4x) "
              "| large (8x, the DRAM cases)")
# how throughput is measured (collectors/runner/pairing.py): auto pairs wherever it fits and
# falls back to separate reps, saying why; paired pairs or stops with the reason; unpaired
# runs separate reps (a server start each). One vocabulary for run, sweep, the PR config and
# experiment files.
PAIRINGS = ("auto", "paired", "unpaired")
# The sweep's words before that (sweep.json schema 1, experiment files): its "paired" paired
# where it fit, else interleaved (auto); "interleaved" never paired (unpaired).
SWEEP_PAIRINGS_V1 = {"paired": "auto", "interleaved": "unpaired"}


class OptionError(UserError, ValueError):
    """Options that break a rule between them; each command raises it as its own error."""


# ------------------------------------------------------------------- units, parsers
def parse_duration(text: Any) -> float:
    """'30m', '1h', '90s', '1h30m' or plain seconds -> seconds (ValueError otherwise)."""
    t = str(text).strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", t):
        return float(t)
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", t)
    if not t or parts is None or not any(parts.groups()):
        raise ValueError(f"duration {text!r}: give e.g. 30m, 1h, 90s or 1h30m")
    h, m, s = (int(x or 0) for x in parts.groups())
    return float(h * 3600 + m * 60 + s)


def format_duration(seconds: float) -> str:
    """Seconds as parse_duration reads them back: 1800 -> '30m', 5400 -> '1h30m', 90 -> '1m30s'."""
    s = int(round(seconds))
    h, m, sec = s // 3600, s % 3600 // 60, s % 60
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (sec, "s")) if v) or "0s"


def parse_precision(text: Any) -> float:
    """'2%' or '0.02' -> 0.02 (ValueError outside (0, 50%))."""
    t = str(text).strip()
    try:
        v = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise ValueError(f"precision {text!r}: give a percentage like 2% (or a fraction like 0.02)") from None
    if not 0 < v < 0.5:
        raise ValueError(f"precision {text!r}: must be between 0% and 50%")
    return v


def format_precision(fraction: float) -> str:
    """0.02 -> '2%' (parse_precision reads it back)."""
    return f"{fraction * 100:g}%"


def show_precision(fraction: float) -> str:
    """A precision as text parse_precision reads back exactly: '2%' where that is exact,
    else the fraction in full ('0.0123456789')."""
    text = format_precision(fraction)
    return text if parse_precision(text) == fraction else repr(float(fraction))


def show_duration(seconds: float) -> str:
    """A duration as text parse_duration reads back exactly: '30m' for whole seconds, else
    the seconds in full ('90.5')."""
    text = format_duration(seconds)
    return text if parse_duration(text) == seconds else repr(float(seconds))


def show_float(v: float) -> str:
    """A float as text float() reads back exactly, short where that is exact (0.25)."""
    return f"{v:g}" if float(f"{v:g}") == v else repr(float(v))


_BINARY = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def parse_bytes(text: Any) -> int:
    """'480MiB', '480M', '1.1GiB', '32 MB', '36608K' -> bytes, binary units (cache sizes are
    powers of two however a vendor writes them). ValueError otherwise."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?)(?:i?b)?\s*", str(text), re.IGNORECASE)
    if not m or float(m.group(1)) * _BINARY[m.group(2).lower()] < 1:
        raise ValueError(f"cache size {text!r}: give e.g. 480MiB, 32M or 1.1GiB")
    return int(float(m.group(1)) * _BINARY[m.group(2).lower()])


def show_bytes(n: int) -> str:
    """Bytes as parse_bytes reads them back exactly: '480MiB', '36608KiB', '1234'."""
    for unit, div in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n % div == 0:
            return f"{n // div}{unit}"
    return str(n)


def parse_pairing(text: Any) -> str:
    """auto | paired | unpaired (ValueError otherwise)."""
    t = str(text).strip()
    if t not in PAIRINGS:
        raise ValueError(f"pairing {text!r}: choose one of {', '.join(PAIRINGS)}")
    return t


# -------------------------------------------------------------------------- the rules
def first_stage(reps: int | None, precision: float | None) -> int:
    """--reps as given, else PRECISION_PILOT first-stage units with --precision, else DEFAULT_REPS."""
    if reps is not None:
        return reps
    return PRECISION_PILOT if precision is not None else DEFAULT_REPS


def budget_for(precision: Any, budget: Any) -> Any:
    """The budget of a run: as given, else DEFAULT_BUDGET_S with a precision, else None.
    A budget written as text (the PR config's) gets the default as text ('30m')."""
    if budget is not None or not precision:
        return budget
    return format_duration(DEFAULT_BUDGET_S) if isinstance(precision, str) else DEFAULT_BUDGET_S


def precision_problem(precision: Any, budget: Any, reps: int | None, keys: bool = False) -> str | None:
    """What is wrong with these --precision, --budget and --reps together, or None:
    a budget needs a precision; a precision needs a first stage of at least MIN_PILOT.
    `keys`: name them as a file's keys (precision) rather than flags (--precision)."""
    name = (lambda o: o.key) if keys else (lambda o: o.flag)
    if budget is not None and not precision:
        return (f"{name(BUDGET)} goes with {name(PRECISION)} (it bounds the reps a precision run "
                "adds)" + ("; give both, or neither" if keys else ""))
    if precision and reps is not None and reps < MIN_PILOT:
        return (f"{name(PRECISION)} needs a first stage of at least {MIN_PILOT} paired reps "
                f"({name(REPS)} {reps})")
    return None


def check_precision(precision: Any, budget: Any, reps: int | None, keys: bool = False) -> None:
    """precision_problem as OptionError."""
    problem = precision_problem(precision, budget, reps, keys)
    if problem:
        raise OptionError(problem)


# ---------------------------------------------------------------------- declarations
@dataclass(frozen=True)
class Option:
    """One option as every command that takes it spells it."""
    name: str                        # RunOptions / SweepOptions field, the parsed argument's name
    flag: str                        # the command line's spelling
    parse: Callable[[str], Any]      # text -> value (ValueError on bad text)
    default: Any                     # None: a rule or the run decides (said in help)
    unit: str                        # of the parsed value
    help: str                        # run's help; `helps` has the other commands'
    # where it is taken: commands (run, sweep, experiment, demo, "experiment github", "cases
    # show") and files ("pr": the PR config, "schedule", "experiment file": its options)
    commands: tuple[str, ...]
    metavar: str | None = None
    key: str | None = None           # its key in the PR config and schedule files
    helps: dict[str, str] = field(default_factory=dict)
    show: Callable[[Any], str] = str  # value -> text, the inverse of parse: parse(show(v)) == v
    choices: tuple[str, ...] | None = None   # the words it takes, where it is one of a few


_MEASURED = ("run", "sweep", "experiment")
REPS = Option(
    "reps", "--reps", int, None, "reps", key="reps",
    commands=("run", "sweep", "demo", "pr", "schedule", "experiment file"),
    help="paired reps (each both variants, side by side), or with separate reps throughput reps "
         f"per variant (default: a run that decides, its paired reps planned from this host's recorded "
         f"spread, at least {TARGET_MIN_UNITS} of {TARGET_WINDOWS} windows; --quick: {DEFAULT_REPS} of "
         f"{PAIRED_WINDOWS}; with --precision the first stage, default {PRECISION_PILOT}; docs/defaults.md)",
    helps={"sweep": f"reps per point: per variant, or paired reps (default {DEFAULT_REPS}; with "
                    f"--precision each point's first stage, default {PRECISION_PILOT})",
           "demo": f"paired reps (default: planned for the run's targets, at least {TARGET_UNITS} of "
                   f"{TARGET_WINDOWS} windows, within the demo's budget; small: 3 of 64); with "
                   "--unpaired: throughput reps per variant"})
PROFILE = Option(
    "profile", "--profile", str, "perf", "", commands=("run", "sweep", "experiment file"),
    help="CPU profiler (default perf): in a paired run perf samples the paired windows themselves, "
         "so each function's CPU time per operation is a paired ratio per rep; where a run cannot "
         "pair, separate profile reps",
    helps={"sweep": "profiler of the profile reps: perf | off (default perf)"})
PROFILE_REPS = Option(
    "profile_reps", "--profile-reps", int, None, "reps", metavar="N", key="profile-reps",
    commands=("run", "sweep", "demo", "schedule", "experiment file"),
    help="separate profiled reps per variant (default: none in a paired run, whose windows are "
         f"profiled; {SEPARATE_PROFILE_REPS} where it cannot pair, the fewest that give function "
         "costs a confidence interval)",
    helps={"sweep": "separate profile reps per variant (default: none where a point pairs, its "
                    f"paired windows are profiled; {SEPARATE_PROFILE_REPS} where it cannot)",
           "demo": "separate perf profile reps per variant (default: none, perf samples the paired "
                   f"windows; {SEPARATE_PROFILE_REPS} with --unpaired)"})
FREQUENCY = Option(
    "frequency_hz", "--frequency", int, None, "Hz", metavar="HZ", commands=("run", "sweep"),
    help="perf sampling frequency in Hz (default: in a run that decides, the lowest rate that gives "
         "the focus functions and every function of 5%% of the samples their targets in the run's "
         "reps, at most 1,999 Hz and held where perf's predicted cost passes 5%% of the server's "
         "CPU (a prediction that about one run in ten exceeds, not a cap; both servers are "
         "sampled alike in the same blocks, so a common cost cancels in every ratio, throughput's "
         "too, and the report checks that the blocks with perf and without agree), never below "
         "the 1%% rate; with --quick, or separate profile reps, the highest rate whose predicted "
         "cost stays within 1%%. The cost per sample is what this case's earlier server-bound "
         "runs on this host measured in their perf on/off blocks, or "
         "all of the host's until the case has 5 (a 90%% upper bound of the next run's cost, the "
         "runs pooled by random effects, with a starting cost of 35 ± 10 µs measured on a 2-core KVM "
         "guest). The report prints the rate and the cost measured in this run",
    helps={"sweep": "perf sampling frequency in Hz at every point (default: each point's run "
                    "chooses it from this host's measured cost per sample, as `stallscope run`)"})
PAIRED_WINDOW = Option(
    "paired_window_s", "--paired-window", float, PAIRED_WINDOW_S, "s", metavar="SECONDS",
    commands=("run", "sweep", "experiment file"), show=show_float,
    help=f"length of one paired window in s (default {PAIRED_WINDOW_S:g}: short windows pair "
         "better on a host whose noise drifts over seconds)",
    helps={"sweep": f"paired window length (default {PAIRED_WINDOW_S:g})"})
PAIRED_WINDOWS_OPT = Option(
    "paired_windows", "--paired-windows", int, PAIRED_WINDOWS, "windows", metavar="N", key="paired-windows",
    commands=("run", "sweep", "experiment file", "bisect", "schedule bisect"),
    help=f"windows per paired rep, ABBA order (default {PAIRED_WINDOWS})",
    helps={"sweep": f"windows per paired rep (default {PAIRED_WINDOWS})",
           "bisect": f"windows per paired rep of every step (default {PAIRED_WINDOWS}; the steps "
                     "decide over reps, so fewer windows make a rep cheaper and a little noisier)"})
SIZE = Option(
    "size", "--size", str, DEFAULT_SIZE, "", key="size",
    commands=("run", "sweep", "experiment", "experiment github", "demo", "cases show", "pr", "schedule",
              "bisect"),
    help=f"case size: {SIZE_WORDS}; each size's own key count is a floor (default: default)",
    helps={"sweep": "case size: tiny | small | default | large (small and up outgrow the host's "
                    "last-level cache 2x, 4x, 8x)",
           "experiment": "tiny (the experiment file's few-minute CI version: fewer points and reps) | small "
                         "| default (the seed's table, the README's run time) | large, where its cases have it",
           "experiment github": "the experiment's size (default: default)",
           "demo": "default: MSET over at least 10M keys and 4x this host's last-level cache; "
                   "small: at least 2x the cache, fewer reps (CI)",
           "cases show": "size: tiny, small, default, large (default: default)"})
LLC = Option(
    "llc_bytes", "--llc", parse_bytes, None, "bytes", metavar="SIZE",
    commands=("run", "sweep", "experiment", "demo", "cases show"), show=show_bytes,
    help="the last-level cache the sizes outgrow (e.g. 480MiB, 1.1GiB), for a planned target "
         "machine (default: this host's L3, or L2 where it reports none): small is at least 2x "
         "it, default 4x, large 8x where the case is about DRAM")
PRECISION = Option(
    "precision", "--precision", parse_precision, None, "fraction of the ratio", metavar="PCT",
    key="precision", commands=(*_MEASURED, "pr", "experiment file"), show=show_precision,
    help="add reps until the 95%% interval of the throughput change (an rdb-load case: the load "
         "time) is at most PCT of the ratio wide either way (e.g. 2%%), or --budget is spent: the "
         "first --reps paired reps (unpaired: A/B blocks) set the spread that decides how many "
         "(Stein's two-stage design: the interval keeps its 95%%); the report says which ended the run",
    helps={c: "each point adds reps (paired reps, or one rep per variant where it cannot pair) "
              "until the interval of its main change is at most PCT of the ratio wide either way "
              "(e.g. 2%%), or its --budget is spent (`stallscope run --precision`); --reps is then "
              "each point's first stage" for c in ("sweep", "experiment")})
BUDGET = Option(
    "budget_s", "--budget", parse_duration, None, "s", metavar="TIME", key="budget",
    commands=(*_MEASURED, "pr", "experiment file", "bisect", "schedule bisect"), show=show_duration,
    help=f"with --precision: wall time the run may take (30m, 1h, 1h30m; default "
         f"{format_duration(DEFAULT_BUDGET_S)}); a paired rep past the first stage starts only if it fits. "
         f"A run that decides (no --reps, --precision or --quick): its wall time (default "
         f"{format_duration(DEFAULT_TARGET_BUDGET_S)}), a rep starting only if it fits",
    helps={c: f"with --precision: wall time per point (30m, 1h; default {format_duration(DEFAULT_BUDGET_S)})"
           for c in ("sweep", "experiment")}
    | {"bisect": f"wall time the whole bisection may take (default "
                 f"{format_duration(DEFAULT_BISECT_BUDGET_S)}); when it is spent the report says "
                 "where the culprit is so far, and --resume goes on",
       "schedule bisect": "wall time a job's automatic bisection may take"})
MIN_CHANGE = Option(
    "min_change", "--min-change", parse_precision, None, "fraction of the ratio", metavar="PCT",
    key="min-change", commands=("bisect", "schedule bisect"), show=show_precision,
    help="the smallest throughput change a bisection looks for (e.g. 2%%): a step is 'different' "
         "when its interval excludes every change of half of it, 'same' when it excludes every "
         "change of all of it (default: from this host's recorded noise for the case, the "
         "smallest change a step finds with 95%% power by its last look; 5%% before the host has any)")

LAYOUTS = Option(
    "layouts", "--layouts", int, DEFAULT_LAYOUTS, "layouts", metavar="N", commands=("run",),
    help=f"build every variant N times, its objects linked in N orders (layout shuffle numbers 1..N, recorded; "
         f"default {DEFAULT_LAYOUTS}: the upstream order), run --reps paired reps on each layout "
         "(layout i of one side against layout i of the other) and give the change over layouts, "
         "the layout spread inside its interval, with a line: holds across N layouts, or depends "
         "on layout (docs/statistics.md, \"Code layout\"); paired runs of built variants only")

PAIRING = Option(
    "pairing", "--pairing", parse_pairing, "auto", "", key="pairing", choices=PAIRINGS,
    commands=("run", "sweep", "pr", "experiment file"),
    help="auto (default): pair wherever it fits, else separate reps, saying why; paired: pair "
         "or stop with the reason; unpaired: separate reps (--paired and --unpaired for short)",
    helps={"sweep": "as `stallscope run --pairing`, at every point: auto (default) pairs where "
                    "the point fits (config-only variants in one server process, CONFIG SET "
                    "windows; two builds loaded at once, ABBA windows, where two datasets fit "
                    "this host's memory), else interleaved reps; paired: refuse the plan where "
                    "a point cannot pair; unpaired: a server start per rep everywhere"})

OPTIONS = (REPS, PROFILE, PROFILE_REPS, FREQUENCY, PAIRED_WINDOW, PAIRED_WINDOWS_OPT, SIZE, LLC,
           PRECISION, BUDGET, MIN_CHANGE, LAYOUTS, PAIRING)


def taken_by(command: str) -> tuple[Option, ...]:
    """The shared options `command` takes, in declaration order."""
    return tuple(o for o in OPTIONS if command in o.commands)


def file_type(o: Option) -> Any:
    """The YAML type of the option's value in a file that gives it as a number or word."""
    return str if o.choices else {int: int, str: str}.get(o.parse, (int, float))


def spell(option: Option, value: Any) -> list[str]:
    """The option as a command line gives it: [flag, text] (nothing for None)."""
    return [] if value is None else [option.flag, option.show(value)]


def argv_for(command: str, values: dict[str, Any]) -> list[str]:
    """The arguments that give `values` (by option name) to `command`: each declared option
    it takes that has a value, in declaration order. Other names are not its to spell."""
    return [x for o in taken_by(command) for x in spell(o, values.get(o.name))]


@dataclass
class MeasureOptions:
    """The fields a run's options (RunOptions, manifest.json) and a sweep's (SweepOptions,
    sweep.json) share: the options above, each with its declared default."""
    reps: int = DEFAULT_REPS         # throughput reps per variant, or paired reps
    profile: str = PROFILE.default   # perf | off | a plugin's profiler
    # separate profiled reps per variant; None: none where a run pairs (perf samples the
    # paired windows, collectors/profilers/perf_paired.py), SEPARATE_PROFILE_REPS where it
    # cannot (api.plan_run decides, the manifest records the number)
    profile_reps: int | None = None
    # perf's rate (--frequency); None: chosen from this host's measured cost per sample
    # (api.plan_run). Older files call it freq_hz (manifest.json) or frequency (sweep.json).
    frequency_hz: int | None = None
    paired_window_s: float = PAIRED_WINDOW_S
    paired_windows: int = PAIRED_WINDOWS
    load_generator: str = "auto"     # auto (the case's workload.tool) | redis-benchmark | memtier
    # --precision: the half-width asked of the throughput interval, as a fraction of the
    # ratio (0.02); units are added after the `reps` first-stage ones until it is met or
    # `budget_s` of wall time is spent (collectors/runner/precision.py)
    precision: float | None = None
    budget_s: float | None = None
    # auto: paired wherever it fits, separate reps otherwise (and why); paired: pairing or an
    # error; unpaired: separate reps (collectors/runner/pairing.py, PAIRINGS)
    pairing: str = PAIRING.default
    # --llc: the last-level cache a size's multiple is taken of (a planned target machine);
    # None: this host's (collectors/workload/working_set.py)
    llc_bytes: int | None = None
