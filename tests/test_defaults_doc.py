"""docs/defaults.md's table of defaults by mode is the code's: every cell is computed here from
the modules that hold the defaults (analysis/inputs/option_specs.py, the run's own parser and
rules, the sweep, experiment files, schedule, PR config, bisection and demo), and the test
fails when the page says anything else. To see the table the code gives:

    .venv/bin/python -m tests.test_defaults_doc
"""
from __future__ import annotations

import dataclasses
import math
import shlex
import types
from pathlib import Path

import yaml

from analysis.inputs import option_specs as specs
from analysis.inputs.option_specs import format_duration

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "defaults.md"
BEGIN, END = "<!-- defaults table: begin -->", "<!-- defaults table: end -->"
HEAD = ("mode", "paired reps", "windows per rep", "perf rate", "budget", "size")


def _rates() -> tuple[str, str]:
    from collectors.host import sample_cost
    return (f"the function rows' need, predicted at most {sample_cost.PERTURBATION:.0%} of the server's CPU",
            f"predicted at most {sample_cost.BUDGET:.0%} of the server's CPU")


def _rate(opts) -> str:
    """The rate rule the run applies to these options (collectors/runner/api.py)."""
    from collectors.runner import api
    from collectors.workload.cases import load_case
    if opts.profile == "off":
        return "perf off"
    o = dataclasses.replace(opts, paired=True)    # where pairing fits: the default everywhere
    if o.profile_reps is None:           # a paired run with perf: its windows are profiled
        o.profile_reps = 0
    rows, low = _rates()
    return low if api._rate_need(o, load_case("mset-50keys", "tiny")) is None else rows


def _run(*argv: str):
    from commands import run_arguments
    return run_arguments.options_from_args(run_arguments.parser().parse_args(["CASE", *argv]))


def _budget(seconds: float | None, each: str = "") -> str:
    return "none" if seconds is None else format_duration(seconds) + each


def _experiments() -> tuple[set, set, set, set, set]:
    """The shipped experiment files' reps, windows and rates, and their tiny sizes' reps and
    windows."""
    from collectors.runner.options import RunOptions
    reps, windows, rates, tiny_reps, tiny_windows = set(), set(), set(), set(), set()
    for f in sorted((ROOT / "cases" / "experiments").glob("*.yaml")):
        d = yaml.safe_load(f.read_text())
        o = d.get("options", {})
        t = {**o, **d.get("sizes", {}).get("tiny", {})}
        reps.add(o.get("reps", specs.DEFAULT_REPS))
        windows.add(o.get("paired_windows", specs.PAIRED_WINDOWS))
        opts = RunOptions(**{k: v for k, v in o.items() if k in ("reps", "profile", "profile_reps")})
        rates.add(_rate(opts) + (f", in {opts.profile_reps} separate profile reps a side"
                                 if opts.profile_reps and opts.profile != "off" else ""))
        tiny_reps.add(t.get("reps", specs.DEFAULT_REPS))
        tiny_windows.add(t.get("paired_windows", specs.PAIRED_WINDOWS))
    return reps, windows, rates, tiny_reps, tiny_windows


def _one_of(values: set) -> str:
    return " or ".join(str(v) for v in sorted(values))


def _schedule(tmp: Path):
    from collectors.schedule import jobrun
    from collectors.schedule.loader import load_schedule
    from commands import run_arguments
    f = tmp / "s.yaml"
    f.write_text("jobs:\n  j:\n    cron: '0 2 * * *'\n    case: mset-50keys\n"
                 "    candidate: bin:/usr/bin/true\n    baseline: previous\n")
    sched = load_schedule(f)
    job = sched.jobs[0]
    return jobrun.job_request(sched, job, "mset-50keys", ["a=bin:/usr/bin/true", "b=bin:/usr/bin/true"],
                              run_arguments).options


def rows(tmp: Path) -> list[tuple[str, ...]]:
    from analysis.bisect import rule
    from analysis.bisect.report import looks_text
    from collectors.bisect import driver
    from collectors.pr import workflow
    from collectors.pr.config import PrConfig
    from collectors.runner import demo
    from collectors.runner.options import RunOptions
    rows_rate, _ = _rates()
    decides = _run()
    assert decides.targets and not _run("--quick").targets
    from analysis import sequential
    from collectors.runner import rep_plan
    planned = (f"planned with its windows and perf's share from this host's recorded spread and "
               f"seconds a rep, {rep_plan.MIN_REPS} to {specs.TARGET_MAX_UNITS} within the budget "
               f"(fewer where it holds fewer: reps of {rep_plan.SHORT_WINDOWS} windows where that "
               f"reaches {sequential.FLOOR_REPS}; a plan below {sequential.FLOOR_REPS} marks its rows "
               f"with the level they keep; {specs.TARGET_UNITS} before it has any, planned again after "
               "the first rep); looks after "
               f"{', '.join(map(str, sequential.looks(specs.TARGET_UNITS)))} (more in a longer plan) "
               "end it once answered")
    planned_windows = (f"{{}} to {max(rep_plan.WINDOWS)} ({rep_plan.SHORT_WINDOWS} in a short plan), "
                       "planned with the reps")
    quick, precision, fixed = _run("--quick"), _run("--precision", "2%"), _run("--reps", "7")
    sweep_reps = specs.first_stage(None, None)
    pr = _run(*shlex.split(workflow._run_args(PrConfig())))
    sched = _schedule(tmp)
    e_reps, e_windows, e_rates, t_reps, t_windows = _experiments()
    demo_case, demo_reps, demo_windows, _ = demo.SIZES["default"]
    _, small_reps, small_windows, _ = demo.SIZES["small"]
    small = RunOptions(reps=small_reps, paired_windows=small_windows, size="small")   # as commands/demo.py
    assert demo_reps is None        # the demo's default size is a run that decides
    return [
        ("`stallscope run` (a run that decides: no `--reps`, `--precision`, `--quick`)", planned,
         planned_windows.format(decides.paired_windows), _rate(decides), _budget(decides.budget_s), decides.size),
        ("`stallscope run --quick`", str(quick.reps), str(quick.paired_windows), _rate(quick),
         _budget(quick.budget_s), quick.size),
        ("`stallscope run --precision PCT`",
         f"{precision.reps} (the first stage), then more until the interval is ±PCT",
         str(precision.paired_windows), _rate(precision), _budget(precision.budget_s), precision.size),
        ("`stallscope run --reps N`", "N", str(fixed.paired_windows), _rate(fixed),
         _budget(fixed.budget_s), fixed.size),
        ("`stallscope sweep` (each point)",
         f"{sweep_reps} (`--precision`: {specs.first_stage(None, 0.02)} first)", str(specs.PAIRED_WINDOWS),
         "as `stallscope run --reps N`", f"none (`--precision`: {_budget(specs.DEFAULT_BUDGET_S)} a point)",
         specs.DEFAULT_SIZE),
        ("`stallscope experiment` (each point)",
         f"the file's: {_one_of(e_reps)} (`--size tiny`: {_one_of(t_reps)})",
         f"{_one_of(e_windows)} (tiny: {_one_of(t_windows)})",
         "the file's: " + _one_of(e_rates), "none", specs.DEFAULT_SIZE),
        ("`stallscope schedule` (a job)", str(sched.reps), str(sched.paired_windows), _rate(sched),
         _budget(sched.budget_s), sched.size),
        ("pull-request workflow (`stallscope pr github`)",
         f"{pr.reps} (the first stage), then more until the interval is ±"
         f"{specs.format_precision(pr.precision)}",
         str(pr.paired_windows), _rate(pr), _budget(pr.budget_s, " a case"), pr.size),
        ("`stallscope bisect` (each step)",
         f"looks after {looks_text(list(rule.LOOKS))} until the step decides; the functions step's "
         f"first run {driver.FUNCTION_REPS}",
         str(specs.PAIRED_WINDOWS), f"perf off (the functions step's first run: {rows_rate})",
         _budget(specs.DEFAULT_BISECT_BUDGET_S), specs.DEFAULT_SIZE),
        ("`stallscope demo`, `make demo`", f"a run that decides: {planned}", planned_windows.format(demo_windows),
         rows_rate, _budget(demo.BUDGET_S), "default"),
        ("`stallscope demo --size small`, `make demo-small`", str(small.reps), str(small.paired_windows),
         _rate(small), "none", small.size),
    ]


def table(tmp: Path) -> str:
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(r) + " |" for r in rows(tmp)]
    return "\n".join(lines)


def test_the_defaults_table_is_the_codes(tmp_path):
    text = DOC.read_text()
    assert BEGIN in text and END in text, f"{DOC}: the table's markers are gone"
    page = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    want = table(tmp_path)
    assert page == want, (f"{DOC.relative_to(ROOT)}'s table differs from the code's defaults; "
                          f"the code's table (python -m tests.test_defaults_doc):\n{want}")


def test_the_pages_sentences_hold_the_codes_numbers():
    from collectors.host import sample_cost as sc
    text = " ".join(DOC.read_text().split())
    for said in (f"profiles come from {specs.SEPARATE_PROFILE_REPS} separate profile reps a side",
                 f"for throughput ±{specs.TARGET_THROUGHPUT:.0%}, each focus function "
                 f"±{specs.TARGET_FOCUS:.0%} and every function of {specs.TARGET_SHARE:.0%} of the "
                 f"samples ±{specs.TARGET_MOVERS:.0%}",
                 f"a starting cost of {sc.START_US:g} ± {sc.START_SE:g} µs",
                 f"passes {sc.PERTURBATION:.0%} of the server's CPU",
                 f"keep perf's predicted cost within {sc.BUDGET:.0%}",
                 "about one run in ten costs more"):
        assert said in text, said


def test_the_readme_points_at_the_table():
    assert "(docs/defaults.md)" in (ROOT / "README.md").read_text()


if __name__ == "__main__":
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        print(table(Path(d)))
