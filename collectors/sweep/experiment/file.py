"""One experiment file (cases/experiments/NAME.yaml), read and checked: a seed's table shape
as one or more sweeps (parts) of a case for two variants, with the seed's own numbers to
put beside ours. Errors name the file and line. Format: docs/experiments.md."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.inputs.option_specs import PAIRING, PAIRINGS, SWEEP_PAIRINGS_V1, file_type, taken_by
from analysis.sweep.seeds import SeedRow
from analysis.inputs.yaml_lines import load as load_yaml
from analysis.inputs.yaml_lines import read_text
from collectors.workload.casefile import CaseError
from collectors.workload.cases import CASES_DIR

EXPERIMENTS_DIR = CASES_DIR / "experiments"
TOP = {"name": str, "title": str, "seed": str, "technique": str, "variants": list,
       "options": dict, "sizes": dict, "parts": list, "notes": list, "default_run_time": str}
PART = {"id": str, "heading": str, "case": str, "axes": list, "set": list, "sizes": dict,
        "metric": str, "seed_rows": list, "lookup": list}
SEED_ROW = {"at": dict, "setup": str, "base": (int, float), "cand": (int, float),
            "gain": (int, float), "unit": str}
# Sweep options an experiment may fix (per size too): the names of analysis.sweep.sweep_options.SweepOptions,
# those shared with `stallscope run` as declared in analysis/inputs/option_specs.py.
OPTIONS = {**{o.name: file_type(o) for o in taken_by("experiment file")}, "skip_unfit": bool}


@dataclass
class Part:
    id: str
    heading: str
    case: str
    axes: list[str]
    sets: list[str] = field(default_factory=list)
    metric: str = ""
    seed_rows: list[SeedRow] = field(default_factory=list)
    sizes: dict[str, dict[str, Any]] = field(default_factory=dict)   # size -> axes/set
    lookup: list[str] = field(default_factory=list)   # the lookup column's function(s)

    def axes_at(self, size: str) -> list[str]:
        return list(self.sizes.get(size, {}).get("axes", self.axes))

    def sets_at(self, size: str) -> list[str]:
        return self.sets + list(self.sizes.get(size, {}).get("set", []))


@dataclass
class Experiment:
    name: str
    title: str
    seed: str
    technique: str
    variants: list[str]
    parts: list[Part]
    path: Path
    options: dict[str, Any] = field(default_factory=dict)
    sizes: dict[str, dict[str, Any]] = field(default_factory=dict)   # size -> options
    notes: list[str] = field(default_factory=list)
    default_run_time: str = ""

    def options_at(self, size: str) -> dict[str, Any]:
        return {**self.options, **self.sizes.get(size, {})}


def experiment_files() -> dict[str, Path]:
    return {p.stem: p for p in sorted(EXPERIMENTS_DIR.glob("*.y*ml"))}


def find(name_or_path: str) -> Path:
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") and p.is_file():
        return p
    files = experiment_files()
    if name_or_path not in files:
        raise CaseError(f"no experiment {name_or_path!r} in {EXPERIMENTS_DIR} (experiments: "
                        f"{', '.join(files) or 'none'}); `stallscope experiment list` shows them")
    return files[name_or_path]


class _Check:
    def __init__(self, where: str, lines: dict[tuple, int]):
        self.where, self.lines = where, lines

    def err(self, path: tuple, msg: str) -> CaseError:
        line = self.lines.get(path) or self.lines.get(path[:-1]) or 1
        return CaseError(f"{self.where}:{line}: {'.'.join(map(str, path))}: {msg}")

    def mapping(self, d: Any, shape: dict[str, Any], path: tuple, required: tuple[str, ...]) -> dict:
        if not isinstance(d, dict):
            raise self.err(path, "expected a mapping")
        for k, v in d.items():
            if k not in shape:
                raise self.err(path + (k,), f"unknown key (known: {', '.join(shape)})")
            t = shape[k]
            # a bool is an int to isinstance: only a bool field takes one
            if isinstance(v, bool) != (t is bool) or not isinstance(v, t):
                raise self.err(path + (k,), f"expected {getattr(t, '__name__', 'a number')}, got {v!r}")
        for k in required:
            if k not in d:
                raise self.err(path, f"missing {k!r}")
        return d

    def strings(self, v: list, path: tuple) -> list[str]:
        for i, s in enumerate(v):
            if not isinstance(s, str):
                raise self.err(path + (i,), f"expected a string, got {s!r}")
        return list(v)

    def options(self, d: dict, path: tuple) -> dict:
        d = dict(self.mapping(d, OPTIONS, path, ()))
        key = PAIRING.name
        if d.get(key) == "interleaved":
            # the sweep's older word (a file has no schema to say whether its "paired" is the
            # old one: paired is the run's, pair or stop)
            d[key] = SWEEP_PAIRINGS_V1[d[key]]
        if key in d and d[key] not in PAIRINGS:
            raise self.err(path + (key,), f"one of {', '.join(PAIRINGS)}, not {d[key]!r}")
        return d


def _part(c: _Check, d: Any, i: int) -> Part:
    path = ("parts", i)
    c.mapping(d, PART, path, ("id", "case", "axes"))
    rows = []
    for j, r in enumerate(d.get("seed_rows", [])):
        rp = path + ("seed_rows", j)
        c.mapping(r, SEED_ROW, rp, ("at", "setup", "gain"))
        rows.append(SeedRow(at={str(k): str(v) for k, v in r["at"].items()}, setup=r["setup"],
                            base=r.get("base"), cand=r.get("cand"), gain=float(r["gain"]),
                            unit=r.get("unit", "")))
    sizes = {}
    for size, s in d.get("sizes", {}).items():
        c.mapping(s, {"axes": list, "set": list}, path + ("sizes", size), ())
        sizes[size] = {k: c.strings(v, path + ("sizes", size, k)) for k, v in s.items()}
    return Part(d["id"], d.get("heading", d["id"]), d["case"], c.strings(d["axes"], path + ("axes",)),
                c.strings(d.get("set", []), path + ("set",)), d.get("metric", ""), rows, sizes,
                c.strings(d.get("lookup", []), path + ("lookup",)))


def load_experiment(name_or_path: str) -> Experiment:
    """The checked experiment; CaseError names the file and line of what is wrong."""
    path = find(name_or_path)
    where = str(path)
    d, lines = load_yaml(read_text(path, "experiment file", CaseError), where, CaseError)
    c = _Check(where, lines)
    c.mapping(d, TOP, (), ("name", "title", "seed", "variants", "parts"))
    if d["name"] != path.stem:
        raise c.err(("name",), f"must be the file's name ({path.stem!r})")
    variants = c.strings(d["variants"], ("variants",))
    if len(variants) != 2:
        raise c.err(("variants",), f"give two variants, the baseline first (got {len(variants)})")
    opts = c.options(d.get("options", {}), ("options",))
    sizes = {k: c.options(v, ("sizes", k)) for k, v in d.get("sizes", {}).items()}
    parts = [_part(c, p, i) for i, p in enumerate(d["parts"])]
    ids = [p.id for p in parts]
    if len(set(ids)) != len(ids):
        raise c.err(("parts",), "two parts have the same id")
    return Experiment(d["name"], d["title"], d["seed"], d.get("technique", ""), variants, parts,
                      path, opts, sizes, c.strings(d.get("notes", []), ("notes",)),
                      d.get("default_run_time", ""))
