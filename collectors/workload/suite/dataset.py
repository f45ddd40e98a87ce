"""What an imported suite preloads, in the case's terms: dataset kind, key count, value
size, fields/members, and how the suite names those keys (keys.Naming) so that
the commands' key words can be translated to the dataset's names.

The suite's preload is either memtier arguments (`preload_tool`) or literal commands
(`init_commands`); stallscope always preloads with its own Lua loop
(collectors/workload/dataset.py), so only the shape is carried over, and each
difference is a sentence in the notes.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from analysis.errors import UserError
from collectors.workload.command_keys import key_words
from collectors.workload.memtier_args import MEMTIER_DEFAULTS, OUTPUT_OPTS, parse_memtier
from collectors.workload.suite.keys import Naming

KIND_PREFIX = {"strings": "key:", "hashes": "hash:", "zsets": "zset:"}


class PreloadError(UserError, ValueError):
    """A preload that cannot be read; the message names where."""


@dataclass
class SuiteDataset:
    """What the suite preloads, in the case's terms."""
    kind: str = "none"
    keys: int | None = None
    value_size: int = 0
    fields: int = 0
    members: int = 0
    naming: Naming = field(default_factory=Naming)


def suite_dataset(where: str, lines: dict[tuple, int], db: dict[str, Any], notes: list[str]) -> SuiteDataset:
    """`lines`: the line of every path of the suite file (analysis/inputs/yaml_lines.load)."""
    ds = SuiteDataset(keys=(db.get("check") or {}).get("keyspacelen"))
    if db.get("preload_tool"):
        _preload_tool(ds, where, lines, db["preload_tool"], notes)
    elif db.get("init_commands"):
        _init_commands(ds, db["init_commands"], notes)
    ds.keys = int(ds.keys or 0)
    if ds.kind == "none" and ds.keys:
        notes.append(f"dbconfig.check.keyspacelen {ds.keys} without a translatable preload: expected DBSIZE dropped")
        ds.keys = 0
    nm = ds.naming
    nm.kind, nm.keys = ds.kind, ds.keys
    # The suite's own prefix where it has one (redis-benchmark can spell <prefix><12 digits>).
    nm.dataset_prefix = (nm.suite_prefix if nm.suite_prefix and nm.literal is None
                         else KIND_PREFIX.get(ds.kind, "key:"))
    if nm.suite_prefix is not None and ds.kind != "none":
        notes.append(f"the suite names its keys {nm.suite_prefix}<n> for n in [{nm.lo}, {nm.hi}] (memtier: "
                     f"unpadded); the dataset names key n {nm.dataset_prefix}%012d of n - {nm.lo}, because "
                     "redis-benchmark's __rand_int__ fills a key's number only as 12 zero-padded digits: same "
                     "keys, count and access distribution, "
                     + ("same prefix" if nm.dataset_prefix == nm.suite_prefix else
                        f"prefix {nm.dataset_prefix!r} for the suite's empty one"))
    return ds


def _preload_tool(ds: SuiteDataset, where: str, lines: dict[tuple, int], pre: dict[str, Any],
                  notes: list[str]) -> None:
    at = f"{where}:{lines.get(('dbconfig', 'preload_tool'), 1)}"
    if pre.get("tool") != "memtier_benchmark":
        raise PreloadError(f"{at}: preload tool {pre.get('tool')!r} is not memtier_benchmark: cannot "
                           "translate its arguments")
    pa = parse_memtier(str(pre.get("arguments", "")), at)
    commands = pa.opts.get("command", [])
    words = shlex.split(commands[0]) if commands else []
    verb = words[0].upper() if words else ""
    ds.value_size = pa.int("data-size", where)
    ds.naming.preloads = True
    if not words:
        ratio = pa.get("ratio", "1:10")
        if ratio.split(":")[0] in ("0", ""):
            raise PreloadError(f"{where}: preload memtier --ratio {ratio} writes nothing")
        ds.kind, words = "strings", ["SET", "__key__", "__data__"]
    elif verb == "SET":
        ds.kind = "strings"
    elif verb in ("HSET", "HMSET"):
        ds.kind, ds.fields = "hashes", (len(words) - 2) // 2
    elif verb == "ZADD":
        ds.kind, ds.members = "zsets", (len(words) - 2) // 2
    else:
        notes.append(f"preload command {verb} is not one stallscope can preload (strings, hashes, zsets): "
                     "no dataset")
        ds.naming.unheld = (f"the suite preloads them with {verb} (`{commands[0][:80]}`), which stallscope's "
                            "preload cannot write (strings, hashes and zsets only)")
    lo, hi = pa.int("key-minimum", where), pa.int("key-maximum", where)
    _preload_naming(ds, words, pa.get("key-prefix", MEMTIER_DEFAULTS["key-prefix"]), lo, hi, notes)
    if ds.keys is None:
        ds.keys = hi - lo + 1
        notes.append(f"no dbconfig.check.keyspacelen: expected DBSIZE taken from the preload key range "
                     f"[{lo}, {hi}] = {ds.keys}")
    unmapped = [f"--{k}" + (f" {v[-1]}" if v[-1] else "") for k, v in pa.opts.items()
                if k not in ("command", "data-size", "key-minimum", "key-maximum", "key-prefix")
                and k not in OUTPUT_OPTS]
    if unmapped:
        notes.append("preload arguments not carried over (stallscope preloads with a Lua loop in key "
                     f"order, whatever the tool did): {' '.join(unmapped)}")
    if "random-data" in pa.opts:
        notes.append("memtier --random-data: values are random bytes there, 'x' * data-size here "
                     "(same size and encoding)")


def _preload_naming(ds: SuiteDataset, words: list[str], prefix: str, lo: int, hi: int,
                    notes: list[str]) -> None:
    """Where the preload's key word says the suite's keys are: <before><prefix><n>."""
    kw = key_words(words)
    key_at = min(kw.flags) if kw.flags else 1
    kword = words[key_at] if len(words) > key_at else ""
    others = [i for i, w in enumerate(words) if "__key__" in w and i != key_at]
    nm = ds.naming
    if "__key__" not in kword:
        if ds.kind != "none":
            notes.append(f"preload `{' '.join(words)[:80]}` writes the one key {kword!r} again and again "
                         "(memtier numbers its members or fields, not keys): not a dataset stallscope can "
                         "preload; no dataset")
            ds.kind, ds.fields, ds.members = "none", 0, 0
        nm.unheld = (f"the suite's preload builds the key {kword!r} from many memtier requests "
                     f"(`{' '.join(words)[:80]}`), which stallscope's preload cannot build")
        return
    before, _, after = kword.partition("__key__")
    if after:
        if ds.kind != "none":
            notes.append(f"preload key {kword!r} has text after the number: the dataset cannot name those keys; "
                         "no dataset")
            ds.kind, ds.fields, ds.members = "none", 0, 0
        nm.unheld = (f"the suite preloads keys {before}{prefix}<n>{after}, text after the number, which the "
                     "dataset (<prefix><12 digits>) cannot name")
        return
    nm.suite_prefix, nm.lo, nm.hi = before + prefix, lo, hi
    if others and ds.kind != "none":
        notes.append(f"preload `{' '.join(words)[:60]}` also puts the key's number n in argument(s) "
                     f"{', '.join(map(str, others))} (a value, field or member); stallscope's preload writes "
                     f"'x' * value_size, field:i or member:i there instead")


def _init_commands(ds: SuiteDataset, init: Any, notes: list[str]) -> None:
    cmds = init if isinstance(init, list) else [init]
    words = shlex.split(str(cmds[0]))
    verb = words[0].upper() if words else ""
    nm = ds.naming
    nm.preloads = True
    if verb in ("HSET", "HMSET") and len(words) >= 4:
        ds.kind, ds.fields, nm.literal = "hashes", (len(words) - 2) // 2, words[1]
        ds.value_size = len(words[3])
        notes.append(f"init_commands {verb} {nm.literal} with {ds.fields} literal fields: preloaded as "
                     f"field:0..field:{ds.fields - 1} with {ds.value_size}-byte values "
                     f"('{'x' * ds.value_size}' instead of {words[3]!r})")
    elif verb == "ZADD" and len(words) >= 4:
        ds.kind, ds.members, nm.literal = "zsets", (len(words) - 2) // 2, words[1]
        notes.append(f"init_commands ZADD {nm.literal} with {ds.members} members: preloaded as member:0.. "
                     "with scores 0..")
    elif verb == "SET" and len(words) >= 3:
        ds.kind, nm.literal, ds.value_size = "strings", words[1], len(words[2])
    else:
        notes.append(f"init_commands {verb or '(empty)'} ...: not translated; no dataset")
        nm.unheld = (f"the suite preloads it with init_commands {verb or '(empty)'} ..., which stallscope's "
                     "preload cannot write")
    if len(cmds) > 1:
        notes.append(f"init_commands: only the first of {len(cmds)} commands was translated")
        if not nm.unheld:
            nm.unheld = (f"the dataset holds only the key of the first of the suite's {len(cmds)} init_commands "
                         f"({nm.literal!r})")
    if ds.keys is None:
        ds.keys = 1 if ds.kind != "none" else 0
