"""Where and how the run was made, and the commands that reproduce it: copied from the
manifest so the report stands alone."""
from __future__ import annotations

import shlex
from typing import Any

from analysis.compare.results import Reproduce
from analysis.inputs.rundir import RunDir

VARIANT_KEYS = ("source", "version", "commit", "binary_sha256", "make_flags", "config",
                "patches", "spec", "callgraph", "frame_pointers")


def environment(run: RunDir, base: str, cand: str) -> dict[str, Any]:
    m = run.manifest
    return {"host": m.host.to_json(), "tools": dict(m.tools), "placement": m.placement.to_json(),
            "profiling": m.profiling.to_json(), "load_generator": dict(m.load_generator),
            "variants": {v: {k: m.variants[v].to_json().get(k) for k in VARIANT_KEYS}
                         for v in (base, cand)}}


def reproduce(run: RunDir) -> Reproduce:
    cmd = run.manifest.command
    return Reproduce(run=shlex.join(cmd) if cmd else "",
                     report=shlex.join(["stallscope", "compare", str(run.path)]))
