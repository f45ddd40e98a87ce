"""Import redis-benchmarks-specification test-suite files as stallscope cases.

Those files (redis/redis-benchmarks-specification, test-suites/*.yml) describe a
benchmark as memtier_benchmark arguments plus a preload recipe. What maps onto the case
model is translated; everything that does not is named, one sentence each, in
Case.notes (and printed by `cases import`), so nobody mistakes the import for the
original benchmark. A suite whose case would measure something else (a key the dataset
cannot hold, a zipfian key pattern, a transaction split apart) is refused with the reason.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from analysis.errors import UserError
from analysis.inputs.yaml_lines import load as load_yaml
from analysis.inputs.yaml_lines import read_text
from collectors.workload.memtier_args import (MEMTIER_DEFAULTS, OUTPUT_OPTS, WORKLOAD_OPTS, MemtierArgs,
                                              MemtierArgsError, parse_memtier)
from collectors.workload.suite.dataset import PreloadError, SuiteDataset, suite_dataset
from collectors.workload.suite.keys import KeyNameError, translate
from collectors.workload.suite.mix import MixError, Part, base_part, mix_note, parts, pattern_keyspace

# Scheduling and packaging metadata of the suite: not a property of the workload.
IGNORED_TOP = ("version", "build-variants", "tested-groups", "priority", "exporter")

# tested-commands -> the functions worth watching (Redis and Valkey spellings).
FOCUS = {
    "mset": ["msetGenericCommand", "dictFindLinkInternal", "dictFind", "hashtableFind", "lookupKey",
             "setKey", "dbAdd"],
    "mget": ["mgetCommand", "lookupKeyRead", "lookupKey", "dictFindLinkInternal", "dictFind", "hashtableFind"],
    "get": ["getCommand", "lookupKeyRead", "dictFind", "hashtableFind"],
    "set": ["setCommand", "setKey", "lookupKeyWrite", "dictFind", "hashtableFind", "dbAdd"],
    "hgetall": ["hgetallCommand", "genericHgetallCommand", "hashTypeNext", "dictNext", "hashtableNext",
                "addHashIteratorCursorToReply", "lookupKeyRead"],
    "hget": ["hgetCommand", "hashTypeGetValue", "dictFind", "hashtableFind", "lookupKeyRead"],
    "zrange": ["zrangeGenericCommand", "genericZrangebyrankCommand", "zslGetElementByRank", "lookupKeyRead"],
}
SMALL_KEYS = {"strings": 200_000, "hashes": 2000, "zsets": 2000}


class SuiteError(UserError):
    """A suite file that cannot be imported; the message names the file."""


@dataclass
class SuiteImport:
    case: dict[str, Any]            # a case document, as cases/*.yaml holds it
    notes: list[str] = field(default_factory=list)
    source: str = ""


def _fold(words: list[Any]) -> list[Any]:
    """MSET k v k v ... -> [MSET, {repeat: 50, words: [k, v]}], as a person would write it."""
    head, tail = words[:1], words[1:]
    for unit in range(1, 5):
        n = len(tail) // unit
        if n > 1 and len(tail) % unit == 0 and tail == tail[:unit] * n:
            return head + [{"repeat": n, "words": tail[:unit]}]
    return words


def _encoding(kind: str, value_size: int, fields: int, members: int, config: dict[str, str]) -> str | None:
    def limit(*names: str, default: int) -> int:
        for n in names:
            if n in config:
                return int(config[n])
        return default
    if kind == "strings":
        return "embstr" if value_size <= 44 else "raw"
    if kind == "hashes":
        small = (fields <= limit("hash-max-listpack-entries", "hash-max-ziplist-entries", default=128)
                 and value_size <= limit("hash-max-listpack-value", "hash-max-ziplist-value", default=64))
        return "listpack" if small else "hashtable"
    if kind == "zsets":
        return "listpack" if members <= limit("zset-max-listpack-entries", "zset-max-ziplist-entries",
                                              default=128) else "skiplist"
    return None


def import_suite(path: Path) -> SuiteImport:
    """Translate one test-suite file; raises SuiteError naming the file (and line)."""
    path = Path(path)
    suite, lines = load_yaml(read_text(path, "test-suite file", SuiteError), str(path), SuiteError)
    if not isinstance(suite, dict) or "clientconfig" not in suite:
        raise SuiteError(f"{path}:1: not a redis-benchmarks-specification test-suite file "
                         "(no clientconfig section)")
    try:
        return _translate(path, lines, suite)
    except (MemtierArgsError, PreloadError) as e:
        raise SuiteError(str(e)) from None


def _translate(path: Path, lines: dict[tuple, int], suite: dict[str, Any]) -> SuiteImport:
    notes: list[str] = []
    db = suite.get("dbconfig") or {}
    client = suite["clientconfig"] or {}
    server = _server(suite, db, notes)
    ds = suite_dataset(str(path), lines, db, notes)
    workload, matrix, max_index = _workload(str(path), lines, client, ds, notes)
    focus = _focus(suite, db, client, notes)
    enc = _encoding(ds.kind, ds.value_size, ds.fields, ds.members, server["config"])
    name = re.sub(r"^memtier_benchmark-", "", str(suite.get("name") or path.stem)).lower()
    name = re.sub(r"[^a-z0-9._-]+", "-", name)
    dataset: dict[str, Any] = {"kind": ds.kind, "keys": ds.keys, "value_size": ds.value_size or 0,
                               "key_prefix": ds.naming.dataset_prefix, "expect_encoding": enc}
    if ds.fields:
        dataset["fields"] = ds.fields
    if ds.members:
        dataset["members"] = ds.members
    description = " ".join(str(suite.get("description", "")).split())
    case = {"name": name,
            "description": description or f"imported from {path.name}",
            "focus": focus,
            "server": server,
            "dataset": dataset,
            "workload": workload,
            **({"matrix": matrix} if matrix else {}),
            "sizes": _sizes(_small_size(ds, workload, matrix, max_index), workload),
            "notes": notes}
    return SuiteImport(case=case, notes=notes, source=path.name)


def _server(suite: dict[str, Any], db: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    config: dict[str, str] = {}
    persistence = False
    for k, raw in (db.get("configuration-parameters") or {}).items():
        v = str(raw)
        if k == "save":
            if v.strip('"\' ') != "":
                persistence = True
                notes.append(f"dbconfig save {v!r}: kept as persistence on (stallscope measures without it by default)")
            continue
        # YAML reads `yes` as true; the server wants the word back.
        config[str(k)] = "yes" if raw is True else "no" if raw is False else v
    topologies = [str(t) for t in suite.get("redis-topologies") or ["oss-standalone"]]
    cluster = "oss-standalone" not in topologies
    if cluster:
        notes.append(f"redis-topologies {topologies}: stallscope runs one cluster-enabled node owning all "
                     "16384 slots, not several shards")
    elif len(topologies) > 1:
        notes.append(f"redis-topologies {topologies}: imported the oss-standalone topology only")
    return {"config": config, "io_threads": 1, "cluster": cluster, "persistence": persistence}


def _workload(where: str, lines: dict[tuple, int], client: dict[str, Any], ds: SuiteDataset,
              notes: list[str]) -> tuple[dict[str, Any], dict[str, Any], int]:
    """The case's workload, its matrix (axis op for a command mix) and the highest dataset
    key index a command names literally (the small size must keep it)."""
    cwhere = f"{where}:{lines.get(('clientconfig',), 1)}"
    if client.get("tool") != "memtier_benchmark":
        raise SuiteError(f"{cwhere}: client tool {client.get('tool')!r} is not memtier_benchmark: "
                         "cannot translate its arguments")
    ca = parse_memtier(str(client.get("arguments", "")), cwhere)
    notes.append("workload.tool memtier: memtier_benchmark runs when installed (PATH or MEMTIER=/path) on the "
                 "keys whose zero-padded names it can spell (collectors/load/memtier.py); otherwise "
                 "redis-benchmark of the variant under test (same commands and connections; different client "
                 "implementation, so absolute ops/s differ)")
    try:
        ps = parts(ca, cwhere)
        base = base_part(ps)
        translated = {p.label: _command(p, ca, cwhere, ds, f"{p.label}: " if len(ps) > 1 else "", notes)
                      for p in ps}
    except (MixError, KeyNameError) as e:
        msg = str(e)
        raise SuiteError(msg if msg.startswith(cwhere) else f"{cwhere}: {msg}") from None
    command, keyspace, _ = translated[base.label]
    lo, hi = ca.int("key-minimum", cwhere), ca.int("key-maximum", cwhere)
    if keyspace and lo != 0:
        notes.append(f"memtier key range [{lo}, {hi}] -> redis-benchmark -r {keyspace}, keys [0, {keyspace})")
    matrix: dict[str, Any] = {}
    if len(ps) > 1:
        notes.append(mix_note(ps, base, "command" not in ca.opts))
        matrix = {"op": {label: {"workload.command": list(_fold(cmd)),  # no YAML anchors
                                 **({"workload.keyspace": ks} if ks != keyspace else {})}
                         for label, (cmd, ks, _) in translated.items()}}
    clients_per_thread, threads = ca.int("clients", cwhere), ca.int("threads", cwhere)
    notes.append(f"memtier -c {clients_per_thread} -t {threads} = {clients_per_thread * threads} connections: "
                 f"redis-benchmark -c {clients_per_thread * threads} --threads {threads}")
    # The suite is a memtier benchmark: ask for memtier; the runner falls back (and says so).
    workload: dict[str, Any] = {"tool": "memtier", "command": _fold(command), "keyspace": keyspace,
                                "clients": clients_per_thread * threads, "pipeline": ca.int("pipeline", cwhere),
                                "threads": threads}
    _length(workload, ca, cwhere, keyspace, clients_per_thread * threads, notes)
    for k, v in ca.opts.items():
        if k in WORKLOAD_OPTS or k in OUTPUT_OPTS:
            continue
        notes.append(f"memtier --{k}{' ' + v[-1] if v[-1] else ''} has no redis-benchmark equivalent; ignored")
    if "command" in ca.opts and "key-pattern" in ca.opts:
        notes.append(f"memtier --key-pattern {ca.get('key-pattern')} applies to its default SET/GET only, not to "
                     "--command (whose pattern is --command-key-pattern, default R): ignored")
    if ca.stray:
        notes.append(f"client arguments not understood, ignored: {' '.join(ca.stray)}")
    return workload, matrix, max(t[2] for t in translated.values())


def _length(workload: dict[str, Any], ca: MemtierArgs, cwhere: str, keyspace: int, connections: int,
            notes: list[str]) -> None:
    if "test-time" in ca.opts:
        workload["duration_s"] = float(ca.int("test-time", cwhere))
    elif "requests" in ca.opts:
        req = ca.get("requests")
        if req == "allkeys":
            workload["requests"] = keyspace
        else:
            workload["requests"] = ca.int("requests", cwhere) * connections
            notes.append(f"memtier -n {req} is per connection: requests = {workload['requests']} in all")
    workload["warmup_s"] = 2.0


def _command(part: Part, ca: MemtierArgs, cwhere: str, ds: SuiteDataset, tag: str,
             notes: list[str]) -> tuple[list[str], int, int]:
    """One command of the client as redis-benchmark words, its keyspace (-r) and the
    highest dataset key index it names literally (-1: none)."""
    words = shlex.split(part.command)
    has_key = any("__key__" in w for w in words)
    tr = translate(words, ds.naming, ca.get("key-prefix", MEMTIER_DEFAULTS["key-prefix"]), tag, notes)
    lo, hi = ca.int("key-minimum", cwhere), ca.int("key-maximum", cwhere)
    keyspace = 0
    if has_key:
        keyspace, note = pattern_keyspace(part, ca, cwhere, lo, hi, tag)
        if note:
            notes.append(note)
    if ds.keys and keyspace > ds.keys:
        notes.append(f"{tag}client key range [{lo}, {hi}] ({hi - lo + 1} keys) is wider than the preloaded "
                     f"{ds.keys}: clipped to {ds.keys}")
        keyspace = ds.keys
    if any("__data__" in w for w in words):
        cds = ca.int("data-size", cwhere)
        if ds.kind == "none":
            ds.value_size = cds
        elif cds != ds.value_size:
            notes.append(f"{tag}client --data-size {cds} differs from the preload's {ds.value_size}: __data__ "
                         f"uses dataset.value_size {ds.value_size}")
    return tr.words, keyspace, tr.max_index

def _focus(suite: dict[str, Any], db: dict[str, Any], client: dict[str, Any],
           notes: list[str]) -> list[str]:
    """Functions worth watching for the tested commands; notes for what is not mapped."""
    tested = [str(c).lower() for c in suite.get("tested-commands") or []]
    focus: list[str] = []
    for c in tested:
        focus += [f for f in FOCUS.get(c, []) if f not in focus]
    missing = [c for c in tested if c not in FOCUS]
    if missing:
        notes.append(f"tested-commands {missing}: no focus functions known; add them to the case by hand")
    ignored = [k for k in IGNORED_TOP if k in suite]
    ignored += [f"{sec}.{k}" for sec, body in (("dbconfig", db), ("clientconfig", client))
                for k in ("resources", "run_image", "timeout", "dataset_name", "dataset_description")
                if k in body]
    if ignored:
        notes.append(f"not mapped (scheduling/packaging metadata): {', '.join(ignored)}")
    return focus


def _small_size(ds: SuiteDataset, workload: dict[str, Any], matrix: dict[str, Any],
                max_index: int) -> dict[str, Any]:
    small: dict[str, Any] = {"workload.duration_s": 3.0, "workload.warmup_s": 1.0}
    # Keep every key a command names literally: they are part of what the suite measures.
    keys = max(SMALL_KEYS.get(ds.kind, 0), max_index + 1)
    if ds.kind in SMALL_KEYS and ds.keys > keys:
        small["dataset.keys"] = keys
        # The size applies after the matrix: one -r for every variant of a mix.
        spans = [workload["keyspace"]] + [v.get("workload.keyspace", 0) for v in matrix.get("op", {}).values()]
        if max(spans):
            small["workload.keyspace"] = min(max(spans), keys)
    if "requests" in workload:
        small["workload.requests"] = min(workload["requests"], 10_000)
    return small


def _sizes(mechanics: dict[str, Any], workload: dict[str, Any]) -> dict[str, Any]:
    """tiny: the mechanics (a few seconds); small: the same at least 2x the host's last-level
    cache where the workload draws random keys over the keyspace (a suite that names its keys
    would not touch more of them); default: the suite's own dataset."""
    tiny = {**mechanics, "why_in_cache": "the mechanics only: seconds to preload, for tests and smoke runs"}
    if workload.get("keyspace"):
        small = {"llc_multiple": 2, **mechanics}
    else:
        small = {**mechanics, "why_in_cache": "the suite names its keys: more of them would not be touched"}
    return {"tiny": tiny, "small": small, "default": {}}


def write_case_yaml(res: SuiteImport) -> str:
    """The imported case as a cases/*.yaml document (header says where it came from)."""
    head = (f"# Imported from redis-benchmarks-specification {res.source}\n"
            "# by `stallscope cases import`; notes: says what did not map.\n")
    body = {k: v for k, v in res.case.items() if k != "notes"}
    text = head + yaml.safe_dump(body, sort_keys=False, width=100, default_flow_style=None)
    if res.case.get("notes"):
        text += yaml.safe_dump({"notes": res.case["notes"]}, sort_keys=False, width=100,
                               default_flow_style=False)
    return text
