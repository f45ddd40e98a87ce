"""One options model (analysis/inputs/option_specs.py): every option that several commands
share is declared once, its default and its rules written once, and the commands' parsers are
made from the declarations. The scan below fails when a default or a rule is written a second
time anywhere in analysis/ or collectors/; the test after it shows the scan can fail."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from analysis.inputs import option_specs as specs
from analysis.inputs.option_specs import (DEFAULT_BUDGET_S, DEFAULT_FREQ_HZ, DEFAULT_REPS, MIN_PILOT,
                                          PAIRED_WINDOW_S, PAIRED_WINDOWS, PRECISION_PILOT,
                                          SEPARATE_PROFILE_REPS)
from analysis.inputs.records import from_json
from analysis.inputs.run_options import RunOptions
from analysis.sweep.sweep_options import SweepOptions
from tests.conftest import REPO

HOME = "analysis/inputs/option_specs.py"
# constants only option_specs may give a value
DECLARED = {"DEFAULT_REPS", "PRECISION_PILOT", "MIN_PILOT", "DEFAULT_BUDGET_S", "PR_PRECISION",
            "DEFAULT_FREQ_HZ", "SEPARATE_PROFILE_REPS", "PAIRED_WINDOW_S", "PAIRED_WINDOWS", "DEFAULT_SIZE"}
# constants only the rules use: a use elsewhere is the rule written again
RULE_ONLY = {"DEFAULT_BUDGET_S", "PRECISION_PILOT"}
# a field of these names with its declared default written as a literal
FIELD_DEFAULTS = {"reps": DEFAULT_REPS, "frequency_hz": DEFAULT_FREQ_HZ, "freq_hz": DEFAULT_FREQ_HZ,
                  "frequency": DEFAULT_FREQ_HZ, "budget_s": DEFAULT_BUDGET_S,
                  "budget": specs.format_duration(DEFAULT_BUDGET_S), "paired_window_s": PAIRED_WINDOW_S,
                  "paired_windows": PAIRED_WINDOWS, "profile_reps": SEPARATE_PROFILE_REPS}
# parameters whose default is an option's: never a literal (paired.py said 2.0 s x 8 windows)
PARAMS = {"window_s", "windows", "paired_window_s", "paired_windows", "freq_hz", "frequency_hz",
          "budget_s", "precision", "pairing"}
# the pairing vocabulary (PAIRINGS, and the sweep's older words): a collection of two or more
# of them elsewhere is a second vocabulary; a field, parameter or keyword `pairing` given a
# word as a literal default is the default written again
PAIRING_WORDS = {*specs.PAIRINGS, *specs.SWEEP_PAIRINGS_V1}
RULE_TEXTS = ("budget goes with", "needs a first stage of at least")
FLAGS = {o.flag for o in specs.OPTIONS}


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    return []


def _mentions_reps(node: ast.AST) -> bool:
    return any((isinstance(n, ast.Name) and "reps" in n.id) or (isinstance(n, ast.Attribute) and "reps" in n.attr)
               for n in ast.walk(node))


def _is_literal(node: ast.AST | None, value: object = None) -> bool:
    if not isinstance(node, ast.Constant) or node.value is None or isinstance(node.value, bool):
        return False
    return value is None or node.value == value


def _pairing_repeats(node: ast.AST, at: str) -> list[str]:
    """A pairing vocabulary or default written outside option_specs (PAIRING, PAIRINGS)."""
    out = []
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Name) and t.id.endswith("PAIRINGS") for t in targets):
            out.append(f"{at}: a PAIRINGS defined again")
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and node.target.id == "pairing" and _is_literal(node.value) and node.value.value in PAIRING_WORDS):
            out.append(f"{at}: field pairing = {node.value.value!r}, the declared default written again")
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        words = {e.value for e in node.elts if isinstance(e, ast.Constant)} & PAIRING_WORDS
        if len(words) >= 2:
            out.append(f"{at}: the pairing words {sorted(words)} written again")
    if isinstance(node, ast.keyword) and node.arg == "pairing" and any(
            _is_literal(n, specs.PAIRING.default) for n in ast.walk(node.value)):
        out.append(f"{at}: pairing={specs.PAIRING.default!r}, the declared default written again")
    return out


def repeats(path: str, text: str) -> list[str]:
    """Where `text` writes an option's default or rule again (empty for option_specs itself)."""
    if path == HOME:
        return []
    out = []
    for node in ast.walk(ast.parse(text, path)):
        at = f"{path}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and t.id in DECLARED and _is_literal(node.value):
                    out.append(f"{at}: {t.id} given a value again")
        if isinstance(node, ast.ClassDef):
            for f in node.body:
                if (isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name)
                        and f.target.id in FIELD_DEFAULTS and _is_literal(f.value, FIELD_DEFAULTS[f.target.id])):
                    out.append(f"{path}:{f.lineno}: field {f.target.id} = {f.value.value!r}, a declared default")
        out += _pairing_repeats(node, at)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            pos = a.posonlyargs + a.args
            pairs = list(zip(pos[len(pos) - len(a.defaults):], a.defaults)) + list(zip(a.kwonlyargs, a.kw_defaults))
            out += [f"{at}: {node.name}({arg.arg}={d.value!r}): an option's default as a literal"
                    for arg, d in pairs if arg.arg in PARAMS and _is_literal(d)]
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = node.id if isinstance(node, ast.Name) else node.attr
            if name in RULE_ONLY:
                out.append(f"{at}: {name} used outside the rules")
        if isinstance(node, ast.Constant) and not isinstance(node.value, bool):
            if node.value in (DEFAULT_BUDGET_S, FIELD_DEFAULTS["budget"]):
                out.append(f"{at}: the default budget {node.value!r} written again")
            if isinstance(node.value, str) and any(r in node.value for r in RULE_TEXTS):
                out.append(f"{at}: a rule's message written again: {node.value[:50]!r}")
        if isinstance(node, ast.Compare) and _mentions_reps(node) and any(
                _is_literal(c, MIN_PILOT) for c in [node.left, *node.comparators]):
            out.append(f"{at}: the first-stage minimum {MIN_PILOT} written again")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
                and node.args and any(s in FLAGS for s in _strings(node.args[0]))):
            out.append(f"{at}: {node.args[0].value} made by hand (commands/options.py add_option makes it)")
    return out


@pytest.mark.heavy
def test_no_option_default_or_rule_is_written_twice():
    found = []
    for pkg in ("analysis", "collectors", "commands"):
        for p in sorted((REPO / pkg).rglob("*.py")):
            rel = str(p.relative_to(REPO))
            found += repeats(rel, p.read_text())
    assert not found, "declare these once in analysis/inputs/option_specs.py:\n" + "\n".join(found)


@pytest.mark.parametrize("source,what", [
    ("DEFAULT_BUDGET_S = 1800\n", "given a value again"),
    ("PAIRED_WINDOWS = 64\n", "given a value again"),
    ("budget = args.budget if args.budget is not None else (DEFAULT_BUDGET_S if args.precision else None)\n",
     "used outside the rules"),
    ("reps = args.reps or (PRECISION_PILOT if precision else 5)\n", "used outside the rules"),
    ("class Job:\n    reps: int = 5\n", "a declared default"),
    ("class PerfProfiler:\n    freq_hz: int = 99\n", "a declared default"),
    ("class PrConfig:\n    budget: str = '30m'\n", "the default budget"),
    ("def run_server_windows(servers, window_s: float = 2.0, windows: int = 8): pass\n",
     "an option's default as a literal"),
    ("def f(args):\n    if args.precision is not None and args.reps < 3:\n        raise PlanError('x')\n",
     "the first-stage minimum"),
    ("raise PlanError('--budget goes with --precision (it bounds the reps each point adds)')\n",
     "a rule's message"),
    ("p.add_argument('--frequency', type=int, default=None)\n", "made by hand"),
    ("timeout = 1800.0\n", "the default budget"),
    ("PAIRINGS = ('paired', 'interleaved')\n", "a PAIRINGS defined again"),
    ("allowed = SIZES if key == 'size' else ('paired', 'auto', 'unpaired')\n", "the pairing words"),
    ("class SweepOptions:\n    pairing: str = 'paired'\n", "field pairing = 'paired'"),
    ("def choose(pairing: str = 'auto'): pass\n", "an option's default as a literal"),
    ("opts = RunOptions(pairing='unpaired' if args.unpaired else 'auto')\n", "pairing='auto'"),
])
def test_the_scan_finds_a_default_or_rule_written_again(source, what):
    found = repeats("commands/sweep.py", source)
    assert any(what in f for f in found), found
    assert repeats(HOME, source) == []       # the declarations' own module may


def test_the_rules():
    assert specs.first_stage(None, None) == DEFAULT_REPS and specs.first_stage(None, 0.02) == PRECISION_PILOT
    assert specs.first_stage(4, 0.02) == 4
    assert specs.budget_for(0.02, None) == DEFAULT_BUDGET_S and specs.budget_for(None, None) is None
    assert specs.budget_for("2%", None) == "30m" and specs.budget_for("2%", "20m") == "20m"
    assert specs.precision_problem(0.02, None, MIN_PILOT) is None
    assert specs.precision_problem(None, 60.0, 5).startswith("--budget goes with --precision")
    assert specs.precision_problem(None, "1h", 5, keys=True).startswith("budget goes with precision")
    assert "at least 3 paired reps (--reps 2)" in specs.precision_problem(0.02, None, 2)
    assert specs.parse_duration(specs.format_duration(5400)) == 5400 and specs.format_duration(90) == "1m30s"
    assert specs.parse_precision(specs.format_precision(0.025)) == 0.025


# values to spell for every declared option (a new option needs some here)
SAMPLES = {"reps": [1, 5, 12], "profile": ["perf", "off"], "profile_reps": [0, 3], "frequency_hz": [49, 199],
           "paired_window_s": [0.25, 0.1, 1 / 3, 2.0], "paired_windows": [16, 64], "size": list(specs.SIZES),
           "precision": [0.02, 0.025, 0.07, 0.29, 1 / 30, 0.0123456789],
           "budget_s": [1800.0, 5400.0, 90.0, 90.5, 61.25], "min_change": [0.05, 0.013, 1 / 7],
           "layouts": [1, 3], "pairing": list(specs.PAIRINGS),
           "llc_bytes": [32 * 2**20, 480 * 2**20, 1234, 36608 * 2**10, 2**40]}


def test_every_option_reads_back_exactly_what_it_spells():
    assert set(SAMPLES) == {o.name for o in specs.OPTIONS}
    for o in specs.OPTIONS:
        for v in SAMPLES[o.name] + ([o.default] if o.default is not None else []):
            flag, text = specs.spell(o, v)
            back = o.parse(text)
            assert flag == o.flag and back == v and type(back) is type(v), (o.flag, v, text)
        assert specs.spell(o, None) == []
    # where it is exact, the short text a person writes
    assert specs.spell(specs.PRECISION, 0.02) == ["--precision", "2%"]
    assert specs.spell(specs.BUDGET, 1800.0) == ["--budget", "30m"]
    assert specs.spell(specs.PAIRED_WINDOW, 0.25) == ["--paired-window", "0.25"]
    assert specs.spell(specs.PRECISION, 1 / 30)[1] == repr(1 / 30)
    # each option the command takes, in declaration order, None left out; others not its own
    assert specs.argv_for("pr", {"reps": None, "size": "small", "precision": 0.02, "budget_s": 1200.0,
                                 "pairing": "auto", "layouts": 3}) == [
        "--size", "small", "--precision", "2%", "--budget", "20m", "--pairing", "auto"]


def test_the_commands_take_the_declared_options_with_the_declared_defaults():
    from commands import run_arguments as arguments
    from commands import sweep as sweep_cli
    from commands import experiment as experiment_cli

    run = arguments.parser().parse_args(["c"])
    sweep = sweep_cli.parser().parse_args(["c"])
    for o in specs.taken_by("run"):
        if o.name == "paired_windows":      # resolved by options_from_args: a run that decides takes more
            assert run.paired_windows is None
            continue
        assert getattr(run, o.name) == o.default, o.flag
    fixed = arguments.options_from_args(arguments.parser().parse_args(["c", "--reps", "5"]))
    assert fixed.paired_windows == specs.PAIRED_WINDOWS_OPT.default
    for o in specs.taken_by("sweep"):
        assert getattr(sweep, o.name) == o.default, o.flag
    exp = experiment_cli.parser().parse_args(["x", "--precision", "2%"])
    assert (exp.precision, exp.budget_s) == (0.02, None)
    # the rules fill what was left open, the same way for a run and for a sweep
    opts = arguments.options_from_args(arguments.parser().parse_args(["c", "--precision", "2%"]))
    assert (opts.reps, opts.budget_s) == (PRECISION_PILOT, DEFAULT_BUDGET_S)
    sw = sweep_cli._options(sweep_cli.parser().parse_args(["c", "--precision", "2%", "--frequency", "199"]))
    assert (sw.reps, sw.budget_s, sw.frequency_hz) == (PRECISION_PILOT, DEFAULT_BUDGET_S, 199)
    with pytest.raises(Exception, match="needs a first stage of at least 3"):
        sweep_cli._options(sweep_cli.parser().parse_args(["c", "--precision", "2%", "--reps", "2"]))


def test_the_pr_config_and_the_schedule_take_their_defaults_from_the_declarations(tmp_path):
    from collectors.pr import config
    from collectors.schedule.loader import JOB_KEYS
    from collectors.schedule.model import Job

    d = config.PrConfig()
    assert (d.precision, d.budget, d.budget_minutes()) == ("2%", "30m", 30)
    assert config.PrConfig(precision=None).budget is None
    f = tmp_path / "pr.yaml"
    f.write_text("cases: [mset-50keys]\nprecision: 3%\nreps: 2\n")
    with pytest.raises(config.PrConfigError, match="precision needs a first stage of at least 3"):
        config.load(f)
    assert {"reps", "profile-reps", "size"} <= JOB_KEYS
    assert Job.__dataclass_fields__["reps"].default == DEFAULT_REPS


def test_the_sampling_frequency_has_one_name_and_old_files_keep_theirs():
    old = from_json(RunOptions, {"reps": 5, "freq_hz": 999})
    assert old.frequency_hz == 999
    assert "freq_hz" not in json.dumps(vars(old)) and vars(RunOptions(frequency_hz=49))["frequency_hz"] == 49
    assert from_json(SweepOptions, {"frequency": 0}).frequency_hz is None
    assert from_json(SweepOptions, {"frequency": 199}).frequency_hz == 199
    assert from_json(SweepOptions, {"frequency_hz": 299, "frequency": 0}).frequency_hz == 299
    from analysis.inputs.rundir import load_run
    run = load_run(REPO / "tests" / "data" / "runs" / "mset-99hz-small")
    assert run.manifest.options.frequency_hz == 99
    assert '"freq_hz"' in (Path(run.path) / "manifest.json").read_text()   # an old run, as written


def test_every_run_flag_lands_in_one_declared_place():
    """Each `stallscope run` flag is a field of the request or its options, or a plugin's
    declared RunFlag (options.extra): nothing listed by hand, nothing dropped on the way."""
    import dataclasses
    from commands import run_arguments as arguments
    from collectors.runner.api import RunRequest
    from collectors.runner.plugins import plugins

    args = arguments.parser().parse_args(["c", "--variant", "a=bin:/x", "--variant", "b=bin:/x",
                                          "--tma-level", "3"])
    opts = arguments.options_from_args(args)
    declared = {f.dest: f for pl in plugins() for f in pl.RUN_FLAGS.flags}
    assert set(opts.extra) == set(declared)
    assert opts.extra["tma_level"] == 3 != declared["tma_level"].default_value()
    homes = ({f.name for f in dataclasses.fields(RunOptions)} | {f.name for f in dataclasses.fields(RunRequest)}
             | set(declared) | {"variant", "set", "no_progress", "resume"})
    assert set(vars(args)) <= homes, set(vars(args)) - homes
