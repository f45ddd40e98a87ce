"""The one error of the comparison stage."""
from __future__ import annotations


class CompareError(Exception):
    """A run directory that cannot be compared; the message names the file and the fix."""
