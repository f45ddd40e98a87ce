"""Every `stallscope ...` example in every command's --help parses with that command's own
parser, and no help prints argparse's `%%` escape where it meant `%`. The helps are the
manual: an example that exits 2 (`experiment github` without its required --runner-group)
teaches the wrong command line.

Each command's --help is read as a user reads it (`stallscope CMD --help`, and each
subcommand's: argparse's sub-parsers and the commands that dispatch a first word to another
parser, such as `experiment github`), its indented lines that start with `stallscope` are
taken as examples (a trailing backslash continues one, `#` starts a comment), and each is
run through `stallscope`'s own entry point until its parser has parsed it: nothing after
the parse runs."""
from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex

import pytest

from commands import table


class _Parsed(BaseException):
    """Raised once a parser has parsed an example: the command stops there."""


def _run(argv: list[str], stop_after_parse: bool) -> tuple[int | None, str, str, list]:
    """table.main(argv): (exit status or None when stopped after the parse, stdout, stderr,
    the parsers that were asked to parse)."""
    seen: list[argparse.ArgumentParser] = []
    real = argparse.ArgumentParser.parse_known_args

    def parse_known_args(self, args=None, namespace=None):
        seen.append(self)
        out = real(self, args, namespace)
        if stop_after_parse and self is seen[0]:
            raise _Parsed
        return out

    out, err = io.StringIO(), io.StringIO()
    argparse.ArgumentParser.parse_known_args = parse_known_args
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = table.main(argv)
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
            except _Parsed:
                rc = None
    finally:
        argparse.ArgumentParser.parse_known_args = real
    return rc, out.getvalue(), err.getvalue(), seen


def examples(text: str) -> list[str]:
    """The `stallscope ...` command lines of a help text: indented lines, continued by a
    trailing backslash, comments cut."""
    found, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"\s+stallscope \w", line):
            cmd = line.strip()
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd[:-1].rstrip() + " " + lines[i].strip()
            found.append(re.sub(r"\s+#.*$", "", cmd))
        i += 1
    return found


def _words(cmd: str) -> list[str]:
    return shlex.split(cmd, comments=True)[1:]


def helps() -> dict[tuple[str, ...], str]:
    """Every command's and subcommand's --help text, by the words that name it."""
    out: dict[tuple[str, ...], str] = {}
    todo = [(c.name,) for c in table.COMMANDS]
    while todo:
        path = todo.pop(0)
        if path in out:
            continue
        rc, text, err, seen = _run([*path, "--help"], stop_after_parse=False)
        assert rc == 0, f"stallscope {' '.join(path)} --help: exit {rc}: {err}"
        out[path] = text
        for p in seen:
            if p.prog != "stallscope " + " ".join(path):
                continue            # the parent parsers on the way to this one
            for a in p._actions:
                if isinstance(a, argparse._SubParsersAction):
                    todo += [(*path, name) for name in a.choices]
        if len(path) == 1:          # a first word another parser takes (experiment github)
            for ex in examples(text):
                w = _words(ex)
                if len(w) >= 2 and w[0] == path[0] and not w[1].startswith("-"):
                    rc, sub, _, seen = _run([w[0], w[1], "--help"], stop_after_parse=False)
                    if rc == 0 and seen and seen[0].prog == f"stallscope {w[0]} {w[1]}":
                        todo.append((w[0], w[1]))
    return out


HELPS = helps()


def test_every_command_has_a_help_and_some_have_examples():
    assert {p[0] for p in HELPS} == {c.name for c in table.COMMANDS}
    assert ("experiment", "github") in HELPS and ("cases", "show") in HELPS
    assert sum(len(examples(t)) for t in HELPS.values()) >= 40


@pytest.mark.parametrize("path", sorted(HELPS), ids=lambda p: " ".join(p))
def test_each_example_parses_with_its_own_commands_parser(path):
    bad = []
    for ex in examples(HELPS[path]):
        words = _words(ex)
        if words[0] != path[0]:
            continue            # another command's example: its own help is checked there
        rc, _, err, _ = _run(words, stop_after_parse=True)
        if rc is not None:
            bad.append(f"{ex}\n  -> exit {rc}: {err.strip().splitlines()[-1] if err.strip() else ''}")
    assert not bad, f"stallscope {' '.join(path)} --help has examples that do not parse:\n" + "\n".join(bad)


@pytest.mark.parametrize("path", sorted(HELPS), ids=lambda p: " ".join(p))
def test_no_help_prints_an_escaped_percent(path):
    assert "%%" not in HELPS[path]


def _flat(path: tuple[str, ...]) -> str:
    return " ".join(HELPS[path].split())      # argparse wraps the help at spaces


def test_the_helps_sizes_are_the_codes():
    """`cases --help` names every size; `experiment --help` calls tiny, the size every
    experiment file defines, its CI version."""
    from pathlib import Path

    import yaml

    from analysis.inputs.option_specs import SIZES
    cases = _flat(("cases",))
    assert all(f"{s} (" in cases for s in SIZES), cases
    root = Path(__file__).resolve().parent.parent
    for f in (root / "cases" / "experiments").glob("*.yaml"):
        assert "tiny" in yaml.safe_load(f.read_text()).get("sizes", {}), f
    exp = _flat(("experiment",))
    assert "--size tiny # the few-minute CI version" in exp and "--size small" not in exp
    assert "tiny (the experiment file's few-minute CI version" in exp


def test_the_run_helps_numbers_are_the_codes():
    """The numbers `stallscope run --help` writes in words (the --quick run, a run that
    decides, the unpaired profile reps) are the declared defaults."""
    from analysis.inputs import option_specs as o
    h = _flat(("run",))
    assert f"{o.DEFAULT_REPS} paired reps of {o.PAIRED_WINDOWS} windows" in h
    from analysis.sequential import looks
    assert f"({o.TARGET_UNITS} of {o.TARGET_WINDOWS} windows before it has any" in h
    assert f"at least {o.TARGET_MIN_UNITS} of {o.TARGET_WINDOWS}" in h
    *first, last = looks(o.TARGET_UNITS)
    assert f"(after {', '.join(map(str, first))} and {last} reps of a plan of {o.TARGET_UNITS})" in h
    assert f"within --budget ({o.DEFAULT_TARGET_BUDGET_S / 60:.0f} min, the in-cache" in h
    assert f"unpaired, {o.SEPARATE_PROFILE_REPS} separate profile reps" in h
    assert "(default 5;" not in h
    from collectors.host import sample_cost as sc
    assert f"a starting cost of {sc.START_US:g} ± {sc.START_SE:g} µs" in h
    assert f"(its predicted cost within {sc.PERTURBATION:.0%} of the server's CPU)" in h
    assert f"at most {sc.CEILING:,} Hz and held where perf's predicted cost passes" in h
    assert "seed" not in h.lower(), "seed means an upstream result (docs/architecture.md, Words)"
