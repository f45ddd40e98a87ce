"""A report directory: report.md, report.html, results.json and the artifacts beside them;
`report_run`: a run directory to its report directory in one call."""
from __future__ import annotations

from pathlib import Path

from analysis.inputs.layout import REPORT_HTML, REPORT_MD, RESULTS_JSON
from analysis.compare.engine import analyse_with_profiles
from analysis.compare.options import CompareOptions
from analysis.compare.results import Results
from analysis.inputs.rundir import load_run
from analysis.report import html as report_html
from analysis.report import markdown as report_md
from analysis.report.artifacts import render_artifacts, write_profiles


def write_reports(r: Results, out: Path, md_limit: int | None = None) -> dict[str, Path]:
    """Render everything into `out`; returns the paths of report.md, report.html and
    results.json. The artifacts come first: results.json and both reports name them."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    render_artifacts(r, out)
    paths = {"md": out / REPORT_MD, "html": out / REPORT_HTML, "json": out / RESULTS_JSON}
    paths["md"].write_text(report_md.render(r, **({"limit": md_limit} if md_limit else {})))
    paths["json"].write_text(r.dumps())
    paths["html"].write_text(report_html.render(r, out))
    return paths


def report_run(run_dir: Path | str, out: Path | str | None = None,
               opts: CompareOptions | None = None) -> tuple[Results, dict[str, Path]]:
    """A run directory compared and rendered, as `stallscope compare` does (default out:
    reports/<run-id>/). Raises RunDirError, CompareError or ValueError on bad input."""
    run = load_run(run_dir)
    out = Path(out) if out else Path("reports") / run.manifest.run_id
    r, merged = analyse_with_profiles(run, opts or CompareOptions())
    write_profiles(r, merged, out)
    return r, write_reports(r, out)
