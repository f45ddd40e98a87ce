"""Typed records at the seams that keep what they do not know, and the one JSON -> data
class converter every reader uses.

A run directory written by a newer stallscope, or by a plugin, may carry fields this
version has no name for. `from_json` fills the declared fields (converting nested records,
lists and dicts of records by their type hints) and keeps every other key in `extra`;
`to_json` writes them back. A resume or a migration therefore never drops data.

`convert(value, hint)` is that conversion on its own: JSON values into any data class
(a `Record` keeps unknown keys, a plain data class such as results.json's model ignores
them: nothing rewrites those files), lists, dicts and optionals of them. With
`strict=True` it also checks every scalar against its declared type (an int where a float
is wanted is widened), which is how a case file's values are checked
(collectors/workload/casefile.py adds the file and line). A data class may name fields it
once called otherwise (`RENAMED = {"freq_hz": "frequency_hz"}`): an old file's key is read as
the new field.
"""
from __future__ import annotations


import dataclasses
import types
import typing
from functools import lru_cache
from typing import Any, ClassVar, TypeVar

from analysis.errors import UserError

R = TypeVar("R", bound="Record")
T = TypeVar("T")


class RecordError(UserError, ValueError):
    """A JSON value that does not fit the record's declared shape."""


@dataclasses.dataclass
class Record:
    """Base of every typed record: declared fields + `extra` (unknown keys, kept)."""
    extra: dict[str, Any] = dataclasses.field(default_factory=dict, kw_only=True, repr=False)
    # Fields only some writers set (paired.json's "mode" in one of its two modes): left out
    # of to_json while None, so each writer's file keeps exactly its own keys.
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def from_json(cls: type[R], d: Any, where: str = "") -> R:
        return _dataclass(cls, d, where, False)

    def to_json(self) -> dict[str, Any]:
        out = {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)
               if f.name != "extra"
               and not (f.name in self.OMIT_IF_NONE and getattr(self, f.name) is None)}
        for k, v in self.extra.items():
            out.setdefault(k, v)
        return out


def field_names(cls: type) -> list[str]:
    """The declared fields of a data class (a Record's `extra` is not one)."""
    return [f.name for f in dataclasses.fields(cls) if f.name != "extra"]


@lru_cache(maxsize=None)
def hints(cls: type) -> dict[str, Any]:
    """The resolved type hints of a class (cached: every record read asks)."""
    return typing.get_type_hints(cls)


def from_json(cls: type[T], d: Any, where: str = "") -> T:
    """JSON object -> `cls` (any data class): the one converter's entry for a document."""
    return convert(d, cls, where)


def convert(v: Any, hint: Any, where: str = "", strict: bool = False) -> Any:
    """JSON value -> the declared type (data classes, lists/dicts of them, optionals).
    Lenient by default (a value of another type is kept as it is: old files stay
    readable); `strict` raises RecordError naming `where` for a value of the wrong type."""
    if hint is Any or (not strict and hint in _SCALAR_TYPES):   # lenient: kept as it is
        return v
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if v is None and type(None) in args:
            return None
        kinds = [a for a in args if a is not type(None)]
        if len(kinds) == 1 and (strict or not dataclasses.is_dataclass(kinds[0])
                                or isinstance(v, dict)):
            return convert(v, kinds[0], where, strict)
        for arg in kinds:
            if dataclasses.is_dataclass(arg) and isinstance(v, dict):
                return _dataclass(arg, v, where, strict)
            if not strict or _scalar_fits(v, arg):
                return _scalar(v, arg, where, strict) if isinstance(arg, type) else v
        raise RecordError(f"{where}: expected {type_name(hint)}, got {v!r}")
    if v is None and not strict:
        return None
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _dataclass(hint, v, where, strict)
    if origin in (list, tuple):
        if not isinstance(v, list):
            return _mismatch(v, "a list", where, strict)
        (arg, *_) = args or (Any,)
        return [convert(x, arg, f"{where}[{i}]", strict) for i, x in enumerate(v)]
    if origin is dict:
        if not isinstance(v, dict):
            return _mismatch(v, "a mapping", where, strict)
        arg = args[1] if len(args) == 2 else Any
        return {k: convert(x, arg, f"{where}.{k}", strict) for k, x in v.items()}
    if isinstance(hint, type):
        return _scalar(v, hint, where, strict)
    return v


def _dataclass(cls: Any, d: Any, where: str, strict: bool) -> Any:
    if not isinstance(d, dict):
        raise RecordError(f"{where or cls.__name__}: expected a JSON object, got {type(d).__name__}")
    h = hints(cls)
    names = set(field_names(cls))
    # a field read under its older name (RENAMED: old -> new) unless the new one is there too
    renamed = {old: new for old, new in getattr(cls, "RENAMED", {}).items() if new not in d}
    known, extra = {}, {}
    for k, v in d.items():
        k = renamed.get(k, k)
        if k in names:
            known[k] = convert(v, h[k], f"{where}.{k}" if where else k, strict)
        else:
            extra[k] = v
    try:
        obj = cls(**known)
    except TypeError as e:   # a required field is missing
        raise RecordError(f"{where or cls.__name__}: {e}") from None
    if isinstance(obj, Record):
        obj.extra = extra
    return obj


_SCALAR_TYPES = (int, float, bool, str)
_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def type_name(t: Any) -> str:
    """A type as an error message says it: "an integer", "a string", "list[str]"."""
    return _NAMES.get(t, str(t).replace("typing.", ""))


def _scalar_fits(v: Any, t: Any) -> bool:
    if t is bool:
        return isinstance(v, bool)
    if t is int:
        return isinstance(v, int) and not isinstance(v, bool)
    if t is float:
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return isinstance(v, t) if isinstance(t, type) else True


def _scalar(v: Any, t: type, where: str, strict: bool) -> Any:
    if not strict:
        return v
    if not _scalar_fits(v, t):
        raise RecordError(f"{where}: expected {type_name(t)}, got {v!r}")
    return float(v) if t is float else v


def _mismatch(v: Any, want: str, where: str, strict: bool) -> Any:
    if strict:
        raise RecordError(f"{where}: expected {want}, got {v!r}")
    return v


def plain(x: Any) -> Any:
    """A value as JSON data: a Record as its own to_json (its fields and what it kept in
    `extra`), any other data class field by field (dataclasses.asdict, but records keep
    their shape), lists and dicts of them."""
    if isinstance(x, Record):
        return x.to_json()
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: plain(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    return x
