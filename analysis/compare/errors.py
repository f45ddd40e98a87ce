"""The one error of the comparison stage."""
from __future__ import annotations

from analysis.errors import UserError


class CompareError(UserError):
    """A run directory that cannot be compared; the message names the file and the fix."""
