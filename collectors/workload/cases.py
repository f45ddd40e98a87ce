"""Cases: cases/*.yaml resolved into `Case` objects (size knob and matrix values applied).

collectors.workload.casefile reads and checks one file (errors name file:line); this
module finds case files by name, applies a size and matrix choice, and checks the values
that only make sense together. The `cases` command is commands.cases.
"""
from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any

from analysis.inputs.case import Case, DatasetSpec, ServerSpec, WorkloadSpec
from analysis.inputs.records import hints
from collectors.workload import working_set
from collectors.workload.casefile import SIZE_KEYS, CaseError, CaseFile, coerce, load_doc
from collectors.workload.overrides import CONFIG_PREFIX, show
from collectors.workload.working_set import Llc

CASES_DIR = Path(__file__).resolve().parents[2] / "cases"
DATASET_KINDS = ("none", "strings", "hashes", "zsets")
TOOLS = ("redis-benchmark", "memtier", "rdb-load")
# Placeholder for a value of dataset.value_size bytes: redis-benchmark sends custom
# command words literally, so the loader writes the value out.
DATA_WORD = "__data__"


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


def _matrix_choices(doc: CaseFile, spec: str) -> dict[str, str]:
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


def _apply_sets(d: dict[str, Any], sets: dict[str, Any], origin: dict[str, str]) -> list[str]:
    """--set values, after the size; workload.keyspace follows a new dataset.keys when the
    case had them equal (the workload spans the keyspace) and --set leaves it alone.
    Returns the notes that say what followed."""
    ds, wl = d.setdefault("dataset", {}), d.setdefault("workload", {})
    spans = wl.get("keyspace", 0) == ds.get("keys", 0) and wl.get("tool") != "rdb-load"
    notes = []
    for key, value in sets.items():
        origin[key] = f"--set {key}={show(value)}"
        if key.startswith(CONFIG_PREFIX):
            d.setdefault("server", {}).setdefault("config", {})[key[len(CONFIG_PREFIX):]] = value
            origin["server.config"] = origin[key]
        else:
            _apply(d, {key: value})
    if "dataset.keys" in sets and "workload.keyspace" not in sets and spans:
        wl["keyspace"] = ds["keys"]
        origin["workload.keyspace"] = origin["dataset.keys"]
        notes.append(f"--set dataset.keys={show(ds['keys'])}: workload.keyspace follows it "
                     "(the case's workload spans its whole keyspace)")
    return notes


def _explicit_keys(doc: CaseFile, chosen: dict[str, str], sets: dict[str, Any],
                   size_over: dict[str, Any]) -> str | None:
    """What set dataset.keys exactly, if anything did: a --set, or a matrix value the size
    did not override (the size wins over the matrix). It wins over a size's multiple of the
    cache: the user asked for that count."""
    if "dataset.keys" in sets:
        return f"--set dataset.keys={show(sets['dataset.keys'])}"
    if "dataset.keys" in size_over:
        return None
    for axis, value in chosen.items():
        if "dataset.keys" in (doc.data["matrix"][axis][value] or {}):
            return f"matrix {axis}={value}"
    return None


def _resolve(doc: CaseFile, size: str, spec: str, sets: dict[str, Any] | None = None,
             llc: Llc | None = None) -> Case:
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
    size_over = dict(sizes.get(size) or {})
    multiple, why_in_cache = (size_over.pop(k, None) for k in SIZE_KEYS)
    _apply(d, size_over, origin, lambda k: doc.at("sizes", size, k))
    # Last, the command line: an explicit --set wins over the size knob.
    set_notes = _apply_sets(d, sets or {}, origin)

    def at(*path: str) -> str:
        return origin.get(".".join(path)) or doc.at(*path)

    server = {k: coerce(v, hints(ServerSpec)[k], f"server.{k}", at("server", k))
              for k, v in d.get("server", {}).items()}
    dataset = {k: coerce(v, hints(DatasetSpec)[k], f"dataset.{k}", at("dataset", k))
               for k, v in d["dataset"].items()}
    workload = {k: coerce(v, hints(WorkloadSpec)[k], f"workload.{k}", at("workload", k))
                for k, v in d["workload"].items()}
    ds = DatasetSpec(**dataset)
    spans = workload.get("keyspace", 0) == ds.keys and workload.get("tool") != "rdb-load"
    ds, ws = working_set.fit(ds, multiple, why_in_cache, llc or working_set.host_llc(),
                             _explicit_keys(doc, chosen, sets or {}, size_over))
    if spans:   # the workload spans the whole keyspace: it follows the keys the cache asked for
        workload["keyspace"] = ds.keys
    workload["command"] = _expand_command(workload.get("command", []), ds.value_size,
                                          at("workload", "command"))
    name = doc.data["name"] + (("@" + ",".join(f"{a}={v}" for a, v in chosen.items())) if chosen else "")
    case = Case(name=name, description=d.get("description", ""), server=ServerSpec(**server),
                dataset=ds, workload=WorkloadSpec(**workload), focus=list(d.get("focus", [])),
                size=size, source=_display_path(doc.path),
                notes=list(d.get("notes", [])) + set_notes, matrix=chosen, overrides=dict(sets or {}),
                working_set=ws)
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
                    f"(known: {', '.join(sorted(case_files())) or 'none'}); "
                    "`stallscope cases list` shows them")


def case_doc(name_or_path: str) -> tuple[CaseFile, str]:
    """The checked case file of a case name or path, and the matrix choice after '@'."""
    path, spec = _find(name_or_path)
    return load_doc(path), spec


def case_files() -> dict[str, Path]:
    return {p.stem: p for p in sorted(CASES_DIR.glob("*.y*ml"))}


def load_case(name_or_path: str, size: str = "default", sets: dict[str, Any] | None = None,
              llc: Llc | int | None = None) -> Case:
    """Load a case by name ('mset-50keys', 'mset-50keys@value=100,keys=1M') or path,
    with the size knob (and matrix values) applied, then `sets` (--set FIELD=VALUE, parsed
    by collectors.workload.overrides). A size's multiple of the last-level cache is taken of
    `llc` (bytes of a planned target machine's cache, --llc), else of this host's.
    Raises CaseError naming file:line (or the --set)."""
    path, spec = _find(name_or_path)
    if isinstance(llc, int):
        llc = Llc(llc, "L3", "--llc")
    return _resolve(load_doc(path), size, spec, sets, llc)


def variants_of(doc: CaseFile) -> list[str]:
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
    for stem, path in case_files().items():
        out += variants_of(load_doc(path))
    return out


def sizes_of(name_or_path: str) -> list[str]:
    path, _ = _find(name_or_path)
    return sorted(set(load_doc(path).data.get("sizes", {})) | {"default"})
