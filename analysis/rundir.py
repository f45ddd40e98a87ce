"""The run directory: the one contract between collectors and analysis.

See docs/run-directory.md for the layout. Collectors write it (through
`save_manifest`, which replaces the file atomically so a crash never leaves half a
manifest); analysis only reads it (`load_run`). Old schemas are migrated on load, never
rewritten on disk.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field, asdict
from pathlib import Path
from typing import Any

SCHEMA = 1

REP_STATUSES = ("pending", "running", "ok", "failed")
REP_KINDS = ("throughput", "profile", "warmup", "paired")


class RunDirError(Exception):
    """A run directory that cannot be read; the message names the file."""


@dataclass
class Rep:
    variant: str
    rep: int
    kind: str = "throughput"
    status: str = "pending"
    reason: str | None = None
    started: str | None = None
    finished: str | None = None
    dir: str = ""

    def __post_init__(self) -> None:
        if not self.dir:
            self.dir = f"{self.variant}/{self.rep}"
        if self.kind not in REP_KINDS:
            raise ValueError(f"rep kind {self.kind!r} not one of {REP_KINDS}")
        if self.status not in REP_STATUSES:
            raise ValueError(f"rep status {self.status!r} not one of {REP_STATUSES}")

    @property
    def measured(self) -> bool:
        """True for a finished rep that analysis should use."""
        return self.status == "ok" and self.kind != "warmup"


@dataclass
class Manifest:
    run_id: str
    created: str
    command: list[str]
    case: dict[str, Any]
    size: str
    variants: dict[str, dict[str, Any]]
    host: dict[str, Any] = field(default_factory=dict)
    tools: dict[str, Any] = field(default_factory=dict)
    placement: dict[str, Any] = field(default_factory=dict)
    profiling: dict[str, Any] = field(default_factory=dict)
    tma: dict[str, Any] = field(default_factory=dict)
    paired: dict[str, Any] | None = None
    schedule: list[Rep] = field(default_factory=list)
    schema: int = SCHEMA
    # Added within schema 1 (optional, default empty, so older manifests still load):
    status: dict[str, Any] = field(default_factory=dict)       # run state: running/complete/...
    options: dict[str, Any] = field(default_factory=dict)      # runner options (resume uses them)
    warmup: dict[str, Any] = field(default_factory=dict)       # how warm-up was done
    calibration: dict[str, Any] = field(default_factory=dict)  # variant -> redis-benchmark -n
    load_generator: dict[str, Any] = field(default_factory=dict)  # requested/used tool, path, why
    dataset: dict[str, Any] = field(default_factory=dict)      # snapshot used by every rep
    resumes: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["schedule"] = [asdict(r) for r in self.schedule]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any], path: Path | str = "manifest.json") -> "Manifest":
        d = migrate(dict(d), path)
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(d) - known
        if unknown:
            # Newer writers may add fields; keep reading but do not lose them silently.
            d = {k: v for k, v in d.items() if k in known}
        try:
            d["schedule"] = [Rep(**r) for r in d.get("schedule", [])]
            return cls(**d)
        except (TypeError, ValueError) as e:
            raise RunDirError(f"{path}: invalid manifest: {e}") from None

    def reps(self, variant: str | None = None, kind: str | None = None,
             measured_only: bool = True) -> list[Rep]:
        out = []
        for r in self.schedule:
            if variant is not None and r.variant != variant:
                continue
            if kind is not None and r.kind != kind:
                continue
            if measured_only and not r.measured:
                continue
            out.append(r)
        return out

    def find_rep(self, variant: str, rep: int) -> Rep:
        for r in self.schedule:
            if r.variant == variant and r.rep == rep:
                return r
        raise KeyError(f"no rep {variant}/{rep} in run {self.run_id}")


def migrate(d: dict[str, Any], path: Path | str) -> dict[str, Any]:
    """Bring an older manifest dict up to SCHEMA (pure; the file is not touched)."""
    schema = d.get("schema")
    if schema is None:
        raise RunDirError(f"{path}: not a stallscope manifest (no 'schema' field)")
    if not isinstance(schema, int) or schema > SCHEMA:
        raise RunDirError(
            f"{path}: manifest schema {schema!r} is newer than this stallscope "
            f"understands ({SCHEMA}); upgrade stallscope to read it")
    return d


@dataclass
class RunDir:
    path: Path
    manifest: Manifest

    def rep_dir(self, rep: Rep) -> Path:
        return self.path / rep.dir

    @property
    def variant_names(self) -> list[str]:
        return list(self.manifest.variants)


def load_run(path: str | os.PathLike) -> RunDir:
    p = Path(path)
    mf = p / "manifest.json"
    if not mf.is_file():
        raise RunDirError(f"{mf}: no manifest.json here; is {p} a stallscope run directory?")
    try:
        d = json.loads(mf.read_text())
    except json.JSONDecodeError as e:
        raise RunDirError(f"{mf}:{e.lineno}: malformed JSON: {e.msg}") from None
    return RunDir(p, Manifest.from_json(d, mf))


def save_manifest(run_path: str | os.PathLike, manifest: Manifest) -> None:
    """Write manifest.json atomically (temp file + rename in the same directory)."""
    run_path = Path(run_path)
    run_path.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".manifest.", dir=run_path)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(manifest.to_json(), f, indent=2, sort_keys=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, run_path / "manifest.json")
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
