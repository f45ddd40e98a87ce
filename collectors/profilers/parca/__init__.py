"""Parca: the run plugin (`run --profile parca`) and its query client (`stallscope parca` is
commands/parca.py).

- `plugin`  the per-rep collector (the window and labels in parca.json, the merged profile
            into profile.pb.gz) and the run plugin's hooks
- `client`  the Parca query client

This package is the run plugin named in collectors/runner/plugins.py: its hooks are
re-exported here from `plugin`. The modules of the package import each other by their full
names (`from collectors.profilers.parca.client import ...`), never through this package,
which imports `plugin` and would close a cycle.
"""
from collectors.profilers.parca.plugin import (PROFILERS, ParcaProfileCollector, ParcaRepCollector,
                                               RUN_FLAGS, manifest_sections, rep_collectors)

__all__ = ["PROFILERS", "ParcaProfileCollector", "ParcaRepCollector", "RUN_FLAGS",
           "manifest_sections", "rep_collectors"]
