"""Typed records at the seams that keep what they do not know.

A run directory written by a newer stallscope, or by a plugin, may carry fields this
version has no name for. `from_json` fills the declared fields (converting nested records,
lists and dicts of records by their type hints) and keeps every other key in `extra`;
`to_json` writes them back. A resume or a migration therefore never drops data.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from functools import lru_cache
from typing import Any, TypeVar

R = TypeVar("R", bound="Record")


class RecordError(ValueError):
    """A JSON value that does not fit the record's declared shape."""


@dataclasses.dataclass
class Record:
    """Base of every typed record: declared fields + `extra` (unknown keys, kept)."""
    extra: dict[str, Any] = dataclasses.field(default_factory=dict, kw_only=True, repr=False)

    @classmethod
    def from_json(cls: type[R], d: Any, where: str = "") -> R:
        if not isinstance(d, dict):
            raise RecordError(f"{where or cls.__name__}: expected a JSON object, got {type(d).__name__}")
        hints = _hints(cls)
        known, extra = {}, {}
        for k, v in d.items():
            if k in hints and k != "extra":
                known[k] = _convert(v, hints[k], f"{where}.{k}" if where else k)
            else:
                extra[k] = v
        try:
            obj = cls(**known)
        except TypeError as e:   # a required field is missing
            raise RecordError(f"{where or cls.__name__}: {e}") from None
        obj.extra = extra
        return obj

    def to_json(self) -> dict[str, Any]:
        out = {f.name: _dump(getattr(self, f.name)) for f in dataclasses.fields(self)
               if f.name != "extra"}
        for k, v in self.extra.items():
            out.setdefault(k, v)
        return out


@lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _convert(v: Any, hint: Any, where: str) -> Any:
    """JSON value -> the declared type (records, lists/dicts of records, optionals)."""
    if v is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(hint):
            if arg is type(None):
                continue
            if isinstance(arg, type) and issubclass(arg, Record) and isinstance(v, dict):
                return arg.from_json(v, where)
        return v
    if isinstance(hint, type) and issubclass(hint, Record):
        return hint.from_json(v, where)
    if origin is list and isinstance(v, list):
        (arg,) = typing.get_args(hint) or (Any,)
        return [_convert(x, arg, f"{where}[{i}]") for i, x in enumerate(v)]
    if origin is dict and isinstance(v, dict):
        args = typing.get_args(hint)
        arg = args[1] if len(args) == 2 else Any
        return {k: _convert(x, arg, f"{where}.{k}") for k, x in v.items()}
    return v


def _dump(v: Any) -> Any:
    if isinstance(v, Record):
        return v.to_json()
    if isinstance(v, list):
        return [_dump(x) for x in v]
    if isinstance(v, dict):
        return {k: _dump(x) for k, x in v.items()}
    return v
