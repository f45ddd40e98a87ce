"""The pull-request config file (docs/pr.md): which cases a labelled PR is measured on, at
which size and precision. Read when the workflow is rendered (`stallscope pr github
--config FILE`); errors name the file and line.

    cases: [mset-50keys, mget-100keys]   # case names (cases/*.yaml) or case files
    size: default                        # small | default | large
    precision: 2%                        # --precision of each run (omit: fixed --reps)
    budget: 30m                          # --budget of each run, with precision
    reps: 8                              # --reps (the first stage with precision)
    pairing: auto                        # auto (default) | paired | unpaired, as `stallscope run --pairing`
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.errors import UserError
from analysis.inputs.option_specs import (BUDGET, PAIRING, PAIRINGS, PR_PRECISION, PRECISION, REPS, SIZE, SIZES,
                                          budget_for, format_precision, precision_problem)
from analysis.inputs.yaml_lines import parse, read_text

# the keys of the options it shares with `stallscope run` are declared in option_specs
KEYS = ("cases", *(o.key for o in (SIZE, PRECISION, BUDGET, REPS, PAIRING)))
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
    pairing: str = PAIRING.default    # --pairing of each run: the run's default, auto
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
    root = parse(read_text(path, "PR config", PrConfigError), where, PrConfigError)
    if root is None or not isinstance(root.value, dict):
        raise PrConfigError(f"{where}:1: the PR config must be a mapping with at least 'cases:' (docs/pr.md)")
    fields: dict[str, Any] = {}
    for key, node in root.value.items():
        if key not in KEYS:
            raise PrConfigError(f"{where}:{node.key_line}: unknown key {key!r} (known: {', '.join(KEYS)})")
        fields[key] = _value(key, node.plain(), f"{where}:{node.line}")
    if "cases" not in fields:
        raise PrConfigError(f"{where}:1: no 'cases:' list (e.g. cases: [mset-50keys])")
    problem = precision_problem(fields.get("precision", PrConfig.precision), fields.get("budget"),
                                fields.get("reps"), keys=True)
    if problem:
        # the line of the key at fault: a budget without a precision, else a first stage too short
        # (its reps:, or the precision that asked for one when reps: is not written)
        culprit = BUDGET.key if problem.startswith(BUDGET.key) else REPS.key
        line = next((root.value[k].key_line for k in (culprit, PRECISION.key) if k in root.value), 1)
        raise PrConfigError(f"{where}:{line}: {problem}")
    return PrConfig(path=where, **fields)


def _value(key: str, value: Any, at: str) -> Any:
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
    if key in (SIZE.key, PAIRING.key):
        allowed = SIZES if key == SIZE.key else PAIRINGS
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
