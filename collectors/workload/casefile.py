"""One case file, read and checked: the YAML read with the line of every value
(analysis/inputs/yaml_lines.py), so every error names the file and line it comes from, then
checked against the case model's data classes (analysis.inputs.case). docs/cases.md
documents the format; collectors.workload.cases resolves a checked file into a Case.
"""
from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any

from analysis.errors import UserError
from analysis.inputs.case import DatasetSpec, ServerSpec, WorkloadSpec
from analysis.inputs.records import RecordError, convert, field_names, hints
from analysis.inputs.yaml_lines import load as load_yaml
from analysis.inputs.yaml_lines import read_text

TOP_KEYS = {"name", "description", "focus", "server", "dataset", "workload", "sizes",
            "matrix", "notes"}
SECTIONS = {"server": ServerSpec, "dataset": DatasetSpec, "workload": WorkloadSpec}
TOP_FIELDS = {"description": str, "focus": list[str], "notes": list[str]}
# A size's keys that are not case fields: how it stands against the last-level cache
# (collectors/workload/working_set.py)
SIZE_KEYS = ("llc_multiple", "why_in_cache")


class CaseError(UserError):
    """A case that cannot be loaded; the message starts with file:line."""


# ---------------------------------------------------------------- type checking
def coerce(value: Any, t: Any, field_path: str, at: str) -> Any:
    """Check `value` against a data class field type with the one converter
    (analysis.inputs.records.convert, strict), after turning YAML's idioms into what the
    field means: numbers in a command line or a server config are words, and `yes` read
    as true is the word yes again. Errors start with the file:line `at`."""
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin in (typing.Union, types.UnionType) and value is not None:
        origin = typing.get_origin(next(a for a in args if a is not type(None)))
    if origin is list and isinstance(value, list):
        value = [_list_item(v, field_path, at) for v in value]
        if any(isinstance(v, dict) for v in value):
            return value      # a command's {repeat, words}: expanded and checked later
    elif origin is dict and isinstance(value, dict):
        value = {str(k): _config_value(v, f"{field_path}.{k}", at) for k, v in value.items()}
    try:
        return convert(value, t, field_path, strict=True)
    except RecordError as e:
        raise CaseError(f"{at}: {e}") from None


def _list_item(v: Any, field_path: str, at: str) -> Any:
    if field_path == "workload.command" and isinstance(v, dict):
        return v  # {repeat: N, words: [...]}, expanded after the overrides
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise CaseError(f"{at}: {field_path}: expected plain words, got {v!r}")
    return str(v)


def _config_value(v: Any, field_path: str, at: str) -> str:
    # YAML reads `yes` as true; the server wants the word back.
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (str, int, float)):
        return str(v)
    raise CaseError(f"{at}: {field_path}: expected a plain value, got {v!r}")


def field_type(dotted: str) -> Any | None:
    """Type of 'dataset.keys' / 'focus'; None when there is no such field."""
    if "." in dotted:
        section, name = dotted.split(".", 1)
        cls = SECTIONS.get(section)
        if cls is None or name not in field_names(cls):
            return None
        return hints(cls)[name]
    return TOP_FIELDS.get(dotted)


# ---------------------------------------------------------------- loading
class CaseFile:
    """One parsed case file: plain values plus the line of every path."""

    def __init__(self, path: Path):
        self.path = path
        self.data, self.lines = load_yaml(read_text(path, "case file", CaseError), str(path), CaseError)
        if self.data is None:
            raise CaseError(f"{path}:1: empty case file")
        if not isinstance(self.data, dict):
            raise CaseError(f"{path}:1: a case file is a mapping (name:, dataset:, workload: ...)")

    def at(self, *path: Any) -> str:
        for n in range(len(path), -1, -1):
            if path[:n] in self.lines:
                return f"{self.path}:{self.lines[path[:n]]}"
        return f"{self.path}:1"


def _check_document(doc: CaseFile) -> None:
    d = doc.data
    for key in d:
        if key not in TOP_KEYS:
            raise CaseError(f"{doc.at(key)}: unknown key {key!r} (known: {', '.join(sorted(TOP_KEYS))})")
    for key in ("name", "dataset", "workload"):
        if key not in d:
            raise CaseError(f"{doc.at()}: missing {key!r}")
    if not isinstance(d["name"], str) or not d["name"] or "@" in d["name"]:
        raise CaseError(f"{doc.at('name')}: name: expected a word without '@', got {d['name']!r}")
    for section, cls in SECTIONS.items():
        body = d.get(section, {})
        if not isinstance(body, dict):
            raise CaseError(f"{doc.at(section)}: {section}: expected a mapping, got {body!r}")
        known = set(field_names(cls))
        for key, value in body.items():
            if key not in known:
                raise CaseError(f"{doc.at(section, key)}: unknown key {section}.{key} "
                                f"(known: {', '.join(sorted(known))})")
            coerce(value, hints(cls)[key], f"{section}.{key}", doc.at(section, key))
    for key, t in TOP_FIELDS.items():
        if key in d:
            coerce(d[key], t, key, doc.at(key))
    sizes = d.get("sizes", {})
    if not isinstance(sizes, dict):
        raise CaseError(f"{doc.at('sizes')}: sizes: expected a mapping of size name -> overrides")
    for size, over in sizes.items():
        _check_size(doc, over, ("sizes", size))
    matrix = d.get("matrix", {})
    if not isinstance(matrix, dict):
        raise CaseError(f"{doc.at('matrix')}: matrix: expected a mapping of axis -> {{value: overrides}}")
    for axis, choices in matrix.items():
        if not isinstance(choices, dict) or not choices:
            raise CaseError(f"{doc.at('matrix', axis)}: matrix.{axis}: expected a mapping of value -> overrides")
        for value, over in choices.items():
            if any(c in str(value) for c in "@,="):
                raise CaseError(f"{doc.at('matrix', axis, value)}: matrix.{axis}: value {value!r} may not contain @ , =")
            _check_overrides(doc, over, ("matrix", axis, value))


def _check_size(doc: CaseFile, over: Any, path: tuple) -> None:
    """A size: overrides, plus how it stands against the host's last-level cache
    (SIZE_KEYS: `llc_multiple`, the dataset at least that many times the cache, its
    dataset.keys a floor; or `why_in_cache`, why this size may fit in it)."""
    if isinstance(over, dict):
        multiple, why = over.get("llc_multiple"), over.get("why_in_cache")
        if multiple is not None and (isinstance(multiple, bool) or not isinstance(multiple, (int, float))
                                     or multiple <= 0):
            raise CaseError(f"{doc.at(*path, 'llc_multiple')}: llc_multiple: expected a number above 0 "
                            f"(the dataset at least that many times the last-level cache), got {multiple!r}")
        if why is not None and (not isinstance(why, str) or not why.strip()):
            raise CaseError(f"{doc.at(*path, 'why_in_cache')}: why_in_cache: expected a sentence, got {why!r}")
        if multiple is not None and why is not None:
            raise CaseError(f"{doc.at(*path, 'why_in_cache')}: a size has llc_multiple or why_in_cache, "
                            "not both (a multiple of the cache cannot fit in it)")
        over = {k: v for k, v in over.items() if k not in SIZE_KEYS}
    _check_overrides(doc, over, path)


def _check_overrides(doc: CaseFile, over: Any, path: tuple) -> None:
    where = ".".join(map(str, path))
    if over is None:
        return
    if not isinstance(over, dict):
        raise CaseError(f"{doc.at(*path)}: {where}: expected a mapping like {{dataset.keys: 200000}}")
    for key, value in over.items():
        t = field_type(key)
        if t is None:
            raise CaseError(f"{doc.at(*path, key)}: {where}: unknown field {key!r} "
                            f"(use section.field, e.g. dataset.keys, workload.duration_s)")
        coerce(value, t, key, doc.at(*path, key))


def load_doc(path: Path) -> CaseFile:
    doc = CaseFile(path)
    _check_document(doc)
    return doc
