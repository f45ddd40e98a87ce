"""The full data of a job's series, every run: what a trend page links beside its
downsampled plots (JSON), and what `stallscope history series` prints (CSV or JSON).

CSV: one line per stored point, FIELDS. JSON, by columns (compact, and fast to write: a
thousand runs of forty series is eighty thousand points):

    {"job": ..., "runs": {"run": [...], "run_id": [...], "started_at": [...],
                          "base_commit": [...], "cand_commit": [...], "report": [...]},
     "series": {NAME: {"unit": ..., "higher_is_better": ...,
                       "cand": {"run": [...], "value": [...], "low": [...], "high": [...],
                                "n": [...], "values": [[...], ...]},      # values: the reps,
                       "base": {...}}}}                                  # when loaded

`run` is the store's run id; a series' lists are in run order (oldest first).
"""
from __future__ import annotations

import csv
import json
from typing import IO

FIELDS = ("job", "series", "variant", "run", "run_id", "started_at", "commit", "value", "low", "high",
          "n", "unit", "higher_is_better", "report")


def _names(by_variant: dict[str, dict[str, list]], names: list[str] | None) -> list[str]:
    return names if names is not None else sorted({s for v in by_variant.values() for s in v})


def write_csv(fh: IO[str], job: str, by_variant: dict[str, dict[str, list]],
              names: list[str] | None = None) -> int:
    """by_variant: variant role -> HistoryStore.series(job, role); series in `names` order
    (default: sorted), then role, then run. The number of points written."""
    w = csv.writer(fh, lineterminator="\n")
    w.writerow(FIELDS)
    commits: dict[tuple[int, str], str] = {}       # a run's commit, once per run and role
    n = 0
    for name in _names(by_variant, names):
        for variant, series in by_variant.items():
            for run, p in series.get(name, []):
                commit = commits.get((run.id, variant))
                if commit is None:
                    commit = commits[(run.id, variant)] = run.commit(variant)
                w.writerow((job, name, variant, run.id, run.run_id, run.started_at, commit, p["value"],
                            p["low"], p["high"], p["n"], p["unit"], bool(p["higher_is_better"]), run.report))
                n += 1
    return n


def columns(job: str, by_variant: dict[str, dict[str, list]], names: list[str] | None = None) -> dict:
    """The JSON document of the module docstring."""
    runs = {r.id: r for series in by_variant.values() for pts in series.values() for r, _ in pts}
    ordered = sorted(runs.values(), key=lambda r: (r.started_at, r.id))
    doc: dict = {"job": job, "runs": {
        "run": [r.id for r in ordered], "run_id": [r.run_id for r in ordered],
        "started_at": [r.started_at for r in ordered], "base_commit": [r.commit("base") for r in ordered],
        "cand_commit": [r.commit("cand") for r in ordered], "report": [r.report for r in ordered]},
        "series": {}}
    for name in _names(by_variant, names):
        entry: dict = {}
        for variant, series in by_variant.items():
            pts = series.get(name)
            if not pts:
                continue
            entry.setdefault("unit", pts[0][1]["unit"])
            entry.setdefault("higher_is_better", bool(pts[0][1]["higher_is_better"]))
            col = {k: [p[k] for _, p in pts] for k in ("value", "low", "high", "n")}
            if "values" in pts[0][1]:
                col["values"] = [p["values"] for _, p in pts]
            entry[variant] = {"run": [r.id for r, _ in pts], **col}
        if entry:
            doc["series"][name] = entry
    return doc


def write_json(fh: IO[str], job: str, by_variant: dict[str, dict[str, list]],
               names: list[str] | None = None) -> int:
    """The columns as JSON; the number of points written."""
    doc = columns(job, by_variant, names)
    fh.write(json.dumps(doc, separators=(",", ":")) + "\n")    # dumps: the C encoder (dump is Python)
    return sum(len(v["run"]) for e in doc["series"].values() for k, v in e.items() if isinstance(v, dict))
