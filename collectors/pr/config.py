"""The pull-request config file (docs/pr.md): which cases a labelled PR is measured on, at
which size and precision. Read when the workflow is rendered (`stallscope pr github
--config FILE`); errors name the file and line.

    cases: [mset-50keys, mget-100keys]   # case names (cases/*.yaml) or case files
    size: default                        # small | default | large
    precision: 2%                        # --precision of each run (omit: fixed --reps)
    budget: 30m                          # --budget of each run, with precision
    reps: 8                              # --reps (the first stage with precision)
    pairing: paired                      # paired (default) | auto | unpaired
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from analysis.errors import UserError
from analysis.inputs.option_specs import (BUDGET, PR_PRECISION, PRECISION, REPS, SIZE, SIZES, budget_for,
                                          format_precision, precision_problem)

# the keys of the options it shares with `stallscope run` are declared in option_specs
KEYS = ("cases", *(o.key for o in (SIZE, PRECISION, BUDGET, REPS)), "pairing")
PAIRINGS = ("paired", "auto", "unpaired")
DEFAULT_CASES = ("mset-50keys",)


class PrConfigError(UserError):
    """A config file that cannot be used; exit status 2."""


@dataclass(frozen=True)
class PrConfig:
    cases: tuple[str, ...] = DEFAULT_CASES
    size: str = SIZE.default
    precision: str | None = format_precision(PR_PRECISION)   # as written: it goes into the workflow as is
    budget: str | None = None         # None with a precision: the run's default budget
    reps: int | None = None
    pairing: str = "paired"           # --paired, or auto (the run's default) / --unpaired
    path: str | None = None           # the file it came from (None: the defaults)

    def __post_init__(self) -> None:
        object.__setattr__(self, "budget", budget_for(self.precision, self.budget))

    def budget_minutes(self) -> int:
        return int(BUDGET.parse(self.budget) // 60) if self.precision and self.budget else 0


def load(path: str | Path | None, check_case=None) -> PrConfig:
    """The config of `path` (None: the defaults). `check_case(name, size)` raises for a
    case name this stallscope does not know (case files are checked on the runner)."""
    if path is None:
        cfg = PrConfig()
    else:
        cfg = _read(Path(path))
    if check_case is not None:
        for c in cfg.cases:
            if not _is_path(c):
                check_case(c, cfg.size)
    return cfg


def _is_path(case: str) -> bool:
    return "/" in case or case.endswith((".yaml", ".yml"))


def _read(path: Path) -> PrConfig:
    where = str(path)
    try:
        root = yaml.compose(path.read_text(), Loader=yaml.SafeLoader)
    except OSError as e:
        raise PrConfigError(f"{where}: cannot read the PR config: {e.strerror}") from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise PrConfigError(f"{where}:{mark.line + 1 if mark else '?'}: malformed YAML: {e.problem or e}") from None
    if not isinstance(root, yaml.MappingNode):
        raise PrConfigError(f"{where}:1: the PR config must be a mapping with at least 'cases:' (docs/pr.md)")
    fields: dict[str, Any] = {}
    for k, v in root.value:
        line = k.start_mark.line + 1
        if k.value not in KEYS:
            raise PrConfigError(f"{where}:{line}: unknown key {k.value!r} (known: {', '.join(KEYS)})")
        if k.value in fields:
            raise PrConfigError(f"{where}:{line}: duplicate key {k.value!r}")
        fields[k.value] = _value(k.value, v, f"{where}:{v.start_mark.line + 1}")
    if "cases" not in fields:
        raise PrConfigError(f"{where}:1: no 'cases:' list (e.g. cases: [mset-50keys])")
    problem = precision_problem(fields.get("precision", PrConfig.precision), fields.get("budget"),
                                fields.get("reps"), keys=True)
    if problem:
        raise PrConfigError(f"{where}: {problem}")
    return PrConfig(path=where, **fields)


def _value(key: str, node: yaml.Node, at: str) -> Any:
    value = yaml.SafeLoader("").construct_object(node, deep=True)
    if key == "cases":
        cases = [value] if isinstance(value, str) else value
        if not isinstance(cases, list) or not cases or not all(isinstance(c, str) and c for c in cases):
            raise PrConfigError(f"{at}: cases must be a non-empty list of case names or files")
        bad = [c for c in cases if not re.fullmatch(r"[A-Za-z0-9_.,=@/+-]+", c)]
        if bad:
            raise PrConfigError(f"{at}: case {bad[0]!r}: letters, digits and _ . , = @ / + - only")
        return tuple(cases)
    if value is None and key in ("precision", "budget"):
        return None                     # `precision:` left empty: fixed reps
    if key in ("size", "pairing"):
        allowed = SIZES if key == "size" else PAIRINGS
        if value not in allowed:
            raise PrConfigError(f"{at}: {key} must be one of {', '.join(allowed)}, not {value!r}")
        return value
    if key == "reps":
        if not isinstance(value, int) or isinstance(value, bool) or value < 2:
            raise PrConfigError(f"{at}: reps must be a whole number of at least 2, not {value!r}")
        return value
    try:
        (PRECISION if key == PRECISION.key else BUDGET).parse(str(value))
    except ValueError as e:
        raise PrConfigError(f"{at}: {e}") from None
    return str(value)
