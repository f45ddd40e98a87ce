"""The results model: what a comparison of one run directory found, as data classes.

analysis.compare.engine fills a `Results`; analysis.report renders it;
`Results.to_json()` is results.json (`SCHEMA`, documented in docs/results-json.md), which
scripts and the history of scheduled jobs read. Everything a report shows is in here as
data (numbers, names, plain-text notes; never Markdown or formatted numbers), so a report
can be checked against results.json and results.json against the run.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.compare.skipped_callers import SkippedSection
from analysis.compare.stall_section import StallSection
from analysis.compare.summary_items import SummaryItem
from analysis.compare.time_split import TimeSplit
from analysis.compare.values import ChangeOut, FdrFamily, LayoutSpread, Side  # noqa: F401 (FdrFamily: read here too)
from analysis.inputs.case import WorkingSet
from analysis.inputs.collector_facts import UnwindProbe
from analysis.inputs.host import HostFacts
from analysis.inputs.manifest import LoadGenerator, Placement, Profiling
from analysis.inputs.records import convert, plain
from analysis.tma.funnel_doc import FunnelDoc

SCHEMA = 4


@dataclass
class MetricRow:
    """A throughput or latency metric of one test: ops/s, or ms for latencies."""
    test: str
    metric: str              # "throughput", "p50 latency", "p99 latency", "paired throughput"
    unit: str                # "ops/s" or "ms"
    higher_is_better: bool
    base: Side
    cand: Side
    change: ChangeOut
    # What the row measures in the seed tables' words, from the case ("10M keys × 10 B,
    # 50 keys per MSET"); `test` keeps the load generator's own name.
    label: str = ""

    # a run that decides: the size it aimed at (a fraction) and whether it missed it
    # (analysis/compare/row_targets.py); None in every other run
    target: float | None = None
    target_missed: bool | None = None
    # a run that decides planned below sequential.FLOOR_REPS: the lowest coverage such a
    # plan's intervals kept in simulation (sequential.short_coverage); else None
    level_kept: float | None = None

FUNCTION_VERDICTS = ("negligible", "new in candidate", "gone", "too few samples")


@dataclass
class Judgement:
    """The verdict of a function's flat or cumulative cost as the report gives it
    (analysis/compare/materiality.py): the statistical verdict of the measure that counts,
    or one of FUNCTION_VERDICTS when no statistic should speak."""
    verdict: str
    reason: str = ""
    base_samples: float | None = None   # samples behind the side, summed over its reps
    cand_samples: float | None = None
    basis: str = ""          # "CPU time per operation" or "share": whose verdict it is
    note: str = ""           # the share moved by dilution, ...
    # the smallest change of the measure that speaks this run could have established
    # (ChangeOut.detectable): a fraction when detectable_unit is "rel", else pp
    detectable: float | None = None
    detectable_unit: str = ""
    line: float | None = None    # a minor verdict's line (ChangeOut.line), in detectable_unit

    # a run that decides: as MetricRow.target, .target_missed and .level_kept
    target: float | None = None
    target_missed: bool | None = None
    level_kept: float | None = None

@dataclass
class FunctionRow:
    """One function's flat and cumulative share (% of the view's samples) per side."""
    name: str
    thread: str              # the thread view: "all", "main", "io-threads"
    base_flat: Side
    cand_flat: Side
    flat_change: ChangeOut   # in pp
    base_cum: Side
    cand_cum: Side
    cum_change: ChangeOut    # in pp
    # CPU time per operation (ns/op) of the same view: the function's weight (ns of
    # cpu-clock) / operations the load generator completed in the profile window. Shares
    # dilute (one function's gain raises every other share); these do not. None when the
    # run has no usable operation counts (ProfileSection.per_op_reason says why).
    base_flat_ns: Side | None = None
    cand_flat_ns: Side | None = None
    flat_ns_change: ChangeOut | None = None    # in ns/op, lower is better
    base_cum_ns: Side | None = None
    cand_cum_ns: Side | None = None
    cum_ns_change: ChangeOut | None = None
    # Samples behind each rep's flat and cumulative weight; None when a rep's sample weight is unknown
    base_flat_samples: list[float] | None = None
    cand_flat_samples: list[float] | None = None
    base_cum_samples: list[float] | None = None
    cand_cum_samples: list[float] | None = None
    flat_verdict: Judgement | None = None    # what the report says of the flat cost
    cum_verdict: Judgement | None = None


@dataclass
class CallerRow:
    """Samples of `function` under a call from `caller`, % of the view's samples,
    over the variant's profile reps merged."""
    function: str
    caller: str
    base_share: float
    cand_share: float


@dataclass
class ThreadRow:
    """Share of all samples that a thread group holds (% of samples) per side."""
    group: str
    base: Side
    cand: Side
    change: ChangeOut


@dataclass
class TruncationSection:
    """Samples whose stack stops before the thread's entry (analysis/compare/truncated_reps.py):
    every cumulative share is understated by up to that much."""
    available: bool
    threshold: float = 2.0           # % of samples: above it (worst rep) the report says so
    thread: str = "all"              # the thread view measured (the profile section's)
    shares: dict[str, Side] = field(default_factory=dict)   # variant -> % of samples per rep
    reps: dict[str, list[int]] = field(default_factory=dict)
    worst: float = 0.0               # the largest share of any rep, %
    roots: dict[str, float] = field(default_factory=dict)   # where they start -> % of all samples
    callgraph: str = ""              # fp | dwarf | fp+dwarf, as perf recorded (", " if reps differ)
    dwarf_threads: list[str] = field(default_factory=list)   # fp+dwarf: unwound with DWARF
    probe: UnwindProbe | None = None      # the frame-pointer probe that chose (rep.json
                                          #   collectors.perf.unwind_probe), if any
    unwind: str = ""                 # the sentence: how stacks were unwound, and why
    exceeds: bool = False            # worst > threshold
    note: str = ""                   # the sentence beside the cumulative tables
    skipped: SkippedSection = field(default_factory=SkippedSection)   # stacks that skipped a caller


@dataclass
class ProfileSection:
    available: bool
    reason: str = ""                 # why not, when not available
    thread: str = "all"              # the view of the focus table and top movers
    thread_note: str = ""            # why that view (e.g. io-threads dilute shares)
    weight_unit: str = "samples"     # unit of the folded weights
    samples: dict[str, list[float]] = field(default_factory=dict)  # variant -> total weight per rep
    reps: dict[str, list[int]] = field(default_factory=dict)       # variant -> rep numbers
    focus: list[FunctionRow] = field(default_factory=list)
    focus_other_view: list[FunctionRow] = field(default_factory=list)  # "all" when thread != all
    movers: list[FunctionRow] = field(default_factory=list)
    callers: list[CallerRow] = field(default_factory=list)
    threads: list[ThreadRow] = field(default_factory=list)
    missing_focus: list[str] = field(default_factory=list)   # focus functions in no profile
    # CPU time per operation (see FunctionRow.*_ns): available, or why not
    per_op: bool = False
    per_op_reason: str = ""          # why there are no per-operation columns
    per_op_command: str = ""         # what one operation is ("MSET"): the load's command
    per_op_basis: str = ""           # how the operations of the window were counted
    ops: dict[str, list[float]] = field(default_factory=dict)   # variant -> ops per profile rep
    per_op_total: "MetricRow | None" = None   # all samples of the view per operation, ns/op
    truncated: TruncationSection = field(default_factory=lambda: TruncationSection(False))
    fdr: FdrFamily | None = None     # the focus verdicts, judged together (None: fewer than 2)
    movers_fdr: FdrFamily | None = None   # the top-mover candidates', a family of their own
    # the profiles come from the paired reps (perf in the paired windows): the k-th of each
    # variant were measured side by side, and every row compares them as pairs
    paired: bool = False
    sample_counts: dict[str, list[int]] = field(default_factory=dict)   # variant -> samples per rep
    time_split: TimeSplit | None = None   # where the time went (None: results written before it)


@dataclass
class TmaSection:
    status: str                      # "measured", "replay" or "absent"
    reason: str = ""                 # why absent, or what the replay is
    # the funnel as data (schema stallscope.tma-funnel/1, docs/tma.md; Funnel.doc());
    # analysis.report.funnel_md renders it
    funnel: FunnelDoc | None = None
    sources: dict[str, list[str]] = field(default_factory=dict)  # variant -> tma files


@dataclass
class SaturationSide:
    """Who was busy while one variant's throughput was measured (medians over its reps)."""
    reps: int
    main_busy: float | None          # share of the window the server's main thread was on CPU
    main_polling: float | None       # share of its profile samples polling the event loop
    main_working: float | None       # main_busy x (1 - main_polling)
    other_threads: dict[str, float] = field(default_factory=dict)   # io_thd_1 -> busy, ...
    client_busy: float | None = None     # load generator, CPU-seconds per second
    client_capacity: float | None = None  # CPUs it could use
    host_busy: float | None = None       # all CPUs' busy share (/proc/stat; older runs:
                                         #   server threads + load generator / logical CPUs)
    main_waiting: float | None = None    # main thread runnable but not on a CPU (share)
    host_steal: float | None = None      # CPU taken by the hypervisor for other guests


@dataclass
class SaturationSection:
    """Was the server the bottleneck (analysis/compare/saturation.py)?"""
    available: bool
    reason: str = ""
    sides: dict[str, SaturationSide] = field(default_factory=dict)
    bottleneck: str = ""             # server | contended | client | host | latency
    note: str = ""                   # the sentence beside the throughput verdict
    suggestions: list[str] = field(default_factory=list)


@dataclass
class ProfilerCost:
    """The profiler's cost to the server, from the profile reps' on/off windows
    (analysis/compare/profiler_cost.py): the change of throughput when perf samples."""
    available: bool
    reason: str = ""
    frequency_hz: int | None = None
    pairs: dict[str, int] = field(default_factory=dict)            # variant -> window pairs
    per_variant: dict[str, ChangeOut] = field(default_factory=dict)
    pooled: ChangeOut | None = None
    on_off: ChangeOut | None = None   # the cand/base ratio, perf-off blocks -> perf-on (perf_blocks.py)


@dataclass
class Artifacts:
    """Files next to the report (paths relative to the report directory)."""
    flamegraphs: dict[str, str] = field(default_factory=dict)
    diff_flamegraph: str | None = None
    pprof: dict[str, str] = field(default_factory=dict)
    folded: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


@dataclass
class Measurement:
    """How the run measured throughput (manifest.json `pairing`, `precision`) as the report
    says it: plain sentences, and the numbers behind them."""
    mode: str = ""               # servers | config | off; "" for runs older than the choice
    pairing: str = ""            # how and why: "two servers loaded at once, ..."
    aa: str = ""                 # an A/A run: what that means for every number (else "")
    precision: str = ""          # a --precision run: asked, what ended it, what it reached
    target: float | None = None  # half-width asked, fraction of the ratio
    budget_s: float | None = None
    pilot: int | None = None
    pilot_sd: float | None = None
    planned: int | None = None
    units: int | None = None     # paired reps (or A/B blocks) measured
    ended_by: str | None = None  # precision | budget | answered | None (cut short, or still running)
    half_width: float | None = None   # reached, fraction of the ratio
    layouts: LayoutSpread | None = None   # stallscope run --layouts N (N > 1)

    # a run that decides (analysis/sequential.py): its looks (paired reps), the one that ended
    # it (1-based), its report's alpha and level, the rows that missed their target
    looks: list[int] = field(default_factory=list)
    look: int | None = None
    alpha: float | None = None
    level: float | None = None
    missed: list[str] = field(default_factory=list)

@dataclass
class CaseInfo:
    name: str = ""
    description: str = ""
    size: str = ""
    focus: list[str] = field(default_factory=list)     # functions tabulated
    command: list[str] = field(default_factory=list)   # the workload's command words
    label: str = ""          # analysis.inputs.case.Case.label(): "10M keys × 10 B, 50 keys per MSET"
    # the run's --set overrides, "field=value" (a sweep point's axes and sets; not in the description)
    overrides: list[str] = field(default_factory=list)
    working_set: WorkingSet | None = None   # the dataset against the running host's last-level cache
    keys: int = 0                           # the dataset's top-level keys


@dataclass
class Settings:
    """The options the comparison ran with (analysis.compare.options.CompareOptions)."""
    noise: float
    regression: float
    noise_pp: float
    regression_pp: float
    thread: str              # the view asked for, or "auto"
    top: int
    confidence: float
    max_cv: float
    focus: list[str] = field(default_factory=list)
    min_share: float = 0.5       # % of samples: under it on both sides, "negligible"
    min_samples: float = 20      # samples behind the larger side: fewer, no verdict


@dataclass
class BuildFacts:
    """A variant as the environment block shows it (from manifest.json's variants)."""
    spec: str = ""
    source: str = ""
    version: str | None = None
    commit: str | None = None
    binary_sha256: str = ""
    make_flags: list[str] = field(default_factory=list)
    config: dict[str, str] = field(default_factory=dict)
    patches: list[dict[str, str]] = field(default_factory=list)   # [{"file", "sha256"}]
    callgraph: str = "fp"
    frame_pointers: bool | None = None


@dataclass
class Environment:
    """Where and how the run was made, copied from the manifest so the report stands alone."""
    host: HostFacts = field(default_factory=HostFacts)
    tools: dict[str, str | None] = field(default_factory=dict)
    placement: Placement | None = None
    profiling: Profiling | None = None
    load_generator: LoadGenerator = field(default_factory=LoadGenerator)
    variants: dict[str, BuildFacts] = field(default_factory=dict)


@dataclass
class Reproduce:
    run: str = ""            # the command that collected the run
    report: str = ""         # the command that rebuilds this report


@dataclass
class Results:
    run_id: str
    created: str
    case: CaseInfo
    base: str
    cand: str
    settings: Settings
    throughput: list[MetricRow] = field(default_factory=list)
    latency: list[MetricRow] = field(default_factory=list)
    paired: list[MetricRow] = field(default_factory=list)
    profile: ProfileSection = field(default_factory=lambda: ProfileSection(False))
    tma: TmaSection = field(default_factory=lambda: TmaSection("absent"))
    saturation: SaturationSection = field(default_factory=lambda: SaturationSection(False))
    profiler_cost: ProfilerCost = field(default_factory=lambda: ProfilerCost(False))
    environment: Environment = field(default_factory=lambda: Environment())
    reproduce: Reproduce = field(default_factory=Reproduce)
    artifacts: Artifacts = field(default_factory=Artifacts)
    summary: list[SummaryItem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    fdr: list[FdrFamily] = field(default_factory=list)   # families of verdicts judged together
    measurement: Measurement = field(default_factory=Measurement)
    # memory stalls from the in-cache control (analysis/compare/stalls.py)
    stalls: StallSection = field(default_factory=lambda: StallSection(False))
    schema: int = SCHEMA

    def to_json(self) -> dict[str, Any]:
        d = plain(self)
        return _clean({"schema": d.pop("schema"), **d})

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, d: Any, where: str = "results.json") -> "Results":
        """results.json back as data through records.convert; a newer writer's keys are ignored."""
        return convert(d, cls, where)


def read_results_json(path: str | Path) -> dict[str, Any]:
    """A results.json file's document, checked to be one (it names its run); ValueError
    names the file and line otherwise. The history stores this document as it is."""
    p = Path(path)
    try:
        d = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{p}:{e.lineno}: malformed JSON: {e.msg}") from None
    except OSError as e:
        raise ValueError(f"{p}: cannot read: {e.strerror}") from None
    if not isinstance(d, dict) or "run_id" not in d:
        raise ValueError(f"{p}: not a stallscope results.json (no run_id); give the results.json "
                         "that `stallscope compare` wrote")
    return d


def load_results(path: str | Path) -> Results:
    """A results.json file as `Results` (scripts, tests); ValueError names the file when it
    is not one."""
    return Results.from_json(read_results_json(path), str(path))


def _clean(x: Any) -> Any:
    """JSON-safe and stable: inf/NaN become null, floats rounded to 12 significant digits."""
    if isinstance(x, float):
        if not math.isfinite(x):
            return None
        return float(f"{x:.12g}")
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x
