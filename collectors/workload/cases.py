"""Cases: load cases/*.yaml into `Case` objects (size knobs and matrix applied), and the
`python -m collectors cases` CLI (list, show, import).

A case file is composed into PyYAML's node tree first, so every error can name the file
and line it comes from; only then is it turned into plain values and checked against the
data classes of collectors/case_model.py. docs/cases.md documents the format.
"""
from __future__ import annotations

import argparse
import copy
import itertools
import json
import sys
import typing
from dataclasses import fields
from pathlib import Path
from typing import Any

import yaml

from analysis.inputs.case import Case, DatasetSpec, ServerSpec, WorkloadSpec

CASES_DIR = Path(__file__).resolve().parents[2] / "cases"
TOP_KEYS = {"name", "description", "focus", "server", "dataset", "workload", "sizes",
            "matrix", "notes"}
SECTIONS = {"server": ServerSpec, "dataset": DatasetSpec, "workload": WorkloadSpec}
TOP_FIELDS = {"description": str, "focus": list[str], "notes": list[str]}
DATASET_KINDS = ("none", "strings", "hashes", "zsets")
TOOLS = ("redis-benchmark", "memtier", "rdb-load")
# Placeholder for a value of dataset.value_size bytes: redis-benchmark sends custom
# command words literally, so the loader writes the value out.
DATA_WORD = "__data__"


class CaseError(Exception):
    """A case that cannot be loaded; the message starts with file:line."""


# ---------------------------------------------------------------- YAML with line numbers
Path_ = tuple  # a path into the document: ("dataset", "keys")


def _compose(text: str, where: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else "?"
        raise CaseError(f"{where}:{line}: malformed YAML: {e.problem or e}") from None
    except yaml.YAMLError as e:
        raise CaseError(f"{where}: malformed YAML: {e}") from None


def _plain(node: yaml.Node, path: Path_, lines: dict[Path_, int], where: str) -> Any:
    """Node tree -> plain Python values, remembering the line of every path."""
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for knode, vnode in node.value:
            key = _scalar(knode, where)
            if not isinstance(key, (str, int, float)):
                raise CaseError(f"{where}:{knode.start_mark.line + 1}: mapping keys must be plain words")
            key = str(key)
            if key in out:
                raise CaseError(f"{where}:{knode.start_mark.line + 1}: duplicate key {key!r}")
            out[key] = _plain(vnode, path + (key,), lines, where)
            lines[path + (key,)] = knode.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_plain(n, path + (i,), lines, where) for i, n in enumerate(node.value)]
    return _scalar(node, where)


def _scalar(node: yaml.Node, where: str) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        raise CaseError(f"{where}:{node.start_mark.line + 1}: expected a plain value here")
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


# ---------------------------------------------------------------- type checking
def _type_name(t: Any) -> str:
    return {int: "an integer", float: "a number", bool: "true or false", str: "a string"}.get(
        t, str(t).replace("typing.", ""))


def _coerce(value: Any, t: Any, field_path: str, at: str) -> Any:
    """Check `value` against a data class field type; convert the harmless cases
    (an int where a float is wanted, numbers in a command line or server config)."""
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        if value is None and type(None) in args:
            return None
        t = next(a for a in args if a is not type(None))
        origin, args = typing.get_origin(t), typing.get_args(t)
    bad = f"{at}: {field_path}: expected {_type_name(t)}, got {value!r}"
    if t is bool:
        if not isinstance(value, bool):
            raise CaseError(bad)
        return value
    if t is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise CaseError(bad)
        return value
    if t is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CaseError(bad)
        return float(value)
    if t is str:
        if not isinstance(value, str):
            raise CaseError(bad)
        return value
    if origin is list:
        if not isinstance(value, list):
            raise CaseError(f"{at}: {field_path}: expected a list, got {value!r}")
        return [_list_item(v, field_path, at) for v in value]
    if origin is dict:
        if not isinstance(value, dict):
            raise CaseError(f"{at}: {field_path}: expected a mapping, got {value!r}")
        return {str(k): _config_value(v, f"{field_path}.{k}", at) for k, v in value.items()}
    raise CaseError(f"{at}: {field_path}: unsupported type {t}")  # pragma: no cover


def _list_item(v: Any, field_path: str, at: str) -> Any:
    if field_path == "workload.command" and isinstance(v, dict):
        return v  # {repeat: N, words: [...]}, expanded after the overrides
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise CaseError(f"{at}: {field_path}: expected plain words, got {v!r}")
    return str(v)


def _config_value(v: Any, field_path: str, at: str) -> str:
    # YAML reads `yes` as true; the server wants the word back.
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (str, int, float)):
        return str(v)
    raise CaseError(f"{at}: {field_path}: expected a plain value, got {v!r}")


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _field_type(dotted: str) -> Any | None:
    """Type of 'dataset.keys' / 'focus'; None when there is no such field."""
    if "." in dotted:
        section, name = dotted.split(".", 1)
        cls = SECTIONS.get(section)
        if cls is None or name not in {f.name for f in fields(cls)}:
            return None
        return _hints(cls)[name]
    return TOP_FIELDS.get(dotted)


# ---------------------------------------------------------------- loading
class _Doc:
    """One parsed case file: plain values plus the line of every path."""

    def __init__(self, path: Path):
        self.path = path
        try:
            text = path.read_text()
        except OSError as e:
            raise CaseError(f"{path}: cannot read: {e.strerror}") from None
        self.lines: dict[Path_, int] = {}
        node = _compose(text, str(path))
        if node is None:
            raise CaseError(f"{path}:1: empty case file")
        self.data = _plain(node, (), self.lines, str(path))
        if not isinstance(self.data, dict):
            raise CaseError(f"{path}:1: a case file is a mapping (name:, dataset:, workload: ...)")

    def at(self, *path: Any) -> str:
        for n in range(len(path), -1, -1):
            if path[:n] in self.lines:
                return f"{self.path}:{self.lines[path[:n]]}"
        return f"{self.path}:1"


def _check_document(doc: _Doc) -> None:
    d = doc.data
    for key in d:
        if key not in TOP_KEYS:
            raise CaseError(f"{doc.at(key)}: unknown key {key!r} (known: {', '.join(sorted(TOP_KEYS))})")
    for key in ("name", "dataset", "workload"):
        if key not in d:
            raise CaseError(f"{doc.at()}: missing {key!r}")
    if not isinstance(d["name"], str) or not d["name"] or "@" in d["name"]:
        raise CaseError(f"{doc.at('name')}: name: expected a word without '@', got {d['name']!r}")
    for section, cls in SECTIONS.items():
        body = d.get(section, {})
        if not isinstance(body, dict):
            raise CaseError(f"{doc.at(section)}: {section}: expected a mapping, got {body!r}")
        known = {f.name for f in fields(cls)}
        for key, value in body.items():
            if key not in known:
                raise CaseError(f"{doc.at(section, key)}: unknown key {section}.{key} "
                                f"(known: {', '.join(sorted(known))})")
            _coerce(value, _hints(cls)[key], f"{section}.{key}", doc.at(section, key))
    for key, t in TOP_FIELDS.items():
        if key in d:
            _coerce(d[key], t, key, doc.at(key))
    sizes = d.get("sizes", {})
    if not isinstance(sizes, dict):
        raise CaseError(f"{doc.at('sizes')}: sizes: expected a mapping of size name -> overrides")
    for size, over in sizes.items():
        _check_overrides(doc, over, ("sizes", size))
    matrix = d.get("matrix", {})
    if not isinstance(matrix, dict):
        raise CaseError(f"{doc.at('matrix')}: matrix: expected a mapping of axis -> {{value: overrides}}")
    for axis, choices in matrix.items():
        if not isinstance(choices, dict) or not choices:
            raise CaseError(f"{doc.at('matrix', axis)}: matrix.{axis}: expected a mapping of value -> overrides")
        for value, over in choices.items():
            if any(c in str(value) for c in "@,="):
                raise CaseError(f"{doc.at('matrix', axis, value)}: matrix.{axis}: value {value!r} may not contain @ , =")
            _check_overrides(doc, over, ("matrix", axis, value))


def _check_overrides(doc: _Doc, over: Any, path: Path_) -> None:
    where = ".".join(map(str, path))
    if over is None:
        return
    if not isinstance(over, dict):
        raise CaseError(f"{doc.at(*path)}: {where}: expected a mapping like {{dataset.keys: 200000}}")
    for key, value in over.items():
        t = _field_type(key)
        if t is None:
            raise CaseError(f"{doc.at(*path, key)}: {where}: unknown field {key!r} "
                            f"(use section.field, e.g. dataset.keys, workload.duration_s)")
        _coerce(value, t, key, doc.at(*path, key))


def _apply(d: dict[str, Any], over: dict[str, Any] | None, origin: dict[str, str] | None = None,
           at: Any = None) -> None:
    for key, value in (over or {}).items():
        if origin is not None:
            origin[key] = at(key)  # errors about this value point at the override
        if "." in key:
            section, name = key.split(".", 1)
            d.setdefault(section, {})[name] = copy.deepcopy(value)
        else:
            d[key] = copy.deepcopy(value)


def _expand_command(words: list[Any], value_size: int, at: str) -> list[str]:
    out: list[str] = []
    for w in words:
        if isinstance(w, dict):
            if set(w) != {"repeat", "words"} or not isinstance(w["repeat"], int) or w["repeat"] < 1 \
                    or not isinstance(w["words"], list):
                raise CaseError(f"{at}: workload.command: a group is {{repeat: N, words: [...]}}, got {w!r}")
            out += _expand_command(w["words"], value_size, at) * w["repeat"]
        else:
            out.append("x" * value_size if w == DATA_WORD else str(w))
    return out


def _matrix_choices(doc: _Doc, spec: str) -> dict[str, str]:
    matrix = doc.data.get("matrix", {})
    chosen: dict[str, str] = {}
    for part in filter(None, spec.split(",")):
        axis, eq, value = part.partition("=")
        if not eq:
            raise CaseError(f"{doc.at('matrix')}: variant {spec!r}: expected axis=value, got {part!r}")
        if axis not in matrix:
            raise CaseError(f"{doc.at('matrix')}: no matrix axis {axis!r} in {doc.data['name']} "
                            f"(axes: {', '.join(matrix) or 'none'})")
        if value not in matrix[axis]:
            raise CaseError(f"{doc.at('matrix', axis)}: matrix.{axis} has no value {value!r} "
                            f"(values: {', '.join(map(str, matrix[axis]))})")
        chosen[axis] = value
    return chosen


def _resolve(doc: _Doc, size: str, spec: str) -> Case:
    d = copy.deepcopy({k: v for k, v in doc.data.items() if k not in ("sizes", "matrix")})
    chosen = _matrix_choices(doc, spec)
    # Matrix first, size last: `small` must stay small whatever the matrix says.
    origin: dict[str, str] = {}
    for axis in doc.data.get("matrix", {}):
        if axis in chosen:
            _apply(d, doc.data["matrix"][axis][chosen[axis]], origin,
                   lambda k, a=axis: doc.at("matrix", a, chosen[a], k))
    sizes = doc.data.get("sizes", {})
    if size not in sizes and size != "default":
        raise CaseError(f"{doc.at('sizes')}: {doc.data['name']} has no size {size!r} "
                        f"(sizes: {', '.join(sorted(set(sizes) | {'default'}))})")
    _apply(d, sizes.get(size), origin, lambda k: doc.at("sizes", size, k))

    def at(*path: str) -> str:
        return origin.get(".".join(path)) or doc.at(*path)

    server = {k: _coerce(v, _hints(ServerSpec)[k], f"server.{k}", at("server", k))
              for k, v in d.get("server", {}).items()}
    dataset = {k: _coerce(v, _hints(DatasetSpec)[k], f"dataset.{k}", at("dataset", k))
               for k, v in d["dataset"].items()}
    workload = {k: _coerce(v, _hints(WorkloadSpec)[k], f"workload.{k}", at("workload", k))
                for k, v in d["workload"].items()}
    ds = DatasetSpec(**dataset)
    workload["command"] = _expand_command(workload.get("command", []), ds.value_size,
                                          at("workload", "command"))
    name = doc.data["name"] + (("@" + ",".join(f"{a}={v}" for a, v in chosen.items())) if chosen else "")
    case = Case(name=name, description=d.get("description", ""), server=ServerSpec(**server),
                dataset=ds, workload=WorkloadSpec(**workload), focus=list(d.get("focus", [])),
                size=size, source=_display_path(doc.path), notes=list(d.get("notes", [])),
                matrix=chosen)
    _check_values(case, at)
    return case


def _check_values(case: Case, at: Any) -> None:
    ds, wl = case.dataset, case.workload
    if ds.kind not in DATASET_KINDS:
        raise CaseError(f"{at('dataset', 'kind')}: dataset.kind: {ds.kind!r} is not one of {', '.join(DATASET_KINDS)}")
    if wl.tool not in TOOLS:
        raise CaseError(f"{at('workload', 'tool')}: workload.tool: {wl.tool!r} is not one of {', '.join(TOOLS)}")
    for f, v in (("dataset.keys", ds.keys), ("workload.keyspace", wl.keyspace),
                 ("workload.clients", wl.clients), ("workload.pipeline", wl.pipeline),
                 ("workload.threads", wl.threads), ("server.io_threads", case.server.io_threads)):
        if v < 0 or (v == 0 and f in ("workload.clients", "workload.pipeline", "workload.threads",
                                       "server.io_threads")):
            raise CaseError(f"{at(*f.split('.'))}: {f} = {v} makes no sense for case {case.name} (size {case.size})")
    if ds.kind != "none" and ds.keys == 0:
        raise CaseError(f"{at('dataset', 'keys')}: dataset.keys is 0 for a {ds.kind} dataset")
    if ds.kind == "hashes" and ds.fields < 1:
        raise CaseError(f"{at('dataset', 'fields')}: dataset.fields: a hashes dataset needs fields >= 1")
    if ds.kind == "zsets" and ds.members < 1:
        raise CaseError(f"{at('dataset', 'members')}: dataset.members: a zsets dataset needs members >= 1")
    if wl.tool != "rdb-load" and not wl.command:
        raise CaseError(f"{at('workload')}: workload.command is empty")
    if wl.keyspace > ds.keys and ds.kind != "none" and wl.tool != "rdb-load":
        # Keys past the preloaded range would miss (or, for writes, grow the dataset).
        raise CaseError(f"{at('workload', 'keyspace')}: workload.keyspace {wl.keyspace} > dataset.keys "
                        f"{ds.keys} in {case.name} (size {case.size}): the workload would hit keys never preloaded")
    if any("__rand_int__" in w for w in wl.command) and wl.keyspace == 0:
        raise CaseError(f"{at('workload', 'command')}: the command uses __rand_int__ but workload.keyspace "
                        "is 0: redis-benchmark would not replace it (set keyspace, which becomes -r)")


def _display_path(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(CASES_DIR.parent))
    except ValueError:
        return str(p)


def _find(name_or_path: str) -> tuple[Path, str]:
    base, _, spec = name_or_path.partition("@")
    p = Path(base)
    if p.suffix in (".yaml", ".yml") or "/" in base:
        if not p.is_file():
            raise CaseError(f"{base}: no such case file")
        return p, spec
    for ext in (".yaml", ".yml"):
        if (CASES_DIR / (base + ext)).is_file():
            return CASES_DIR / (base + ext), spec
    raise CaseError(f"no case named {base!r} in {_display_path(CASES_DIR)}/ "
                    f"(known: {', '.join(sorted(_case_files())) or 'none'}); "
                    "`python -m collectors cases list` shows them")


def _case_files() -> dict[str, Path]:
    return {p.stem: p for p in sorted(CASES_DIR.glob("*.y*ml"))}


def load_doc(path: Path) -> _Doc:
    doc = _Doc(path)
    _check_document(doc)
    return doc


def load_case(name_or_path: str, size: str = "default") -> Case:
    """Load a case by name ('mset-50keys', 'mset-50keys@value=100,keys=1M') or path,
    with the size knob (and matrix values) applied. Raises CaseError naming file:line."""
    path, spec = _find(name_or_path)
    return _resolve(load_doc(path), size, spec)


def variants_of(doc: _Doc) -> list[str]:
    """The case name plus every full matrix combination, e.g. mset-50keys@value=10,keys=1M."""
    name, matrix = doc.data["name"], doc.data.get("matrix", {})
    out = [name]
    if matrix:
        axes = list(matrix)
        for combo in itertools.product(*(list(matrix[a]) for a in axes)):
            out.append(name + "@" + ",".join(f"{a}={v}" for a, v in zip(axes, combo)))
    return out


def list_cases() -> list[str]:
    """Every loadable case name, matrix variants included."""
    out: list[str] = []
    for stem, path in _case_files().items():
        out += variants_of(load_doc(path))
    return out


def sizes_of(name_or_path: str) -> list[str]:
    path, _ = _find(name_or_path)
    return sorted(set(load_doc(path).data.get("sizes", {})) | {"default"})


# ---------------------------------------------------------------- CLI
HELP = """\
List cases, show one resolved (size knob and matrix applied), or import a
redis-benchmarks-specification test-suite file as a case.

examples:
  python -m collectors cases list
  python -m collectors cases show mset-50keys --size small
  python -m collectors cases show 'mset-50keys@value=100,keys=1M' --json
  python -m collectors cases import memtier_benchmark-5Mkeys-string-mget-100B-100keys.yml -o cases/mget-suite.yaml

A case name may carry matrix values after '@' (axis=value, comma separated); axes not
given keep the file's base values. Sizes: every case has `small` (CI, seconds to preload)
and `default` (a keyspace far larger than L3). See docs/cases.md.
"""


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m collectors cases", description=HELP,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p_list = sub.add_parser("list", help="every case name (matrix variants included) with its description")
    p_list.add_argument("--names", action="store_true", help="names only, one per line")
    p_show = sub.add_parser("show", help="one case, resolved, as YAML (or --json)")
    p_show.add_argument("name", help="case name, name@axis=value,..., or a path to a .yaml file")
    p_show.add_argument("--size", default="default", help="size knob: small, default, large ... (default: default)")
    p_show.add_argument("--json", action="store_true", help="print JSON instead of YAML")
    p_imp = sub.add_parser("import", help="translate a redis-benchmarks-specification suite file into a case")
    p_imp.add_argument("suite", help="a test-suite .yml file (memtier_benchmark arguments)")
    p_imp.add_argument("-o", "--output", help="write the case YAML here (default: print it)")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "list":
            for path in _case_files().values():
                doc = load_doc(path)
                for name in variants_of(doc):
                    print(name if args.names else f"{name:<44} {doc.data.get('description', '')[:70]}")
        elif args.cmd == "show":
            case = load_case(args.name, args.size)
            d = case.to_json()
            if args.json:
                print(json.dumps(d, indent=2))
            else:
                d["workload"]["command"] = _abbreviate(d["workload"]["command"])
                print(yaml.safe_dump(d, sort_keys=False, width=100), end="")
        else:
            from collectors.workload.suite import SuiteError, import_suite, write_case_yaml
            try:
                res = import_suite(Path(args.suite))
            except SuiteError as e:
                print(f"error: {e}", file=sys.stderr)
                return 2
            text = write_case_yaml(res)
            if args.output:
                Path(args.output).write_text(text)
                load_case(args.output, "small")  # what we wrote must load
                print(f"wrote {args.output} (case {res.case['name']})")
            else:
                print(text)
            for note in res.notes:
                print(f"note: {note}", file=sys.stderr)
    except CaseError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def _abbreviate(words: list[str]) -> str:
    """One readable line: long values shortened, a repeated tail folded, e.g.
    'MSET (key:__rand_int__ <100 B value>) x50'. Use --json for the exact words."""
    short = [w if len(w) <= 40 else f"<{len(w)} B value>" for w in words]
    head, tail = short[:1], short[1:]
    for unit in range(1, 5):
        n = len(tail) // unit if unit <= len(tail) else 0
        if n > 1 and len(tail) % unit == 0 and tail == tail[:unit] * n:
            return " ".join(head + ["(" + " ".join(tail[:unit]) + f") x{n}"])
    return " ".join(short)
