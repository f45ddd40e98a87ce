"""Which words of a Redis command are key names, and how the command uses them.

A suite's command line mixes keys with everything else (`MGET __key__ 1 2 3`: four keys;
`HEXPIRE __key__ 3600 FIELDS 1 field:1`: one; `GEODIST key 1 2`: one, 1 and 2 are
members), so a word's position decides whether it must name a preloaded key. The answer
is Redis's own: the key specifications of `COMMAND` (Redis >= 7), recorded from a real
server into command_keys.json and interpreted the way the server's
getKeysUsingKeySpecs() does (begin_search index|keyword, find_keys range|keynum).

Re-record (a newer server knows more commands) with
`python -m collectors.workload.command_keys PORT` against a running server.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

TABLE = Path(__file__).with_name("command_keys.json")


@dataclass
class KeyWords:
    """Key positions of one command line (indexes into its words, 0 = the verb)."""
    flags: dict[int, list[str]] = field(default_factory=dict)   # index -> key-spec flags (RO, OW, access...)
    known: bool = True          # the verb is in the recorded table
    incomplete: bool = False    # a key spec the table cannot resolve (SORT BY patterns)

    def writes_only(self, i: int) -> bool:
        """The command overwrites or only inserts into this key without reading it
        (BITOP's destination): it need not exist beforehand."""
        f = self.flags.get(i, [])
        return "OW" in f or ("access" not in f and "RO" not in f and ("insert" in f or "RM" in f))


@lru_cache(maxsize=1)
def _recorded() -> dict[str, Any]:
    return json.loads(TABLE.read_text())


def table() -> dict[str, Any]:
    return _recorded()["commands"]


def recorded_from() -> str:
    """Which server the table comes from: "COMMAND of redis-server 8.0.6"."""
    return str(_recorded().get("recorded_from", "?"))


def key_words(words: list[str]) -> KeyWords:
    """Key positions of `words` (verb first). A verb the table does not know is assumed
    to take one key, its first argument (true of most commands and module commands)."""
    if not words:
        return KeyWords()
    verb = words[0].lower()
    entry = table().get(verb)
    if entry and entry.get("sub") and len(words) > 1:
        entry = table().get(f"{verb}|{words[1].lower()}", entry)
    if entry is None:
        return KeyWords(flags={1: ["RW", "access"]} if len(words) > 1 else {}, known=False)
    out = KeyWords()
    for spec in entry["specs"]:
        _apply_spec(spec, words, out)
    return out


def _apply_spec(spec: list[Any], words: list[str], out: KeyWords) -> None:
    flags, begin, find = spec
    argc = len(words)
    if begin[0] == "index":
        first = begin[1]
    elif begin[0] == "keyword":
        keyword, start = begin[1], begin[2]
        rng = range(start, argc) if start > 0 else range(argc + start, 0, -1)
        first = next((i + 1 for i in rng if 1 <= i < argc and words[i].lower() == keyword.lower()), 0)
        if not first:
            return  # the optional keyword is absent: no keys from this spec
    else:
        out.incomplete = True
        return
    if find[0] == "range":
        lastkey, step, limit = find[1], find[2], find[3]
        if lastkey >= 0:
            last = first + lastkey
        elif not limit:
            last = argc + lastkey
        else:  # e.g. XREAD STREAMS k1 k2 id1 id2: half of what follows are keys
            last = first + (argc - first) // limit + lastkey
    elif find[0] == "keynum":
        idx, firstkey, step = find[1], find[2], find[3]
        try:
            numkeys = int(words[first + idx])
        except (IndexError, ValueError):
            out.incomplete = True
            return
        first += firstkey
        last = first + numkeys - 1
    else:
        out.incomplete = True
        return
    for i in range(first, min(last, argc - 1) + 1, max(step, 1)):
        out.flags.setdefault(i, []).extend(f for f in flags if f not in out.flags.get(i, []))


# ---------------------------------------------------------------- recording
def _text(x: Any) -> Any:
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, list):
        return [_text(i) for i in x]
    return x


def _pairs(flat: list[Any]) -> dict[str, Any]:
    return {str(flat[i]): flat[i + 1] for i in range(0, len(flat) - 1, 2)}


def _compact(spec_raw: list[Any]) -> list[Any]:
    s = _pairs(_text(spec_raw))
    bs, fk = _pairs(s["begin_search"]), _pairs(s["find_keys"])
    bspec, fspec = _pairs(bs.get("spec") or []), _pairs(fk.get("spec") or [])
    if bs["type"] == "index":
        begin = ["index", bspec["index"]]
    elif bs["type"] == "keyword":
        begin = ["keyword", bspec["keyword"], bspec["startfrom"]]
    else:
        begin = ["unknown"]
    if fk["type"] == "range":
        find = ["range", fspec["lastkey"], fspec["keystep"], fspec["limit"]]
    elif fk["type"] == "keynum":
        find = ["keynum", fspec["keynumidx"], fspec["firstkey"], fspec["keystep"]]
    else:
        find = ["unknown"]
    return [s.get("flags", []), begin, find]


def record(client: Any) -> dict[str, Any]:
    """The key specs of every command of the server behind `client` (redis.Redis)."""
    commands: dict[str, Any] = {}
    for name, info in client.command().items():
        subs = info.get("subcommands") or []
        name = str(name).lower()  # module commands (VADD ...) come upper-case
        commands[name] = {"specs": [_compact(k) for k in info.get("key_specifications") or []]}
        if subs:
            commands[name]["sub"] = True
        for sub in subs:
            sub = _text(sub)
            commands[sub[0].lower()] = {"specs": [_compact(k) for k in (sub[8] if len(sub) > 8 else [])]}
    version = client.info("server").get("redis_version", "?")
    return {"recorded_from": f"COMMAND of redis-server {version}",
            "commands": dict(sorted(commands.items()))}


def main(argv: list[str]) -> int:
    import redis
    if len(argv) != 1 or not argv[0].isdigit():
        print("usage: python -m collectors.workload.command_keys PORT  (a server on 127.0.0.1:PORT)",
              file=sys.stderr)
        return 2
    data = record(redis.Redis(host="127.0.0.1", port=int(argv[0])))
    lines = [f"{json.dumps(k)}:{json.dumps(v, separators=(',', ':'))}" for k, v in data["commands"].items()]
    TABLE.write_text(f'{{"recorded_from":{json.dumps(data["recorded_from"])},\n"commands":{{\n'
                     + ",\n".join(lines) + "\n}}\n")
    print(f"{TABLE}: {len(data['commands'])} commands ({data['recorded_from']})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
