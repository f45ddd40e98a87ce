"""manifest.json: what a run is (case, variants, host, tools), how it ran (placement,
profiling, calibration, load generator, dataset) and the status of every rep.

Schema history (docs/run-directory.md):
  1  the first layout (sections optional, added within schema 1 over time)
  2  typed sections; profiling.event names the perf event; unknown fields are kept on
     every level (Record.extra), so a resume never drops what a newer writer added.
  3  the --precision target is stored once, as options.precision (schema 2 also wrote it
     as precision.target; the migration moves it there).
  4  the rest of what --precision was asked is stored once, in options too: the budget
     (options.budget_s), the first stage (options.reps) and --on (options.precision_on);
     schema 3 also wrote them as precision.budget_s, .pilot and .on (the migration moves them).
`migrate()` brings any older manifest dict up to SCHEMA on load; files are never
rewritten by analysis.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from analysis.errors import UserError
from analysis.inputs.layout import MANIFEST
from analysis.inputs.case import Case
from analysis.inputs.host import HostFacts
from analysis.inputs.records import Record, RecordError
from analysis.inputs.run_options import RunOptions
from analysis.inputs.run_spread import RunSpread
from analysis.inputs.stall_plan import StallPlan
from analysis.inputs.tma_plan import TmaPlan

SCHEMA = 4

REP_STATUSES = ("pending", "running", "ok", "failed")
REP_KINDS = ("throughput", "profile", "paired", "warmup")


class ManifestError(UserError, ValueError):
    """A manifest that cannot be read; the message names the file."""


@dataclass
class Rep(Record):
    """One entry of the schedule: a rep of a variant and what became of it."""
    variant: str
    rep: int
    kind: str = "throughput"        # throughput | profile | paired | warmup
    status: str = "pending"         # pending | running | ok | failed
    reason: str | None = None
    started: str | None = None
    finished: str | None = None
    dir: str = ""                   # <variant>/<rep>, relative to the run directory
    layout: int | None = None       # --layouts N: the seed of the builds this rep ran
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"layout"})

    def __post_init__(self) -> None:
        if not self.dir:
            self.dir = f"{self.variant}/{self.rep}"
        if self.kind not in REP_KINDS:
            raise RecordError(f"rep kind {self.kind!r} not one of {REP_KINDS}")
        if self.status not in REP_STATUSES:
            raise RecordError(f"rep status {self.status!r} not one of {REP_STATUSES}")

    @property
    def measured(self) -> bool:
        """True for a finished rep that analysis should use."""
        return self.status == "ok" and self.kind != "warmup"


@dataclass
class Variant(Record):
    """A built (or given) server: what was run, and how to tell two builds apart."""
    name: str
    spec: str                        # what the user typed
    kind: str                        # git | debsrc | binary
    source: str = ""                 # human description of where it came from
    patches: list[dict[str, str]] = field(default_factory=list)   # [{"file", "sha256"}]
    make_flags: list[str] = field(default_factory=list)
    config: dict[str, str] = field(default_factory=dict)           # +config=NAME=VALUE
    server_bin: str = ""
    benchmark_bin: str | None = None
    cli_bin: str | None = None
    binary_sha256: str = ""
    version: str | None = None
    commit: str | None = None
    frame_pointers: bool | None = None
    deps_frame_pointers: bool | None = None   # the bundled jemalloc too (None: not bundled)
    symbols: bool | None = None
    callgraph: str = "fp"            # fp | dwarf (dwarf when the binary lacks frame pointers)
    # +layout=SEED: {"seed", "variable", "objects", "first"} (collectors/variants/linkorder.py)
    layout: dict[str, Any] | None = None
    # stallscope run --layouts N: every layout's build, [{"seed", "server_bin",
    # "binary_sha256"}]; the rep's `layout` picks one (this record's binary is the first's)
    layouts: list[dict[str, Any]] | None = None
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"layout", "layouts"})


@dataclass
class Placement(Record):
    server_cpus: list[int] | None = None
    client_cpus: list[int] | None = None
    note: str = ""


@dataclass
class Profiling(Record):
    profiler: str = "off"            # perf | parca | off
    mode: str = "off"                # separate (profile reps apart from throughput reps) | off
    event: str | None = None         # perf event of the profile reps (cpu-clock)
    frequency_hz: int | None = None
    reps_per_variant: int | None = None
    note: str = ""
    # --profile parca: where profiles come from (never the token)
    parca_url: str | None = None
    comm: str | None = None              # the process name Parca's query selects
    labels: list[str] | None = None      # --parca-label KEY=VALUE
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"parca_url", "comm", "labels"})


@dataclass
class RunStatus(Record):
    state: str = "running"           # running | complete | incomplete | interrupted | failed
    reason: str | None = None
    updated: str | None = None


@dataclass
class PairedPlan(Record):
    """Paired windows: config-only variants in one server process (mode "config", CONFIG
    SET between windows), or two builds loaded at once (mode "servers", the load switched
    between the two servers)."""
    mode: str = "config"
    setting: list[str] = field(default_factory=list)
    values: dict[str, dict[str, str | None]] = field(default_factory=dict)   # variant -> key -> value
    window_s: float = 2.0
    windows: int = 8
    variants: list[str] = field(default_factory=list)
    counter: str = ""


@dataclass
class Pairing(Record):
    """How throughput was measured and why (collectors/runner/pairing.py): "servers" or
    "config" (paired windows, see PairedPlan) or "off" (separate reps, a server start
    each); `asked` is the --pairing the run was given; `aa` marks an A/A run (both sides
    the same binary and config: every difference is the host's noise)."""
    mode: str = "off"
    asked: str = "auto"
    reason: str = ""
    aa: bool = False


@dataclass
class PrecisionPlan(Record):
    """--precision: paired reps added until the throughput interval is that narrow or the
    budget is spent (Stein's two-stage design, docs/statistics.md). What was asked is the
    manifest's `options`, stored there only: the half-width `precision` (a fraction of the
    ratio; 0.02: cand/base known within a factor 1.02 either way), the wall-time `budget_s`,
    the first stage `reps` (Manifest.pilot) and --on `precision_on` (the interval made that
    narrow is that function's CPU time per operation, RunOptions.precision_function). This
    is the plan's own state: the first stage's spread `pilot_sd` (sd of its log ratios) that
    decides `planned`, the total the run aims at, and what ended it.

    A run that decides (options.targets) keeps its looks here too (analysis/sequential.py):
    the paired-rep counts it looks at, each look's alpha, how many it has made, and the look
    (1-based) that ended it with the alpha and level its report is read at (`level`: set
    when the run ends, by a look or by the budget, which reads at the alpha left). Runs made
    before the looks have none, and are read at the comparison's own confidence."""
    pilot_sd: float | None = None
    planned: int | None = None
    ended_by: str | None = None      # precision | budget | answered | None while running
    note: str = ""
    spent_s: float = 0.0             # wall time of the run so far (all its sessions)
    looks: list[int] = field(default_factory=list)     # paired reps at each planned look
    alphas: list[float] = field(default_factory=list)  # each look's alpha (they add up to 0.05)
    made: int = 0                    # looks made so far
    look: int | None = None          # the look that ended the run (1-based); None: no look did
    alpha: float | None = None       # the alpha of the intervals the report prints
    level: float | None = None       # 1 - alpha: CompareOptions.confidence of its report
    open: list[str] = field(default_factory=list)      # rows neither decided nor at their
                                                       #   target at the last look made
    # seconds of options.budget_s kept for the in-cache control after the reps (a run that
    # decides with one planned: collectors/runner/stall_control.budget_s); the reps get the rest
    control_s: float = 0.0
    # planned before this host had recorded what a rep of the case costs: the plan is made
    # again from the first paired rep's cost, then this is False (collectors/runner/replan.py)
    replan: bool = False


@dataclass
class Calibration(Record):
    """redis-benchmark -n for a rep of target_s seconds (memtier: requests None)."""
    requests: int | None = None
    target_s: float = 0.0
    probe_requests: int | None = None
    probe_wall_s: float | None = None
    probe_rps: float | None = None
    tool: str | None = None
    note: str | None = None


@dataclass
class Preload(Record):
    """How the dataset was written into the first server (collectors/workload/dataset.py)."""
    OMIT_IF_NONE = frozenset({"keys_per_s", "dbsize", "chunks", "first_key", "last_key"})
    method: str = "none"                 # lua-evalsha | none
    keys: int = 0
    seconds: float = 0.0
    keys_per_s: int | None = None
    dbsize: int | None = None
    chunks: int | None = None            # EVALSHA calls
    first_key: str | None = None
    last_key: str | None = None


@dataclass
class Warmup(Record):
    """How each rep warmed the server before its measured load."""
    mode: str = "none"                   # per-rep | none
    seconds: float = 0.0
    note: str = ""


@dataclass
class MemtierKeys(Record):
    """The key range memtier draws from (its names are the dataset's; collectors/load/memtier.py)."""
    prefix: str = ""                     # --key-prefix
    minimum: int = 0                     # --key-minimum
    maximum: int = 0                     # --key-maximum
    covered: int = 0                     # keys memtier can send
    keyspace: int = 0                    # keys the workload's range holds
    exact: bool = True                   # covered == keyspace


@dataclass
class LoadGenerator(Record):
    """Which load generator drove the reps and why (collectors/load/memtier.choose), and the
    case in memtier's terms when memtier drove them."""
    OMIT_IF_NONE = frozenset({"path", "reason", "asked_by", "version", "note", "command",
                              "data_size", "clients_per_thread", "threads", "key_range"})
    requested: str | None = None         # redis-benchmark | memtier | None (rdb-load)
    used: str | None = None
    # redis-benchmark: variant -> its binary; memtier: the one binary
    path: dict[str, str | None] | str | None = None
    reason: str | None = None            # why the requested one was not used
    asked_by: str | None = None          # --load-generator memtier | workload.tool: memtier
    version: str | None = None
    note: str | None = None
    command: str | None = None           # memtier --command
    data_size: int | None = None
    clients_per_thread: int | None = None
    threads: int | None = None
    key_range: MemtierKeys | None = None   # None: the command names no random key


@dataclass
class Resume(Record):
    """One `--resume` of the run (or sweep, experiment): when, how, and what was left."""
    OMIT_IF_NONE = frozenset({"reps"})
    at: str = ""
    command: list[str] = field(default_factory=list)
    reps: int | None = None              # reps left to run (runs only)


@dataclass
class DatasetInfo(Record):
    kind: str = "none"
    keys: int | None = None
    snapshot: str | None = None      # the RDB every rep starts from (in the build cache)
    key: str | None = None
    cached: bool | None = None
    snapshot_bytes: int | None = None
    created_by: str | None = None
    preload: Preload | None = None
    preload_s: float | None = None
    l3_warning: str | None = None    # the dataset fits in L3: DRAM stalls will be missing


@dataclass
class Manifest(Record):
    run_id: str
    created: str
    command: list[str]
    case: Case                       # the resolved case (unknown keys kept: Record.extra)
    size: str
    variants: dict[str, Variant]
    host: HostFacts = field(default_factory=HostFacts)
    tools: dict[str, str | None] = field(default_factory=dict)   # tool -> version (None: absent)
    placement: Placement = field(default_factory=Placement)
    profiling: Profiling = field(default_factory=Profiling)
    tma: TmaPlan = field(default_factory=TmaPlan)
    paired: PairedPlan | None = None
    pairing: Pairing | None = None   # None in runs made before pairing was chosen for them
    precision: PrecisionPlan | None = None
    schedule: list[Rep] = field(default_factory=list)
    schema: int = SCHEMA
    status: RunStatus = field(default_factory=RunStatus)
    options: RunOptions = field(default_factory=RunOptions)   # what the run was asked (resume reuses it)
    warmup: Warmup = field(default_factory=Warmup)
    calibration: dict[str, Calibration] = field(default_factory=dict)
    load_generator: LoadGenerator = field(default_factory=LoadGenerator)
    dataset: DatasetInfo = field(default_factory=DatasetInfo)
    resumes: list[Resume] = field(default_factory=list)
    stalls: StallPlan | None = None  # the in-cache control (None: runs made before it)
    run_spread: RunSpread | None = None  # this host's spread between runs (paired runs)
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"stalls", "run_spread"})

    def __post_init__(self) -> None:
        if isinstance(self.case, dict):  # given as JSON (hand-made manifests, tests)
            self.case = Case.from_json(self.case, "case")

    @classmethod
    def load(cls, d: Any, path: Path | str = MANIFEST) -> "Manifest":
        """A manifest dict of any schema (migrated); errors name the file."""
        if not isinstance(d, dict):
            raise ManifestError(f"{path}: not a JSON object")
        try:
            return cls.from_json(migrate(dict(d), path))
        except RecordError as e:
            raise ManifestError(f"{path}: invalid manifest: {e}") from None

    def reps(self, variant: str | None = None, kind: str | None = None,
             measured_only: bool = True) -> list[Rep]:
        return [r for r in self.schedule
                if (variant is None or r.variant == variant) and (kind is None or r.kind == kind)
                and (not measured_only or r.measured)]

    @property
    def pilot(self) -> int | None:
        """The first-stage units of a --precision run (options.reps: option_specs.first_stage),
        None without --precision, and in a run that decides (options.targets: its reps were
        planned before it began, so its intervals are the ordinary ones)."""
        return self.options.reps if self.precision is not None and not self.options.targets else None

    def find_rep(self, variant: str, rep: int) -> Rep:
        for r in self.schedule:
            if r.variant == variant and r.rep == rep:
                return r
        raise KeyError(f"no rep {variant}/{rep} in run {self.run_id}")


def migrate(d: dict[str, Any], path: Path | str) -> dict[str, Any]:
    """Bring an older manifest dict up to SCHEMA (pure; the file is not touched)."""
    schema = d.get("schema")
    if schema is None:
        raise ManifestError(f"{path}: not a stallscope manifest (no 'schema' field)")
    if not isinstance(schema, int) or schema > SCHEMA:
        raise ManifestError(f"{path}: manifest schema {schema!r} is newer than this stallscope "
                            f"understands ({SCHEMA}); upgrade stallscope to read it")
    if schema == 1:
        d = _v1_to_v2(d)
    if d["schema"] == 2:
        d = _v2_to_v3(d)
    if d["schema"] == 3:
        d = _v3_to_v4(d)
    return d


def _v1_to_v2(d: dict[str, Any]) -> dict[str, Any]:
    d = dict(d)
    prof = dict(d.get("profiling") or {})
    # Schema 1 perf profiles were always `perf record -e cpu-clock` (collectors.profile).
    if prof.get("profiler") == "perf" and prof.get("mode") not in (None, "off"):
        prof.setdefault("event", "cpu-clock")
    d["profiling"] = prof
    for k in ("status", "dataset", "placement", "tma"):
        if d.get(k) is None:
            d.pop(k, None)       # absent in early schema-1 runs: the typed default
    d["schema"] = 2
    return d


def _plan_to_options(d: dict[str, Any], moves: dict[str, str]) -> dict[str, Any]:
    """Each `precision` key of `moves` moved to its `options` key (what the run was asked; a
    resume reuses it), filling options only where it is empty. Dropped from precision, or
    Record.extra would keep it and a resume write it again."""
    plan = d.get("precision")
    if not isinstance(plan, dict) or not any(k in plan for k in moves):
        return d
    plan, options = dict(plan), dict(d.get("options") or {})
    for old, new in moves.items():
        if old in plan:
            value = plan.pop(old)
            if options.get(new) is None:
                options[new] = value
    return {**d, "precision": plan, "options": options}


def _v2_to_v3(d: dict[str, Any]) -> dict[str, Any]:
    """The --precision target, written twice by schema 2 (precision.target and
    options.precision), kept once: in options."""
    return {**_plan_to_options(d, {"target": "precision"}), "schema": 3}


def _v3_to_v4(d: dict[str, Any]) -> dict[str, Any]:
    """The budget, first stage and --on of a --precision run, written twice by schema 3
    (precision.budget_s, .pilot, .on and options.budget_s, .reps, .precision_on), kept once:
    in options."""
    moves = {"budget_s": "budget_s", "pilot": "reps", "on": "precision_on"}
    return {**_plan_to_options(d, moves), "schema": 4}
