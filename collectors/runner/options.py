"""What a run was asked to do: RunOptions (saved as the manifest's "options", so
--resume runs the rest the same way; defined with the run directory's records in
analysis/inputs/run_options.py, the manifest being what keeps it; the options every command
shares, their parsers and rules are declared in analysis/inputs/option_specs.py), and
RunError for a run that cannot start."""
from __future__ import annotations

from analysis.errors import UserError
# The run's options and their defaults, named here too: run modules import them from here.
from analysis.inputs.run_options import (DEFAULT_FREQ_HZ, PAIRED_WINDOW_S,  # noqa: F401
                                         SEPARATE_PROFILE_REPS,
                                         PAIRED_WINDOWS, RunOptions)

RUNS_DIR = "runs"


class RunError(UserError):
    """A problem with the run as a whole (bad options, unusable variants); exit status 2."""
