"""Where and how the run was made, and the commands that reproduce it: copied from the
manifest so the report stands alone."""
from __future__ import annotations

import shlex
from dataclasses import fields

from analysis.compare.results import BuildFacts, Environment, Reproduce
from analysis.inputs.manifest import Variant
from analysis.inputs.rundir import RunDir

def environment(run: RunDir, base: str, cand: str) -> Environment:
    m = run.manifest
    return Environment(m.host, dict(m.tools), m.placement, m.profiling, m.load_generator,
                       {v: _build(m.variants[v]) for v in (base, cand)})


def _build(v: Variant) -> BuildFacts:
    return BuildFacts(**{f.name: getattr(v, f.name) for f in fields(BuildFacts)})


def reproduce(run: RunDir) -> Reproduce:
    cmd = run.manifest.command
    return Reproduce(run=shlex.join(cmd) if cmd else "",
                     report=shlex.join(["stallscope", "compare", str(run.path)]))
