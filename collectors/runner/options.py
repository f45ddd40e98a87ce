"""What a run was asked to do: RunOptions (saved as the manifest's "options", so
--resume runs the rest the same way; defined with the run directory's records in
analysis/inputs/run_options.py, the manifest being what keeps it), the parsers of its
flags' values, and RunError for a run that cannot start."""
from __future__ import annotations

import argparse
import re

# The run's options and their defaults, named here too: every run module imports them from here.
from analysis.errors import UserError
from analysis.inputs.run_options import (DEFAULT_FREQ_HZ, PAIRED_WINDOW_S,  # noqa: F401
                                         SEPARATE_PROFILE_REPS,
                                         PAIRED_WINDOWS, RunOptions)

RUNS_DIR = "runs"
PRECISION_PILOT = 8      # first-stage paired reps of a --precision run (docs/statistics.md)
DEFAULT_BUDGET_S = 1800  # --precision without --budget: 30 minutes


class RunError(UserError):
    """A problem with the run as a whole (bad options, unusable variants); exit status 2."""


def parse_duration(text: str) -> float:
    """'30m', '1h', '90s', '1h30m' or plain seconds -> seconds (ValueError otherwise)."""
    t = str(text).strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", t):
        return float(t)
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", t)
    if not t or parts is None or not any(parts.groups()):
        raise ValueError(f"duration {text!r}: give e.g. 30m, 1h, 90s or 1h30m")
    h, m, s = (int(x or 0) for x in parts.groups())
    return float(h * 3600 + m * 60 + s)


def parse_precision(text: str) -> float:
    """'2%' or '0.02' -> 0.02 (ValueError outside (0, 50%))."""
    t = str(text).strip()
    try:
        v = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise ValueError(f"precision {text!r}: give a percentage like 2% (or a fraction like 0.02)") from None
    if not 0 < v < 0.5:
        raise ValueError(f"precision {text!r}: must be between 0% and 50%")
    return v


def precision_type(text: str) -> float:
    """parse_precision for argparse (--precision of run, sweep and experiment)."""
    try:
        return parse_precision(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def duration_type(text: str) -> float:
    """parse_duration for argparse (--budget)."""
    try:
        return parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
