"""One case file, read and checked: the YAML composed into PyYAML's node tree first, so
every error names the file and line it comes from, then turned into plain values and
checked against the case model's data classes (analysis.inputs.case). docs/cases.md
documents the format; collectors.workload.cases resolves a checked file into a Case.
"""
from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any

import yaml

from analysis.errors import UserError
from analysis.inputs.case import DatasetSpec, ServerSpec, WorkloadSpec
from analysis.inputs.records import RecordError, convert, field_names, hints

TOP_KEYS = {"name", "description", "focus", "server", "dataset", "workload", "sizes",
            "matrix", "notes"}
SECTIONS = {"server": ServerSpec, "dataset": DatasetSpec, "workload": WorkloadSpec}
TOP_FIELDS = {"description": str, "focus": list[str], "notes": list[str]}


class CaseError(UserError):
    """A case that cannot be loaded; the message starts with file:line."""


# ---------------------------------------------------------------- YAML with line numbers
Path_ = tuple  # a path into the document: ("dataset", "keys")


def _compose(text: str, where: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else "?"
        raise CaseError(f"{where}:{line}: malformed YAML: {e.problem or e}") from None
    except yaml.YAMLError as e:
        raise CaseError(f"{where}: malformed YAML: {e}") from None


def _plain(node: yaml.Node, path: Path_, lines: dict[Path_, int], where: str) -> Any:
    """Node tree -> plain Python values, remembering the line of every path."""
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for knode, vnode in node.value:
            key = _scalar(knode, where)
            if not isinstance(key, (str, int, float)):
                raise CaseError(f"{where}:{knode.start_mark.line + 1}: mapping keys must be plain words")
            key = str(key)
            if key in out:
                raise CaseError(f"{where}:{knode.start_mark.line + 1}: duplicate key {key!r}")
            out[key] = _plain(vnode, path + (key,), lines, where)
            lines[path + (key,)] = knode.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_plain(n, path + (i,), lines, where) for i, n in enumerate(node.value)]
    return _scalar(node, where)


def read_yaml_lines(text: str, where: str) -> tuple[Any, dict[Path_, int]]:
    """A YAML document as plain values, with the line of every path in it (for file:line
    errors); (None, {}) for an empty document. CaseError on malformed YAML."""
    lines: dict[Path_, int] = {}
    node = _compose(text, where)
    return (_plain(node, (), lines, where) if node is not None else None), lines


def _scalar(node: yaml.Node, where: str) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        raise CaseError(f"{where}:{node.start_mark.line + 1}: expected a plain value here")
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


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
        try:
            text = path.read_text()
        except OSError as e:
            raise CaseError(f"{path}: cannot read: {e.strerror}") from None
        self.data, self.lines = read_yaml_lines(text, str(path))
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
        _check_overrides(doc, over, ("sizes", size))
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


def _check_overrides(doc: CaseFile, over: Any, path: Path_) -> None:
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
