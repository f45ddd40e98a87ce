"""What can be stored in the history: a report directory or a results.json as written, or a
run directory, compared on the way (the comparison is analysis.compare's job, done here so
the store itself only ever stores results)."""
from __future__ import annotations

from pathlib import Path

from analysis.compare.engine import analyse
from analysis.compare.options import CompareOptions
from analysis.compare.results import read_results_json
from analysis.history.store import HistoryError, HistoryStore, StoredRun
from analysis.inputs.rundir import load_run


def results_of(path: Path) -> tuple[dict, str, str]:
    """results.json of a report directory, a results.json file, or computed from a run
    directory (manifest.json); also the report path to link, and what the document is (its
    file, or the run directory it was compared from) for errors."""
    path = Path(path)
    if path.is_file() and path.name.endswith(".json"):
        return _read(path), str(path.parent / "report.html"), str(path)
    if (path / "results.json").is_file():
        return _read(path / "results.json"), str(path / "report.html"), str(path / "results.json")
    if (path / "manifest.json").is_file():
        return analyse(load_run(path), CompareOptions()).to_json(), "", f"{path} (compared)"
    raise HistoryError(f"{path}: neither a run directory (manifest.json) nor a report "
                       "(results.json): give what `stallscope run` or `stallscope compare` wrote")


def _read(p: Path) -> dict:
    try:
        return read_results_json(p)
    except ValueError as e:
        raise HistoryError(str(e)) from None


def ingest_path(store: HistoryStore, path: Path, *, job: str | None = None,
                commits: dict[str, str] | None = None, report_url: str | None = None,
                meta: dict | None = None) -> StoredRun:
    """One run, report or results.json stored (idempotent, as HistoryStore.ingest_results)."""
    results, report, source = results_of(Path(path))
    return store.ingest_results(results, job=job, commits=commits,
                                report_url=report_url or report, meta=meta, source=source)
