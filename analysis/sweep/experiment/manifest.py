"""experiment.json: what an experiment directory is (the experiment file it came from, its
size and variants), its parts (each a sweep directory, with the seed's rows beside it) and
its state; written by collectors.sweep (experiment.parts, merge) and the experiment
commands (commands/experiment.py, commands/experiment_fanout.py), and read by analysis.sweep.experiment.report (docs/experiments.md). Unknown fields
are kept (Record.extra), as in sweep.json. Run over many runners, it adds "fanout", an
`ExperimentFanout` (analysis/sweep/fanout_entry.py; docs/experiments.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from analysis.inputs.layout import EXPERIMENT_JSON
from analysis.inputs.manifest import Resume
from analysis.inputs.records import Record, RecordError
from analysis.inputs.rundir import write_json
from analysis.sweep.fanout_entry import ExperimentIdentity, FanoutEntry
from analysis.sweep.sweep_manifest import SweepError, SweepManifest, read_dir_json
from analysis.sweep.seeds import SeedRow

SCHEMA = 1


@dataclass
class ExperimentPart(Record):
    """A part: one sweep (directory `sweep`, named by the part's id) and the seed's rows."""
    id: str
    heading: str = ""
    case: str = ""
    sweep: str = ""                  # the part's sweep directory, relative to the experiment's
    metric: str = ""
    seed_rows: list[SeedRow] = field(default_factory=list)


@dataclass
class ExperimentManifest(Record):
    # Written only by some runs: a resumed experiment's resumes, a fanned-out one's fanout
    OMIT_IF_NONE = frozenset({"resumes", "fanout"})
    schema: int = SCHEMA
    name: str = ""
    title: str = ""
    seed: str = ""                   # the PR or post the experiment reproduces
    technique: str = ""
    file: str = ""                   # the experiment file (cases/experiments/NAME.yaml)
    size: str = ""
    variants: list[str] = field(default_factory=list)
    created: str = ""
    command: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    parts: list[ExperimentPart] = field(default_factory=list)
    only: list[str] = field(default_factory=list)   # --only: the rows run
    status: str = "running"          # running | complete | incomplete | interrupted
    resumes: list[Resume] | None = None
    # over many runners (docs/sweeps.md): the plan's identity, the point, the whole experiment
    fanout: ExperimentFanout | None = None


@dataclass
class ExperimentWhole(Record):
    """What the experiment run whole would have written first, carried by each point run
    for --merge: its id, experiment.json and every part's sweep.json (every point pending)."""
    id: str = ""
    experiment: ExperimentManifest = field(default_factory=ExperimentManifest)
    parts: dict[str, SweepManifest] = field(default_factory=dict)   # part id -> its sweep.json


@dataclass
class ExperimentFanout(FanoutEntry):
    """experiment.json "fanout" (FanoutEntry): the experiment's identity; a point run's
    `whole` is an ExperimentWhole; `point` is PART.ID."""
    identity: ExperimentIdentity | None = None
    whole: ExperimentWhole | None = None


def load_experiment_dir(exp_dir: str | Path) -> ExperimentManifest:
    path, d = read_dir_json(exp_dir, EXPERIMENT_JSON, "experiment", "parts")
    if not isinstance(d["parts"], list):
        raise SweepError(f"{path}: not a stallscope experiment ('parts' is not a list)")
    try:
        return ExperimentManifest.from_json(d)
    except RecordError as e:
        raise SweepError(f"{path}: invalid experiment.json: {e}") from None


def save_experiment_dir(exp_dir: str | Path, m: ExperimentManifest) -> None:
    """experiment.json, replaced atomically."""
    write_json(Path(exp_dir) / EXPERIMENT_JSON, m.to_json())
