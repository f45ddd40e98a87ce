"""The run directory: the one contract between collectors and analysis.

See docs/run-directory.md for the layout. Collectors write it (`save_manifest` and
`write_rep_facts` replace files atomically, so a crash never leaves half a file);
analysis only reads it (`load_run`, `RunDir.facts`). Older schemas are migrated on load
(analysis/inputs/manifest.py, repfacts.py), never rewritten on disk by analysis.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.errors import UserError
from analysis.inputs.layout import MANIFEST, REP_JSON
from analysis.inputs.manifest import Manifest, ManifestError, Rep
from analysis.inputs.records import RecordError
from analysis.inputs.repfacts import RepFacts

class RunDirError(UserError):
    """A run directory that cannot be read; the message names the file."""


@dataclass
class RunDir:
    path: Path
    manifest: Manifest

    def rep_dir(self, rep: Rep) -> Path:
        return self.path / rep.dir

    def facts(self, rep: Rep) -> RepFacts:
        """The rep's rep.json (migrated); empty facts when the rep wrote none."""
        return read_rep_facts(self.rep_dir(rep))

    @property
    def variant_names(self) -> list[str]:
        return list(self.manifest.variants)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise RunDirError(f"{path}:{e.lineno}: malformed JSON: {e.msg}") from None


def load_run(path: str | os.PathLike) -> RunDir:
    p = Path(path)
    mf = p / MANIFEST
    if not mf.is_file():
        raise RunDirError(f"{mf}: no manifest.json here; is {p} a stallscope run directory?")
    try:
        return RunDir(p, Manifest.load(read_json(mf), mf))
    except ManifestError as e:
        raise RunDirError(str(e)) from None


def read_rep_facts(rep_dir: Path) -> RepFacts:
    f = Path(rep_dir) / REP_JSON
    if not f.is_file():
        return RepFacts()
    try:
        return RepFacts.load(read_json(f), str(f))
    except RecordError as e:
        raise RunDirError(f"{f}: {e}") from None


def _atomic_write(path: Path, text: str) -> None:
    """Temp file in the same directory + rename: readers see the old or the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: Path, obj: Any) -> None:
    _atomic_write(Path(path), json.dumps(obj, indent=2, default=str) + "\n")


def save_manifest(run_path: str | os.PathLike, manifest: Manifest) -> None:
    """Write manifest.json atomically."""
    write_json(Path(run_path) / MANIFEST, manifest.to_json())


def write_rep_facts(rep_dir: Path, facts: RepFacts) -> None:
    write_json(Path(rep_dir) / REP_JSON, facts.to_json())
