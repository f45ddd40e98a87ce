"""Run a bisection: the steps analysis/bisect/search.py asks for, each look a run through the
run API (collectors/runner/api.py) of the two commits as git: variants, paired where the
case pairs. bisect.json is written after every run, so Ctrl-C (or a crash) loses at most the
unfinished run's unfinished reps: `stallscope bisect --resume DIR` resumes that run through
the run API's own resume and goes on.

Probe runs are not profiled (throughput decides them, and perf would add its processing to
every look); the first run of the functions step (the culprit's parent against the culprit)
is, with perf in the paired windows, and its comparison report is rendered beside
bisect.json; its later looks, until its throughput decides, are not.
"""
from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from analysis.bisect import rule
from analysis.bisect.search import FUNCTION_REPS, FUNCTIONS, RUNNING, Bisection, Step
from analysis.compare.throughput import main_log_ratios
from analysis.inputs.rundir import RunDir, load_run, read_json, write_json
from analysis.report.writer import report_run
from analysis.stats import DECIDED
from analysis.bisect.report import looks_text, markdown
from analysis.inputs.option_specs import DEFAULT_MIN_CHANGE
from collectors.bisect.commits import BisectError, first_parent_range
from collectors.host import machine, noise
from collectors.runner.api import RunRequest, execute, plan_run, resume_run
from collectors.runner.options import RunOptions
from collectors.workload.cases import load_case

Log = Callable[[str], None]
STATE = "bisect.json"


def load(out: Path) -> Bisection:
    try:
        return Bisection.from_json(read_json(out / STATE))
    except FileNotFoundError:
        raise BisectError(f"{out}: no {STATE} (not a bisection directory; start one with "
                          "stallscope bisect CASE --repo ... --good ... --bad ...)") from None
    except (KeyError, TypeError, ValueError) as e:
        raise BisectError(f"{out / STATE}: not a bisection state file ({e})") from None


def save(out: Path, b: Bisection) -> None:
    write_json(out / STATE, b.to_json())


def start(out: Path, case: str, repo: Path, good: str, bad: str, *, size: str, min_change: float | None,
          budget_s: float, paired_windows: int | None, log: Log, first: str | None = None) -> Bisection:
    """A new bisection of good..bad in `out` (bisect.json written): the range, each step's
    alpha, the minimum change (given, or the host's default). first: a commit of the range
    to probe first (a scheduled job's: the run before the one its history places the change at)."""
    commits = first_parent_range(repo, good, bad)
    hint = next((i for i, c in enumerate(commits[1:-1], 1) if first and c.sha.startswith(first)), None)
    alpha = rule.step_alpha(len(commits) - 1, hinted=hint is not None)
    why = "as given"
    spread = noise.lookup(machine.host_facts().summary(), load_case(case, size).name, size)
    if min_change is None:
        min_change, why = default_min_change(spread, alpha)
    if (out / STATE).exists():
        raise BisectError(f"{out} holds a bisection already: --resume {out}, or give another --out")
    out.mkdir(parents=True, exist_ok=True)
    b = Bisection(case, str(repo), good, bad, commits, min_change, why, alpha, list(rule.LOOKS),
                  budget_s, size=size, paired_windows=paired_windows, hint=hint)
    save(out, b)
    log(f"bisect: {len(commits) - 1} commits from {good} to {bad}, ~{b.probes_left()} steps"
        + (f", {commits[hint].sha[:12]} first" if hint is not None else "")
        + f"; minimum change ±{min_change:.1%} ({why}); each step looks after {looks_text(b.looks)} "
        f"paired reps; {out}")
    if spread is not None and (n := rule.expected_reps(min_change, spread.sd, alpha)) > rule.MAX_REPS / 2:
        log(f"bisect: a step of ±{min_change:.1%} takes about {n:.0f} paired reps on this host's spread "
            f"(±{spread.sd:.1%} a rep), and stops undecided after {rule.MAX_REPS}: a larger --min-change "
            "decides sooner")
    return b


def default_min_change(spread: noise.Noise | None, alpha: float) -> tuple[float, str]:
    """From this host's recorded noise of the case (collectors/host/noise.py), else DEFAULT_MIN_CHANGE."""
    if spread is None:
        return DEFAULT_MIN_CHANGE, "this host has recorded no paired run yet"
    m = max(rule.default_min_change(spread.sd, alpha), 0.005)
    return m, (f"the smallest change a step decides by its {rule.DEFAULT_BY}th paired rep with 95% "
               f"probability here: a paired rep's spread ±{spread.sd:.1%} from {spread.runs} run(s) of "
               f"{spread.source}")


def bisect(out: Path, b: Bisection, log: Log, progress: bool = True) -> Bisection:
    """Run steps until the search ends or the budget is spent; returns the final state."""
    t0, spent0 = time.monotonic(), b.spent_s
    b.status = RUNNING
    k = sum(1 for s in b.steps if s.decision is not None)
    while (step := b.next_step()) is not None:
        b.spent_s = round(spent0 + time.monotonic() - t0, 1)
        if b.spent_s >= b.budget_s:
            b.out_of_budget(b.spent_s)
            break
        k += step.decision is None
        left = b.probes_left()
        log(f"bisect: step {k} of ~{k + left - 1}: {_describe(b, step)}; "
            f"{b.spent_s / 60:.1f} min spent{_eta(b, left)}")
        _look(out, b, step, log, progress)
        save(out, b)
    b.spent_s = round(spent0 + time.monotonic() - t0, 1)
    save(out, b)
    (out / "report.md").write_text(markdown(b))
    log(f"bisect: {b.why}")
    return b


def _describe(b: Bisection, s: Step) -> str:
    c = b.commits
    return (f"{s.role}: {c[s.probe].sha[:12]} ({c[s.probe].subject[:50]}) against "
            f"{c[s.base].sha[:12]}, {len(s.log_ratios)} paired rep(s) so far")


def _eta(b: Bisection, left: int) -> str:
    reps = sum(len(s.log_ratios) for s in b.steps)
    if not reps or not b.spent_s:
        return ""
    per_step = b.spent_s / max(1, sum(1 for s in b.steps if s.decision is not None))
    return f", ~{per_step * left / 60:.0f} min left"


def _look(out: Path, b: Bisection, step: Step, log: Log, progress: bool) -> None:
    """One look of `step`: finish its unfinished run, or run the reps its next look needs."""
    if len(step.runs) > step.counted:
        run_dir = Path(step.runs[-1])
        log(f"bisect: resuming {run_dir}")
        status = execute(resume_run(run_dir, log, progress=progress)).status
    else:
        reps = FUNCTION_REPS if step.role == FUNCTIONS and not step.runs else \
            (rule.next_look(len(step.log_ratios), b.looks) or b.looks[-1]) - len(step.log_ratios)
        plan = plan_run(_request(out, b, step, reps, progress), log)
        step.runs.append(str(plan.run_dir))
        save(out, b)                      # an interrupted run is found again by --resume
        status = execute(plan).status
    if status == 130:
        raise KeyboardInterrupt
    run_dir = Path(step.runs[-1])
    names = [f"c{step.base}", f"c{step.probe}"]
    step.log_ratios += main_log_ratios(RunDir(run_dir, load_run(run_dir).manifest), *names)
    step.counted = len(step.runs)
    d = b.decide(step)
    step.decision = asdict(d)
    log(f"bisect: {b.commits[step.probe].sha[:12]} against {b.commits[step.base].sha[:12]}: {d.text()}")
    if step.role == FUNCTIONS and len(step.runs) == 1:      # its first run is the profiled one
        b.functions = _functions(out, run_dir, log)
        step.report = str(out / "functions" / "report.md")


def _request(out: Path, b: Bisection, step: Step, reps: int, progress: bool) -> RunRequest:
    c = b.commits
    variants = [f"c{i}=git:{b.repo}@{c[i].sha}" for i in (step.base, step.probe)]
    profiled = step.role == FUNCTIONS and not step.runs      # its later looks: throughput only
    opts = RunOptions(reps=reps, size=b.size, profile="perf" if profiled else "off")
    if b.paired_windows:
        opts.paired_windows = b.paired_windows
    return RunRequest(b.case, variants, opts, out=out / "runs", progress=progress)


def _functions(out: Path, run_dir: Path, log: Log) -> list[dict]:
    """The rows of the functions step whose CPU per operation moved (a decided verdict on
    the flat or the cumulative cost), from its comparison (rendered into out/functions)."""
    try:
        r, _ = report_run(run_dir, out / "functions")
    except Exception as e:  # noqa: BLE001 - hours of bisection stand without this extra table
        log(f"bisect: the functions comparison of {run_dir} failed ({type(e).__name__}): {e}")
        return []
    rows: list[dict] = []
    if not r.profile.available:
        return rows
    for f in [*r.profile.focus, *r.profile.movers]:
        for basis, ch, j, base, cand in (
                ("flat", f.flat_ns_change, f.flat_verdict, f.base_flat_ns, f.cand_flat_ns),
                ("cumulative", f.cum_ns_change, f.cum_verdict, f.base_cum_ns, f.cand_cum_ns)):
            if ch is None or j is None or j.verdict not in DECIDED:
                continue
            # ns per operation beside the change: a function new at the culprit has no ratio
            rows.append({"function": f.name, "basis": basis, "verdict": j.verdict,
                         "change": ch.rel, "low": ch.rel_ci_low, "high": ch.rel_ci_high,
                         "base_ns": base.median if base else None, "cand_ns": cand.median if cand else None})
    return rows
