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

# memtier_benchmark defaults (memtier_benchmark --help, 2.x) for options a suite omits.
MEMTIER_DEFAULTS = {"clients": 50, "threads": 4, "key-minimum": 0, "key-maximum": 10_000_000,
                    "data-size": 32, "key-prefix": "memtier-", "pipeline": 1}
SHORT = {"c": "clients", "t": "threads", "n": "requests", "d": "data-size", "x": "run-count",
         "P": "protocol", "s": "server", "p": "port", "R": "random-data", "S": "unix-socket"}
FLAGS = {"hide-histogram", "random-data", "distinct-client-seed", "cluster-mode", "no-expiry",
         "randomize", "reconnect-on-error", "verify-only", "hdr-file-prefix-none"}
# Output and transport options: nothing to translate, and nothing lost for a case.
OUTPUT_OPTS = {"hide-histogram", "print-percentiles", "json-out-file", "hdr-file-prefix",
               "run-count", "server", "port", "unix-socket", "protocol", "print-all-runs"}
# Options whose meaning the workload already carries.
WORKLOAD_OPTS = {"command", "clients", "threads", "pipeline", "test-time", "requests", "key-minimum",
                 "key-maximum", "key-prefix", "data-size", "command-key-pattern", "key-pattern", "ratio"}
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
class MemtierArgs:
    opts: dict[str, list[str]]      # long option name -> values, in order
    stray: list[str]                # words that are not options

    def get(self, name: str, default: Any = None) -> Any:
        return self.opts[name][-1] if name in self.opts else default

    def int(self, name: str, where: str) -> int:
        v = self.get(name, MEMTIER_DEFAULTS.get(name))
        try:
            return int(v)
        except (TypeError, ValueError):
            raise SuiteError(f"{where}: memtier --{name} {v!r} is not an integer") from None


def parse_memtier(arguments: str, where: str) -> MemtierArgs:
    """memtier_benchmark's command line (as one string, shell-quoted) -> options."""
    try:
        words = shlex.split(arguments or "")
    except ValueError as e:
        raise SuiteError(f"{where}: cannot split the memtier arguments: {e}") from None
    opts: dict[str, list[str]] = {}
    stray: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("--") or (w.startswith("-") and len(w) == 2 and w[1] in SHORT):
            name, eq, value = (w[2:].partition("=") if w.startswith("--") else (SHORT[w[1]], "", ""))
            if not eq:
                if name in FLAGS:
                    value = ""
                elif i + 1 < len(words):
                    i += 1
                    value = words[i]
                else:
                    raise SuiteError(f"{where}: memtier option {w} has no value")
            opts.setdefault(name, []).append(value)
        else:
            stray.append(w)
        i += 1
    return MemtierArgs(opts, stray)


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
    notes: list[str] = []
    where = str(path)
    db = suite.get("dbconfig") or {}
    client = suite["clientconfig"] or {}

    # --- server ------------------------------------------------------------------
    config: dict[str, str] = {}
    persistence = False
    for k, v in (db.get("configuration-parameters") or {}).items():
        v = str(v)
        if k == "save":
            if v.strip('"\' ') != "":
                persistence = True
                notes.append(f"dbconfig save {v!r}: kept as persistence on (stallscope measures without it by default)")
            continue
        config[str(k)] = "yes" if v is True else "no" if v is False else v
    topologies = [str(t) for t in suite.get("redis-topologies") or ["oss-standalone"]]
    cluster = "oss-standalone" not in topologies
    if cluster:
        notes.append(f"redis-topologies {topologies}: stallscope runs one cluster-enabled node owning all "
                     "16384 slots, not several shards")
    elif len(topologies) > 1:
        notes.append(f"redis-topologies {topologies}: imported the oss-standalone topology only")

    # --- dataset ------------------------------------------------------------------
    check = db.get("check") or {}
    keys = check.get("keyspacelen")
    kind, value_size, fields, members = "none", 0, 0, 0
    literal_key = None
    pre = db.get("preload_tool") or {}
    init = db.get("init_commands")
    if pre:
        if pre.get("tool") != "memtier_benchmark":
            raise SuiteError(f"{where}:{_line_of(text, 'preload_tool')}: preload tool {pre.get('tool')!r} "
                             "is not memtier_benchmark: cannot translate its arguments")
        pa = parse_memtier(str(pre.get("arguments", "")), f"{where}:{_line_of(text, 'preload_tool')}")
        commands = pa.opts.get("command", [])
        words = shlex.split(commands[0]) if commands else []
        verb = words[0].upper() if words else ""
        value_size = pa.int("data-size", where)
        if not words:
            ratio = pa.get("ratio", "1:10")
            if ratio.split(":")[0] in ("0", ""):
                raise SuiteError(f"{where}: preload memtier --ratio {ratio} writes nothing")
            kind = "strings"
        elif verb == "SET":
            kind = "strings"
        elif verb in ("HSET", "HMSET"):
            kind, fields = "hashes", (len(words) - 2) // 2
        elif verb == "ZADD":
            kind, members = "zsets", (len(words) - 2) // 2
        else:
            notes.append(f"preload command {verb} is not one stallscope can preload (strings, hashes, zsets): "
                         "no dataset")
        lo, hi = pa.int("key-minimum", where), pa.int("key-maximum", where)
        if keys is None:
            keys = hi - lo + 1
            notes.append(f"no dbconfig.check.keyspacelen: expected DBSIZE taken from the preload key range "
                         f"[{lo}, {hi}] = {keys}")
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
    elif init:
        cmds = init if isinstance(init, list) else [init]
        words = shlex.split(str(cmds[0]))
        verb = words[0].upper() if words else ""
        if verb in ("HSET", "HMSET") and len(words) >= 4:
            kind, fields, literal_key = "hashes", (len(words) - 2) // 2, words[1]
            value_size = len(words[3])
            notes.append(f"init_commands {verb} {literal_key} with {fields} literal fields: preloaded as "
                         f"field:0..field:{fields - 1} with {value_size}-byte values "
                         f"('{'x' * value_size}' instead of {words[3]!r})")
        elif verb == "ZADD" and len(words) >= 4:
            kind, members, literal_key = "zsets", (len(words) - 2) // 2, words[1]
            notes.append(f"init_commands ZADD {literal_key} with {members} members: preloaded as member:0.. "
                         "with scores 0..")
        elif verb == "SET" and len(words) >= 3:
            kind, literal_key, value_size = "strings", words[1], len(words[2])
        else:
            notes.append(f"init_commands {verb or '(empty)'} ...: not translated; no dataset")
        if len(cmds) > 1:
            notes.append(f"init_commands: only the first of {len(cmds)} commands was translated")
        if keys is None:
            keys = 1 if kind != "none" else 0
    keys = int(keys or 0)
    if kind == "none" and keys:
        notes.append(f"dbconfig.check.keyspacelen {keys} without a translatable preload: expected DBSIZE dropped")
        keys = 0
    prefix = KIND_PREFIX.get(kind, "key:")
    enc = _encoding(kind, value_size, fields, members, config)

    # --- workload ------------------------------------------------------------------
    if client.get("tool") != "memtier_benchmark":
        raise SuiteError(f"{where}:{_line_of(text, 'clientconfig')}: client tool {client.get('tool')!r} is not "
                         "memtier_benchmark: cannot translate its arguments")
    cwhere = f"{where}:{_line_of(text, 'clientconfig')}"
    ca = parse_memtier(str(client.get("arguments", "")), cwhere)
    notes.append("workload.tool memtier: memtier_benchmark runs when installed (PATH or MEMTIER=/path) on the "
                 "keys whose zero-padded names it can spell (collectors/memtier.py); otherwise redis-benchmark "
                 "of the variant under test (same commands and connections; different client "
                 "implementation, so absolute ops/s differ)")
    commands = ca.opts.get("command", [])
    if not commands:
        raise SuiteError(f"{cwhere}: clientconfig has no --command: memtier's default SET/GET mix is not "
                         "translated")
    if len(commands) > 1:
        notes.append(f"{len(commands)} --command options (a command mix): only the first, {commands[0]!r}, "
                     "is translated; redis-benchmark runs one command per invocation")
    words = shlex.split(commands[0])
    has_key = any("__key__" in w for w in words)
    if not has_key and literal_key and literal_key in words:
        words = [f"{prefix}__rand_int__" if w == literal_key else w for w in words]
        notes.append(f"literal key {literal_key} renamed to {prefix}000000000000 (the one preloaded key; "
                     "redis-benchmark -r 1)")
    command = [w.replace("__key__", f"{prefix}__rand_int__") for w in words]
    lo, hi = ca.int("key-minimum", cwhere), ca.int("key-maximum", cwhere)
    keyspace = (hi - lo + 1) if has_key else (1 if literal_key else 0)
    if keys and keyspace > keys:
        notes.append(f"client key range [{lo}, {hi}] ({hi - lo + 1} keys) is wider than the preloaded "
                     f"{keys}: clipped to {keys}")
        keyspace = keys
    if has_key and lo != 0:
        notes.append(f"memtier key range [{lo}, {hi}] -> redis-benchmark -r {keyspace}, keys [0, {keyspace})")
    pattern = ca.get("command-key-pattern") or ca.get("key-pattern") or "R"
    if pattern.split(":")[0] != "R":
        notes.append(f"memtier key pattern {pattern!r} has no redis-benchmark equivalent; used uniform random -r")
    if any("__data__" in w for w in command):
        cds = ca.int("data-size", cwhere)
        if kind == "none":
            value_size = cds
        elif cds != value_size:
            notes.append(f"client --data-size {cds} differs from the preload's {value_size}: __data__ uses "
                         f"dataset.value_size {value_size}")
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

    # --- the rest ------------------------------------------------------------------
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

    name = re.sub(r"^memtier_benchmark-", "", str(suite.get("name") or path.stem)).lower()
    name = re.sub(r"[^a-z0-9._-]+", "-", name)
    dataset: dict[str, Any] = {"kind": kind, "keys": keys, "value_size": value_size or 0,
                               "key_prefix": prefix, "expect_encoding": enc}
    if fields:
        dataset["fields"] = fields
    if members:
        dataset["members"] = members
    small: dict[str, Any] = {"workload.duration_s": 3.0, "workload.warmup_s": 1.0}
    if kind in SMALL_KEYS and keys > SMALL_KEYS[kind]:
        small["dataset.keys"] = SMALL_KEYS[kind]
        small["workload.keyspace"] = min(keyspace, SMALL_KEYS[kind])
    if "requests" in workload:
        small["workload.requests"] = min(workload["requests"], 10_000)
    description = " ".join(str(suite.get("description", "")).split())
    case = {"name": name,
            "description": description or f"imported from {path.name}",
            "focus": focus,
            "server": {"config": config, "io_threads": 1, "cluster": cluster, "persistence": persistence},
            "dataset": dataset,
            "workload": workload,
            "sizes": {"small": small, "default": {}},
            "notes": notes}
    return SuiteImport(case=case, notes=notes, source=path.name)


def write_case_yaml(res: SuiteImport) -> str:
    """The imported case as a cases/*.yaml document (header says where it came from)."""
    head = (f"# Imported from redis-benchmarks-specification {res.source}\n"
            "# by `python -m collectors cases import`; notes: says what did not map.\n")
    body = {k: v for k, v in res.case.items() if k != "notes"}
    text = head + yaml.safe_dump(body, sort_keys=False, width=100, default_flow_style=None)
    if res.case.get("notes"):
        text += yaml.safe_dump({"notes": res.case["notes"]}, sort_keys=False, width=100,
                               default_flow_style=False)
    return text
