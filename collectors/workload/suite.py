"""Import redis-benchmarks-specification test-suite files as stallscope cases.

Those files (redis/redis-benchmarks-specification, test-suites/*.yml) describe a
benchmark as memtier_benchmark arguments plus a preload recipe. What maps onto the case
model is translated; everything that does not is named, one sentence each, in
Case.notes (and printed by `cases import`), so nobody mistakes the import for the
original benchmark.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from collectors.workload.memtier_args import (MEMTIER_DEFAULTS, OUTPUT_OPTS, WORKLOAD_OPTS, MemtierArgs,
                                              MemtierArgsError, parse_memtier)

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
KIND_PREFIX = {"strings": "key:", "hashes": "hash:", "zsets": "zset:"}
SMALL_KEYS = {"strings": 200_000, "hashes": 2000, "zsets": 2000}




class SuiteError(Exception):
    """A suite file that cannot be imported; the message names the file."""


@dataclass
class SuiteImport:
    case: dict[str, Any]            # a case document, as cases/*.yaml holds it
    notes: list[str] = field(default_factory=list)
    source: str = ""


@dataclass
class _Dataset:
    """What the suite preloads, in the case's terms."""
    kind: str = "none"
    keys: int | None = None
    value_size: int = 0
    fields: int = 0
    members: int = 0
    literal_key: str | None = None    # init_commands name one key literally


def _line_of(text: str, needle: str) -> int:
    for n, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return n
    return 1


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
    try:
        text = path.read_text()
    except OSError as e:
        raise SuiteError(f"{path}: cannot read: {e.strerror}") from None
    try:
        suite = yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        line = e.problem_mark.line + 1 if e.problem_mark else 1
        raise SuiteError(f"{path}:{line}: malformed YAML: {e.problem}") from None
    if not isinstance(suite, dict) or "clientconfig" not in suite:
        raise SuiteError(f"{path}:1: not a redis-benchmarks-specification test-suite file "
                         "(no clientconfig section)")
    try:
        return _translate(path, text, suite)
    except MemtierArgsError as e:
        raise SuiteError(str(e)) from None


def _translate(path: Path, text: str, suite: dict[str, Any]) -> SuiteImport:
    notes: list[str] = []
    db = suite.get("dbconfig") or {}
    client = suite["clientconfig"] or {}
    server = _server(suite, db, notes)
    ds = _dataset(str(path), text, db, notes)
    prefix = KIND_PREFIX.get(ds.kind, "key:")
    workload = _workload(str(path), text, client, ds, prefix, notes)
    focus = _focus(suite, db, client, notes)
    enc = _encoding(ds.kind, ds.value_size, ds.fields, ds.members, server["config"])
    name = re.sub(r"^memtier_benchmark-", "", str(suite.get("name") or path.stem)).lower()
    name = re.sub(r"[^a-z0-9._-]+", "-", name)
    dataset: dict[str, Any] = {"kind": ds.kind, "keys": ds.keys, "value_size": ds.value_size or 0,
                               "key_prefix": prefix, "expect_encoding": enc}
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
            "sizes": {"small": _small_size(ds, workload), "default": {}},
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


def _dataset(where: str, text: str, db: dict[str, Any], notes: list[str]) -> _Dataset:
    ds = _Dataset(keys=(db.get("check") or {}).get("keyspacelen"))
    if db.get("preload_tool"):
        _preload_tool(ds, where, text, db["preload_tool"], notes)
    elif db.get("init_commands"):
        _init_commands(ds, db["init_commands"], notes)
    ds.keys = int(ds.keys or 0)
    if ds.kind == "none" and ds.keys:
        notes.append(f"dbconfig.check.keyspacelen {ds.keys} without a translatable preload: expected DBSIZE dropped")
        ds.keys = 0
    return ds


def _preload_tool(ds: _Dataset, where: str, text: str, pre: dict[str, Any], notes: list[str]) -> None:
    at = f"{where}:{_line_of(text, 'preload_tool')}"
    if pre.get("tool") != "memtier_benchmark":
        raise SuiteError(f"{at}: preload tool {pre.get('tool')!r} is not memtier_benchmark: cannot "
                         "translate its arguments")
    pa = parse_memtier(str(pre.get("arguments", "")), at)
    commands = pa.opts.get("command", [])
    words = shlex.split(commands[0]) if commands else []
    verb = words[0].upper() if words else ""
    ds.value_size = pa.int("data-size", where)
    if not words:
        ratio = pa.get("ratio", "1:10")
        if ratio.split(":")[0] in ("0", ""):
            raise SuiteError(f"{where}: preload memtier --ratio {ratio} writes nothing")
        ds.kind = "strings"
    elif verb == "SET":
        ds.kind = "strings"
    elif verb in ("HSET", "HMSET"):
        ds.kind, ds.fields = "hashes", (len(words) - 2) // 2
    elif verb == "ZADD":
        ds.kind, ds.members = "zsets", (len(words) - 2) // 2
    else:
        notes.append(f"preload command {verb} is not one stallscope can preload (strings, hashes, zsets): "
                     "no dataset")
    lo, hi = pa.int("key-minimum", where), pa.int("key-maximum", where)
    if ds.keys is None:
        ds.keys = hi - lo + 1
        notes.append(f"no dbconfig.check.keyspacelen: expected DBSIZE taken from the preload key range "
                     f"[{lo}, {hi}] = {ds.keys}")
    notes.append(f"memtier names keys <key-prefix><n> for n in [{lo}, {hi}] (unpadded, prefix "
                 f"{pa.get('key-prefix', MEMTIER_DEFAULTS['key-prefix'])!r}); stallscope names them "
                 f"<prefix>%012d for n in [0, keys) to match redis-benchmark's __rand_int__: "
                 "same count and access distribution, different names")
    unmapped = [f"--{k}" + (f" {v[-1]}" if v[-1] else "") for k, v in pa.opts.items()
                if k not in ("command", "data-size", "key-minimum", "key-maximum", "key-prefix")
                and k not in OUTPUT_OPTS]
    if unmapped:
        notes.append("preload arguments not carried over (stallscope preloads with a Lua loop in key "
                     f"order, whatever the tool did): {' '.join(unmapped)}")
    if "random-data" in pa.opts:
        notes.append("memtier --random-data: values are random bytes there, 'x' * data-size here "
                     "(same size and encoding)")


def _init_commands(ds: _Dataset, init: Any, notes: list[str]) -> None:
    cmds = init if isinstance(init, list) else [init]
    words = shlex.split(str(cmds[0]))
    verb = words[0].upper() if words else ""
    if verb in ("HSET", "HMSET") and len(words) >= 4:
        ds.kind, ds.fields, ds.literal_key = "hashes", (len(words) - 2) // 2, words[1]
        ds.value_size = len(words[3])
        notes.append(f"init_commands {verb} {ds.literal_key} with {ds.fields} literal fields: preloaded as "
                     f"field:0..field:{ds.fields - 1} with {ds.value_size}-byte values "
                     f"('{'x' * ds.value_size}' instead of {words[3]!r})")
    elif verb == "ZADD" and len(words) >= 4:
        ds.kind, ds.members, ds.literal_key = "zsets", (len(words) - 2) // 2, words[1]
        notes.append(f"init_commands ZADD {ds.literal_key} with {ds.members} members: preloaded as member:0.. "
                     "with scores 0..")
    elif verb == "SET" and len(words) >= 3:
        ds.kind, ds.literal_key, ds.value_size = "strings", words[1], len(words[2])
    else:
        notes.append(f"init_commands {verb or '(empty)'} ...: not translated; no dataset")
    if len(cmds) > 1:
        notes.append(f"init_commands: only the first of {len(cmds)} commands was translated")
    if ds.keys is None:
        ds.keys = 1 if ds.kind != "none" else 0


def _workload(where: str, text: str, client: dict[str, Any], ds: _Dataset, prefix: str,
              notes: list[str]) -> dict[str, Any]:
    cwhere = f"{where}:{_line_of(text, 'clientconfig')}"
    if client.get("tool") != "memtier_benchmark":
        raise SuiteError(f"{cwhere}: client tool {client.get('tool')!r} is not memtier_benchmark: "
                         "cannot translate its arguments")
    ca = parse_memtier(str(client.get("arguments", "")), cwhere)
    notes.append("workload.tool memtier: memtier_benchmark runs when installed (PATH or MEMTIER=/path) on the "
                 "keys whose zero-padded names it can spell (collectors/load/memtier.py); otherwise "
                 "redis-benchmark of the variant under test (same commands and connections; different client "
                 "implementation, so absolute ops/s differ)")
    command, keyspace = _command(ca, cwhere, ds, prefix, notes)
    clients_per_thread, threads = ca.int("clients", cwhere), ca.int("threads", cwhere)
    notes.append(f"memtier -c {clients_per_thread} -t {threads} = {clients_per_thread * threads} connections: "
                 f"redis-benchmark -c {clients_per_thread * threads} --threads {threads}")
    # The suite is a memtier benchmark: ask for memtier; the runner falls back (and says so).
    workload: dict[str, Any] = {"tool": "memtier", "command": _fold(command), "keyspace": keyspace,
                                "clients": clients_per_thread * threads, "pipeline": ca.int("pipeline", cwhere),
                                "threads": threads}
    if "test-time" in ca.opts:
        workload["duration_s"] = float(ca.int("test-time", cwhere))
    elif "requests" in ca.opts:
        req = ca.get("requests")
        if req == "allkeys":
            workload["requests"] = keyspace
        else:
            workload["requests"] = ca.int("requests", cwhere) * clients_per_thread * threads
            notes.append(f"memtier -n {req} is per connection: requests = {workload['requests']} in all")
    workload["warmup_s"] = 2.0
    for k, v in ca.opts.items():
        if k in WORKLOAD_OPTS or k in OUTPUT_OPTS:
            continue
        notes.append(f"memtier --{k}{' ' + v[-1] if v[-1] else ''} has no redis-benchmark equivalent; ignored")
    if ca.stray:
        notes.append(f"client arguments not understood, ignored: {' '.join(ca.stray)}")
    return workload


def _command(ca: MemtierArgs, cwhere: str, ds: _Dataset, prefix: str,
             notes: list[str]) -> tuple[list[str], int]:
    """The client's --command as redis-benchmark words, and its keyspace (-r)."""
    commands = ca.opts.get("command", [])
    if not commands:
        raise SuiteError(f"{cwhere}: clientconfig has no --command: memtier's default SET/GET mix is not "
                         "translated")
    if len(commands) > 1:
        notes.append(f"{len(commands)} --command options (a command mix): only the first, {commands[0]!r}, "
                     "is translated; redis-benchmark runs one command per invocation")
    words = shlex.split(commands[0])
    has_key = any("__key__" in w for w in words)
    if not has_key and ds.literal_key and ds.literal_key in words:
        words = [f"{prefix}__rand_int__" if w == ds.literal_key else w for w in words]
        notes.append(f"literal key {ds.literal_key} renamed to {prefix}000000000000 (the one preloaded key; "
                     "redis-benchmark -r 1)")
    command = [w.replace("__key__", f"{prefix}__rand_int__") for w in words]
    lo, hi = ca.int("key-minimum", cwhere), ca.int("key-maximum", cwhere)
    keyspace = (hi - lo + 1) if has_key else (1 if ds.literal_key else 0)
    if ds.keys and keyspace > ds.keys:
        notes.append(f"client key range [{lo}, {hi}] ({hi - lo + 1} keys) is wider than the preloaded "
                     f"{ds.keys}: clipped to {ds.keys}")
        keyspace = ds.keys
    if has_key and lo != 0:
        notes.append(f"memtier key range [{lo}, {hi}] -> redis-benchmark -r {keyspace}, keys [0, {keyspace})")
    pattern = ca.get("command-key-pattern") or ca.get("key-pattern") or "R"
    if pattern.split(":")[0] != "R":
        notes.append(f"memtier key pattern {pattern!r} has no redis-benchmark equivalent; used uniform random -r")
    if any("__data__" in w for w in command):
        cds = ca.int("data-size", cwhere)
        if ds.kind == "none":
            ds.value_size = cds
        elif cds != ds.value_size:
            notes.append(f"client --data-size {cds} differs from the preload's {ds.value_size}: __data__ uses "
                         f"dataset.value_size {ds.value_size}")
    return command, keyspace


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


def _small_size(ds: _Dataset, workload: dict[str, Any]) -> dict[str, Any]:
    small: dict[str, Any] = {"workload.duration_s": 3.0, "workload.warmup_s": 1.0}
    if ds.kind in SMALL_KEYS and ds.keys > SMALL_KEYS[ds.kind]:
        small["dataset.keys"] = SMALL_KEYS[ds.kind]
        small["workload.keyspace"] = min(workload["keyspace"], SMALL_KEYS[ds.kind])
    if "requests" in workload:
        small["workload.requests"] = min(workload["requests"], 10_000)
    return small


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
