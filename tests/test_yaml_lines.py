"""analysis/inputs/yaml_lines.py: the one reader of stallscope's YAML files, and every file
type's errors naming the file and the line through it."""
from __future__ import annotations

import ast

import pytest

from analysis.inputs.yaml_lines import YamlError, load, parse, read_text
from tests.conftest import REPO


def test_values_come_with_their_lines():
    data, lines = load("name: x\ndataset:\n  keys: 1000\n  tags: [a, b]\n", "f.yaml")
    assert data == {"name": "x", "dataset": {"keys": 1000, "tags": ["a", "b"]}}
    assert lines[()] == 1 and lines[("dataset",)] == 2 and lines[("dataset", "keys")] == 3
    assert lines[("dataset", "tags", 1)] == 4
    root = parse("jobs:\n  nightly:\n    cron: x\n", "f.yaml")
    job = root.value["jobs"].value["nightly"]
    assert (job.key_line, job.line, job.value["cron"].line) == (2, 3, 3)
    assert load("", "f.yaml") == (None, {}) and parse("# nothing\n", "f.yaml") is None


@pytest.mark.parametrize("text, line, message", [
    ("a: 1\nb: [1, 2\n", 3, "malformed YAML"),
    ("a: 1\nb:\n  c: 1\n  c: 2\n", 4, "duplicate key 'c'"),
    ("a: 1\n[x]: 2\n", 2, "mapping keys must be plain words"),
    ("a: 1\n~: 2\n", 2, "mapping keys must be plain words"),
    ("a: &x\n  b: *x\n", 1, "an alias inside this anchored collection refers to it"),
    ("a: !!int word\n", 1, "malformed YAML"),
])
def test_errors_name_the_file_and_line(text, line, message):
    with pytest.raises(YamlError, match=rf"^f\.yaml:{line}: .*{message}"):
        load(text, "f.yaml")


def test_keys_are_words_as_written():
    data, _ = load("on: 1\n2: b\n", "f.yaml")
    assert data == {"on": 1, "2": "b"}        # not True: YAML 1.1 reads `on` as a boolean


def test_the_callers_error_class_and_unreadable_files(tmp_path):
    class Mine(YamlError):
        pass
    with pytest.raises(Mine, match="f.yaml:2: duplicate key"):
        load("a: 1\na: 2\n", "f.yaml", Mine)
    with pytest.raises(Mine, match=r"none.yaml: cannot read the case file: No such file"):
        read_text(tmp_path / "none.yaml", "case file", Mine)
    (tmp_path / "bin.yaml").write_bytes(b"a: \xff\n")
    with pytest.raises(Mine, match="cannot read the case file: not UTF-8"):
        read_text(tmp_path / "bin.yaml", "case file", Mine)


def test_every_file_type_names_the_file_and_line(tmp_path):
    """Each reader, given a duplicate key on line 3, says so with its own error class."""
    from collectors.pr.config import PrConfigError
    from collectors.pr.config import load as load_pr_config
    from collectors.schedule.loader import load_schedule
    from collectors.schedule.model import ScheduleError
    from collectors.sweep.experiment.file import load_experiment
    from collectors.workload.casefile import CaseError, load_doc
    from collectors.workload.suite import SuiteError, import_suite
    text = "a:\n  b: 1\n  b: 2\n"
    readers = [(load_pr_config, PrConfigError), (load_schedule, ScheduleError),
               (load_experiment, CaseError), (load_doc, CaseError), (import_suite, SuiteError)]
    for read, error in readers:
        f = tmp_path / "dup.yaml"
        f.write_text(text)
        with pytest.raises(error, match=rf"^{f}:3: duplicate key 'b'"):
            read(str(f) if read not in (import_suite, load_doc) else f)


@pytest.mark.heavy
def test_no_other_module_reads_yaml_files():
    """One reader: a YAML file read elsewhere would lose the lines (or check keys another
    way). overrides.py reads a `--set` value, which has no file and no lines."""
    allowed = {REPO / "analysis" / "inputs" / "yaml_lines.py", REPO / "collectors" / "workload" / "overrides.py"}
    readers = {"compose", "compose_all", "load", "load_all", "safe_load", "safe_load_all", "full_load"}
    found = []
    for pkg in ("analysis", "collectors"):
        for p in (REPO / pkg).rglob("*.py"):
            if p in allowed:
                continue
            for node in ast.walk(ast.parse(p.read_text())):
                if (isinstance(node, ast.Attribute) and node.attr in readers
                        and isinstance(node.value, ast.Name) and node.value.id == "yaml"):
                    found.append(f"{p.relative_to(REPO)}:{node.lineno}")
    assert not found, f"YAML read outside analysis/inputs/yaml_lines.py: {found}"
