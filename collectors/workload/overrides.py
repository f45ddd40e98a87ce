"""`--set FIELD=VALUE`: one case field changed from the command line, type-checked like a
case file.

FIELD is what a case file's `sizes`/`matrix` overrides name (`dataset.keys`,
`workload.pipeline`, `server.io_threads`, `focus`), or `server.config.NAME` for one
server setting. VALUE is read by the field's type: integers take a decimal K/M/G suffix
(`100K`, `1M`, `2.5M`: the matrix labels' meaning), booleans YAML's words (true/false,
yes/no, on/off), lists a YAML flow list (`[GET, "key:__rand_int__"]`) or comma-separated
words, `server.config` a YAML flow mapping. collectors.workload.cases applies them after
the size knob, so an explicit value wins over `--size small`.
"""
from __future__ import annotations

import re
import types
import typing
from typing import Any

import yaml

from collectors.workload.casefile import CaseError, field_type, coerce

CONFIG_PREFIX = "server.config."
_COUNT = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([KMG])$", re.IGNORECASE)
_MULT = {"K": 10**3, "M": 10**6, "G": 10**9}


def parse_count(text: str) -> int | None:
    """'200K' -> 200000, '2.5M' -> 2500000, '16' -> 16; None when it is not a count."""
    t = text.strip().replace("_", "")
    if re.fullmatch(r"[+-]?[0-9]+", t):
        return int(t)
    m = _COUNT.match(t)
    if not m:
        return None
    value = float(m.group(1)) * _MULT[m.group(2).upper()]
    if value != int(value):
        return None
    return int(value)


def _yaml(text: str, where: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise CaseError(f"{where}: cannot read the value as YAML: {str(e).splitlines()[0]}") from None


def _raw_value(text: str, t: Any, where: str) -> Any:
    """The command-line text as the plain value the field's type expects (then coerce()
    checks it exactly as it checks a case file's value)."""
    base = t
    if typing.get_origin(t) in (typing.Union, types.UnionType):
        if text.strip().lower() in ("null", "none", "~"):
            return None
        base = next(a for a in typing.get_args(t) if a is not type(None))
    origin = typing.get_origin(base)
    if base is int:
        n = parse_count(text)
        return n if n is not None else text
    if base is float:
        try:
            return float(text)
        except ValueError:
            n = parse_count(text)
            return n if n is not None else text
    if base is bool:
        v = _yaml(text, where)
        return v if isinstance(v, bool) else text
    if base is str:
        return text
    if origin is list:
        if text.strip().startswith("["):
            return _yaml(text, where)
        return [w for w in text.split(",") if w != ""]
    if origin is dict:
        v = _yaml(text, where)
        return v if v is not None else {}
    return text


def parse_set(text: str) -> tuple[str, Any]:
    """'workload.pipeline=16' -> ('workload.pipeline', 16). Raises CaseError naming the
    option, the field and what it expected."""
    where = f"--set {text}"
    field, eq, raw = text.partition("=")
    field = field.strip()
    if not eq or not field:
        raise CaseError(f"{where}: expected FIELD=VALUE, e.g. workload.pipeline=16 or dataset.keys=1M")
    if field.startswith(CONFIG_PREFIX):
        name = field[len(CONFIG_PREFIX):]
        if not name:
            raise CaseError(f"{where}: name the server setting: server.config.NAME=VALUE")
        return field, coerce({name: raw}, dict[str, str], "server.config", where)[name]
    t = field_type(field)
    if t is None or field in ("name",):
        raise CaseError(f"{where}: unknown field {field!r} (use section.field as in a case file's "
                        "sizes: dataset.keys, workload.pipeline, server.io_threads ..., "
                        "or server.config.NAME)")
    return field, coerce(_raw_value(raw, t, where), t, field, where)


def parse_sets(texts: list[str]) -> dict[str, Any]:
    """Every --set, in order (a later one of the same field wins)."""
    out: dict[str, Any] = {}
    for t in texts:
        k, v = parse_set(t)
        out.pop(k, None)
        out[k] = v
    return out


def show(value: Any) -> str:
    """A value as --set takes it back (for commands and labels)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, dict):
        return yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
    return str(value)
