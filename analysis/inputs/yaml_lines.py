"""YAML with the line of every value: the one reader of stallscope's YAML files (case files,
experiment files, schedule files, the PR config, imported test suites), so each of their
errors can name the file and line.

PyYAML composes the document into its node tree, whose nodes carry the marks of where they
start; this module turns that tree into `Node`s (a plain value, the line it starts on, and
for a mapping's value the line of its key) and checks what every file type wants alike:
mapping keys are plain words (str, int or float, read as text; `on:` stays "on"), no key twice (PyYAML keeps
the last one silently), no alias that contains itself. Each caller passes its own error
class (a UserError), so the errors of a case file stay CaseErrors and so on.

    root = parse(text, "cases/x.yaml", CaseError)        # None for an empty document
    root.value["dataset"].value["keys"].line             # -> 7
    data, lines = load(text, "cases/x.yaml", CaseError)  # plain values + {("dataset", "keys"): 7}
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from analysis.errors import UserError


class YamlError(UserError):
    """A YAML file that cannot be read (the message starts with file:line); exit status 2.
    Callers usually pass their own error class instead."""


@dataclass
class Node:
    """A value (a dict of Nodes, a list of Nodes, or a scalar) with the line it starts on.
    `key_line`: for a mapping's value, the line of its key (where a job or a section
    starts); else the value's own line."""
    value: Any
    line: int
    key_line: int = 0

    def __post_init__(self) -> None:
        self.key_line = self.key_line or self.line

    def plain(self) -> Any:
        """The plain Python value, without lines."""
        if isinstance(self.value, dict):
            return {k: v.plain() for k, v in self.value.items()}
        if isinstance(self.value, list):
            return [v.plain() for v in self.value]
        return self.value


def read_text(path: str | Path, what: str, error: type[UserError] = YamlError) -> str:
    """The file's text; `error` "PATH: cannot read the WHAT: reason" when it cannot be read."""
    try:
        return Path(path).read_text()
    except OSError as e:
        raise error(f"{path}: cannot read the {what}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise error(f"{path}: cannot read the {what}: not UTF-8 text ({e.reason} at byte {e.start})") from None


def parse(text: str, where: str, error: type[UserError] = YamlError) -> Node | None:
    """The document as a Node tree (None when it is empty); `error` names `where` and the
    line of malformed YAML, a key that is not a plain word, a duplicate key."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise error(f"{where}:{mark.line + 1 if mark else '?'}: malformed YAML: {e.problem or e}") from None
    except yaml.YAMLError as e:
        raise error(f"{where}: malformed YAML: {e}") from None
    return None if root is None else _Walk(where, error).node(root)


def load(text: str, where: str, error: type[UserError] = YamlError) -> tuple[Any, dict[tuple, int]]:
    """(plain values, {path: line}) of a document; a path is a tuple of keys and list
    indexes, ("dataset", "keys"), and a mapping's value has its key's line. (None, {}) for
    an empty document."""
    root = parse(text, where, error)
    if root is None:
        return None, {}
    lines: dict[tuple, int] = {}
    _lines(root, (), lines)
    lines[()] = root.line
    return root.plain(), lines


def _lines(node: Node, path: tuple, out: dict[tuple, int]) -> None:
    out[path] = node.key_line
    if isinstance(node.value, dict):
        for k, v in node.value.items():
            _lines(v, path + (k,), out)
    elif isinstance(node.value, list):
        for i, v in enumerate(node.value):
            _lines(v, path + (i,), out)


class _Walk:
    """PyYAML's node tree -> Nodes, with the checks every file type wants."""

    def __init__(self, where: str, error: type[UserError]):
        self.where, self.error = where, error
        self.open: set[int] = set()     # the collection nodes being walked (an alias cycle)
        self.loader = yaml.SafeLoader("")

    def fail(self, node: yaml.Node, message: str) -> UserError:
        return self.error(f"{self.where}:{node.start_mark.line + 1}: {message}")

    def node(self, node: yaml.Node, key_line: int = 0) -> Node:
        line = node.start_mark.line + 1
        if isinstance(node, yaml.ScalarNode):
            return Node(self.scalar(node), line, key_line)
        if id(node) in self.open:
            raise self.fail(node, "an alias inside this anchored collection refers to it")
        self.open.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return Node([self.node(n) for n in node.value], line, key_line)
            out: dict[str, Node] = {}
            for k, v in node.value:
                key = self.scalar(k) if isinstance(k, yaml.ScalarNode) else None
                if isinstance(key, bool):
                    key = k.value               # `on:` or `yes:` as written, not "True"
                if not isinstance(key, (str, int, float)):
                    raise self.fail(k, "mapping keys must be plain words")
                if str(key) in out:
                    raise self.fail(k, f"duplicate key {str(key)!r}")
                out[str(key)] = self.node(v, k.start_mark.line + 1)
            return Node(out, line, key_line)
        finally:
            self.open.discard(id(node))

    def scalar(self, node: yaml.ScalarNode) -> Any:
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.MarkedYAMLError as e:   # an unknown tag
            raise self.fail(node, f"malformed YAML: {e.problem or e}") from None
        except ValueError as e:             # a tag its text does not fit (!!int word)
            raise self.fail(node, f"malformed YAML: {node.tag} {node.value!r}: {e}") from None
