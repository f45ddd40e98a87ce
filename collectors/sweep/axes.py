"""Sweep axes and their points.

An axis is either one of the case's `matrix` axes (`--axis keys` for all its values,
`--axis keys=1M,10M` for some), or any case field (`--axis dataset.keys=100K,1M`,
`--axis workload.pipeline=1,16`, `--axis server.config.NAME=0,16`), whose values are typed
and checked like `--set` (collectors.workload.overrides). Points are the cartesian product
of the axes, the first axis varying slowest.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from analysis.sweep.sweep_manifest import PointIdentity
from collectors.workload.casefile import CaseError
from collectors.workload.overrides import parse_count, parse_set


@dataclass
class AxisValue:
    label: str
    matrix: str | None = None                           # matrix axes: the value's name
    sets: dict[str, Any] = field(default_factory=dict)  # field axes: FIELD -> typed value
    x: float | None = None                              # the value as a number, if it is one


@dataclass
class Axis:
    name: str
    kind: str                        # matrix | field
    values: list[AxisValue]


@dataclass
class PointSpec(PointIdentity):
    """A point as planned: its identity (case: name@axis=value,... as `stallscope run`
    takes it) and every --set it runs with."""
    sets: dict[str, Any] = field(default_factory=dict)


def _number(v: Any, label: str) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    n = parse_count(label)
    return float(n) if n is not None else None


def parse_axis(text: str, matrix: dict[str, dict[str, Any]], case_name: str) -> Axis:
    """`keys`, `keys=1M,10M` (matrix) or `dataset.keys=100K,1M` (a field). CaseError names
    the option and what would be right."""
    name, eq, rest = text.partition("=")
    name = name.strip()
    labels = [v.strip() for v in rest.split(",")] if eq else []
    where = f"--axis {text}"
    if eq and (not labels or "" in labels):
        raise CaseError(f"{where}: empty value; give NAME=v1,v2,...")
    if len(set(labels)) != len(labels):
        raise CaseError(f"{where}: a value is given twice")
    if "." in name:
        if not labels:
            raise CaseError(f"{where}: a field axis needs its values: {name}=v1,v2,...")
        values = []
        for label in labels:
            try:
                _, typed = parse_set(f"{name}={label}")
            except CaseError as e:     # the message names --set; the user wrote --axis
                raise CaseError(str(e).replace(f"--set {name}={label}", where, 1)) from None
            values.append(AxisValue(label, sets={name: typed}, x=_number(typed, label)))
        return Axis(name, "field", values)
    if name not in matrix:
        raise CaseError(f"{where}: {case_name} has no matrix axis {name!r} (axes: "
                        f"{', '.join(matrix) or 'none'}); a case field is written section.field, "
                        "e.g. --axis dataset.keys=100K,1M")
    known = [str(v) for v in matrix[name]]
    for label in labels:
        if label not in known:
            raise CaseError(f"{where}: matrix.{name} of {case_name} has no value {label!r} "
                            f"(values: {', '.join(known)})")
    return Axis(name, "matrix", [AxisValue(v, matrix=v, x=_number(None, v)) for v in (labels or known)])


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-")


def _short(axis: Axis) -> str:
    return axis.name.rsplit(".", 1)[-1]


def points(case: str, axes: list[Axis], sets: dict[str, Any]) -> list[PointSpec]:
    """Every point of the sweep: the cartesian product of the axes, first axis slowest."""
    base, _, fixed = case.partition("@")
    fixed_choices = dict(p.split("=", 1) for p in fixed.split(",") if "=" in p)
    for a in axes:
        if a.kind == "matrix" and a.name in fixed_choices:
            raise CaseError(f"--axis {a.name}: {case} already fixes matrix axis {a.name}")
        for v in a.values:
            clash = set(v.sets) & set(sets)
            if clash:
                raise CaseError(f"--axis {a.name} and --set {sorted(clash)[0]} set the same field")
    names = [a.name for a in axes]
    if len(set(names)) != len(names):
        raise CaseError(f"--axis {names[0]}: an axis is given twice")
    out = []
    for i, combo in enumerate(itertools.product(*(a.values for a in axes)) if axes else [()]):
        choices = dict(fixed_choices)
        psets = dict(sets)
        for a, v in zip(axes, combo):
            if v.matrix is not None:
                choices[a.name] = v.matrix
            psets.update(v.sets)
        spec = base + ("@" + ",".join(f"{k}={v}" for k, v in choices.items()) if choices else "")
        labels = {a.name: v.label for a, v in zip(axes, combo)}
        pid = f"p{i + 1:02d}" + "".join(f"-{_slug(_short(a))}-{_slug(v.label)}" for a, v in zip(axes, combo))
        out.append(PointSpec(i + 1, pid, labels, {a.name: v.x for a, v in zip(axes, combo)}, spec, psets))
    return out


def matrix_axes(matrix: dict[str, dict[str, Any]], fixed: str) -> list[str]:
    """The case's matrix axes a sweep with no --axis runs over (those not fixed by @)."""
    taken = {p.split("=", 1)[0] for p in fixed.split(",") if "=" in p}
    return [a for a in matrix if a not in taken]
