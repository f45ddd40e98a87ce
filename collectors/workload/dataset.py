"""Datasets: preload a case's keys into a running server, fast, and verify they are there.

Preload runs a Lua loop inside the server (EVALSHA over chunks of keys): measured on the
2-core dev host (Redis 7.0), 1M 10-byte strings load in 1.4 s that way (MSET batches inside
Lua), against 1.9 s for one SET per key in Lua, 2.7 s for generated RESP through
`redis-cli --pipe` (0.5 s of it generating), and 1.0 s for DEBUG POPULATE; 10M keys took
57 s with the host loaded by other builds (load average 8 on 2 cores). DEBUG POPULATE
names keys `key:0` where redis-benchmark's `__rand_int__` hits `key:000000000000`
(12 zero-padded digits) - a workload on DEBUG POPULATE keys runs on an empty keyspace.
Key names come from DatasetSpec.key_name, the one place that format lives.

verify() is the guard against that classic mistake: exact DBSIZE, sampled workload keys
exist, with the encoding the case promises (hashtable, skiplist, embstr/raw).
"""
from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from analysis.errors import Failed
from analysis.inputs.case import Case, DatasetSpec
from analysis.inputs.manifest import Preload
from analysis.inputs.repfacts import DatasetCheck, KeySample
from collectors.workload.working_set import EMBSTR_MAX, Llc, dataset_bytes, host_llc

# Elements (string keys, hash fields, zset members) written per EVALSHA: big enough that
# the round trips do not matter, small enough that one call blocks the server < ~0.5 s.
CHUNK_ELEMENTS = 200_000
# Lua's unpack() is limited by the C stack (LUAI_MAXCSTACK 8000): batch arguments below it.
LUA_BATCH_ARGS = 2000

LUA_STRINGS = """
-- ARGV: prefix first last value use_mset
local prefix, first, last, val = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
if ARGV[5] == '1' then
  local args, n = {}, 0
  for i = first, last do
    args[n + 1] = prefix .. string.format('%012d', i); args[n + 2] = val; n = n + 2
    if n >= BATCH then redis.call('MSET', unpack(args, 1, n)); n = 0 end
  end
  if n > 0 then redis.call('MSET', unpack(args, 1, n)) end
else
  -- cluster mode: MSET across hash slots is refused, one SET per key is not
  for i = first, last do redis.call('SET', prefix .. string.format('%012d', i), val) end
end
return last - first + 1
"""

LUA_HASHES = """
-- ARGV: prefix first last value fields
local prefix, first, last, val, nf = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
for i = first, last do
  local key, args, n = prefix .. string.format('%012d', i), {}, 0
  for f = 0, nf - 1 do
    args[n + 1] = 'field:' .. f; args[n + 2] = val; n = n + 2
    if n >= BATCH then redis.call('HSET', key, unpack(args, 1, n)); n = 0 end
  end
  if n > 0 then redis.call('HSET', key, unpack(args, 1, n)) end
end
return last - first + 1
"""

LUA_ZSETS = """
-- ARGV: prefix first last members
local prefix, first, last, nm = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
for i = first, last do
  local key, args, n = prefix .. string.format('%012d', i), {}, 0
  for m = 0, nm - 1 do
    args[n + 1] = m; args[n + 2] = 'member:' .. m; n = n + 2
    if n >= BATCH then redis.call('ZADD', key, unpack(args, 1, n)); n = 0 end
  end
  if n > 0 then redis.call('ZADD', key, unpack(args, 1, n)) end
end
return last - first + 1
"""


class DatasetError(Failed):
    """The dataset is not what the case promises; the message says what and why."""


def _elements_per_key(ds: DatasetSpec) -> int:
    return {"hashes": max(ds.fields, 1), "zsets": max(ds.members, 1)}.get(ds.kind, 1)


def _wait_cluster_ok(client: Any, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    state = "?"
    while time.monotonic() < deadline:
        state = client.execute_command("CLUSTER", "INFO")
        state = state.decode() if isinstance(state, bytes) else str(state)
        if "cluster_state:ok" in state:
            return
        time.sleep(0.1)
    raise DatasetError(f"cluster mode: the server never reported cluster_state:ok within {timeout_s:.0f} s "
                       "(are all 16384 slots assigned to it? CLUSTER ADDSLOTSRANGE 0 16383)")


def preload(case: Case, client: Any, variant: Any, out_dir: Path) -> Preload:
    """Load case.dataset into the server behind `client` (redis.Redis) and write the raw
    exchange (script, every call and reply, timings) to out_dir/preload.txt.
    `variant` (its benchmark_bin/cli_bin) is not needed by the Lua loader; it is part of
    the signature so a loader that runs the variant's own tools can replace it."""
    ds = case.dataset
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    log_path = out_dir / "preload.txt"
    if ds.kind == "none" or ds.keys == 0:
        log_path.write_text(f"case {case.name} (size {case.size}): no dataset to preload\n")
        return Preload()
    if case.server.cluster:
        _wait_cluster_ok(client)
    script, args_of = _script_for(case)
    script = script.replace("BATCH", str(LUA_BATCH_ARGS))
    lines = [f"# stallscope preload: case {case.name} size {case.size}",
             f"# dataset: {ds.kind}, {ds.keys} keys, value_size {ds.value_size} B, fields {ds.fields}, "
             f"members {ds.members}, key names {ds.key_name(0)} .. {ds.key_name(ds.keys - 1)}",
             "# method: EVALSHA of this Lua script over chunks of keys", script.strip(), ""]
    try:
        sha = client.script_load(script)
    except Exception as e:  # redis.ResponseError: scripting disabled or not supported
        raise DatasetError(f"preload: the server refused SCRIPT LOAD ({e}); stallscope preloads with "
                           "Lua (EVALSHA): enable scripting on this server") from None
    per_chunk = max(1, CHUNK_ELEMENTS // _elements_per_key(ds))
    t0 = time.monotonic()
    loaded = 0
    for first in range(0, ds.keys, per_chunk):
        last = min(ds.keys, first + per_chunk) - 1
        argv = args_of(first, last)
        tc = time.monotonic()
        try:
            reply = client.evalsha(sha, 0, *argv)
        except Exception as e:
            log_path.write_text("\n".join(lines + [f"EVALSHA {sha} 0 {_show(argv)} -> ERROR {e}"]) + "\n")
            raise DatasetError(f"preload of {case.name} failed at keys {first}..{last}: {e} "
                               f"(raw log: {log_path})") from None
        loaded += int(reply)
        lines.append(f"EVALSHA {sha} 0 {_show(argv)} -> (integer) {reply}  [{time.monotonic() - tc:.3f} s]")
    seconds = time.monotonic() - t0
    dbsize = client.dbsize()
    lines += ["", f"# loaded {loaded} keys in {seconds:.2f} s ({loaded / max(seconds, 1e-9):,.0f} keys/s); "
              f"DBSIZE {dbsize}"]
    log_path.write_text("\n".join(lines) + "\n")
    return Preload("lua-evalsha", loaded, round(seconds, 3), round(loaded / max(seconds, 1e-9)),
                   dbsize, -(-ds.keys // per_chunk), ds.key_name(0), ds.key_name(ds.keys - 1))


def _show(argv: list[Any]) -> str:
    return " ".join(repr(a) if len(str(a)) <= 24 else f"<{len(str(a))} B>" for a in argv)


def _script_for(case: Case):
    ds = case.dataset
    value = "x" * ds.value_size  # the same bytes the workload's __data__ expands to
    if ds.kind == "strings":
        mset = "0" if case.server.cluster else "1"
        return LUA_STRINGS, lambda a, b: [ds.key_prefix, a, b, value, mset]
    if ds.kind == "hashes":
        return LUA_HASHES, lambda a, b: [ds.key_prefix, a, b, value, ds.fields]
    if ds.kind == "zsets":
        return LUA_ZSETS, lambda a, b: [ds.key_prefix, a, b, ds.members]
    raise DatasetError(f"case {case.name}: dataset.kind {ds.kind!r} cannot be preloaded")


def expected_encoding(ds: DatasetSpec) -> str | None:
    """What OBJECT ENCODING must say: the case's promise, or for strings the one their
    value size implies."""
    if ds.expect_encoding:
        return ds.expect_encoding
    if ds.kind == "strings":
        return "embstr" if ds.value_size <= EMBSTR_MAX else "raw"
    return None


# Servers before 7.0 call a listpack a ziplist; the case means the same layout.
_SAME_ENCODING = {"listpack": {"listpack", "ziplist"}, "ziplist": {"listpack", "ziplist"}}


def verify(case: Case, client: Any, samples: int = 20, seed: int | None = None) -> DatasetCheck:
    """Check the preloaded dataset: DBSIZE exactly dataset.keys, `samples` workload keys
    (first, last and random ones) exist with the promised encoding and size. Returns what
    was checked (saved as dataset/verify.json); raises DatasetError otherwise."""
    ds = case.dataset
    want_enc = expected_encoding(ds)
    dbsize = int(client.dbsize())
    if ds.kind == "none":
        return DatasetCheck(ok=True, dbsize=dbsize)
    rng = random.Random(seed)
    idx = sorted({0, ds.keys - 1} | {rng.randrange(ds.keys) for _ in range(max(samples - 2, 0))})
    names = [ds.key_name(i) for i in idx]
    if dbsize != ds.keys:
        shown = " ".join(names[:3]) + (" ..." if len(names) > 3 else "")
        why = ("were not preloaded" if dbsize == 0 else
               "are not all there, or other keys are" if dbsize < ds.keys else
               "are mixed with keys the case does not know about")
        raise DatasetError(f"case {case.name} (size {case.size}): expected {ds.keys} keys, found {dbsize}: "
                           f"the workload's keys ({shown}) {why}")
    pipe = client.pipeline(transaction=False)
    for k in names:
        pipe.exists(k)
        pipe.object("encoding", k)
        if ds.kind == "strings":
            pipe.strlen(k)
        elif ds.kind == "hashes":
            pipe.hlen(k)
        elif ds.kind == "zsets":
            pipe.zcard(k)
    replies = pipe.execute(raise_on_error=False)
    want_len = {"strings": ds.value_size, "hashes": ds.fields, "zsets": ds.members}[ds.kind]
    unit = {"strings": "bytes", "hashes": "fields", "zsets": "members"}[ds.kind]
    checked, problems, encodings = [], [], {}
    for n, key in enumerate(names):
        exists, enc, length = replies[3 * n: 3 * n + 3]
        enc = enc.decode() if isinstance(enc, bytes) else enc
        exists = bool(exists) and not isinstance(exists, Exception)
        length = None if isinstance(length, Exception) else length
        checked.append(KeySample.from_json({"key": key, "exists": exists, "encoding": enc, unit: length}))
        encodings[enc] = encodings.get(enc, 0) + 1
        if not exists:
            problems.append(f"{key} does not exist")
        elif want_enc and enc not in _SAME_ENCODING.get(want_enc, {want_enc}):
            problems.append(f"{key} is {enc}-encoded, the case promises {want_enc}")
        elif length != want_len:
            problems.append(f"{key} has {length} {unit}, the case promises {want_len}")
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        hint = ""
        if any("encoded" in p for p in problems):
            hint = (": check the case's server.config (hash-max-listpack-entries, zset-max-listpack-entries "
                    "or their ziplist aliases) and dataset.value_size")
        raise DatasetError(f"case {case.name} (size {case.size}): {'; '.join(problems[:3])}{more}{hint}")
    return DatasetCheck(ok=True, dbsize=dbsize, expected_keys=ds.keys, kind=ds.kind,
                        expected_encoding=want_enc, encodings_seen=encodings,
                        key_format=f"{ds.key_prefix}%012d (redis-benchmark __rand_int__)",
                        samples=checked)


# ---------------------------------------------------------------- sizes
def keyspace_bytes_estimate(case: Case) -> int:
    """Rough memory footprint of the dataset, in bytes (about +-30%;
    collectors.workload.working_set.dataset_bytes)."""
    return dataset_bytes(case.dataset)


def l3_warning(case: Case, l3: int | None = None) -> str | None:
    """A sentence for the report when the dataset is not larger than this host's last-level
    cache (so the DRAM-latency effects the case is about cannot show); None when it is, or
    the cache is unknown. `l3`: another cache's bytes (tests replay recorded machines)."""
    llc = host_llc() if l3 is None else Llc(l3)
    est = keyspace_bytes_estimate(case)
    if llc.bytes is None or case.dataset.kind == "none" or est > llc.bytes:
        return None
    ws = case.working_set
    why = (f"size {case.size}: {ws.why_in_cache}" if ws and ws.why_in_cache else
           "sizes small and default outgrow this host's cache")
    return (f"case {case.name} (size {case.size}): the dataset is about {est / 2**20:.1f} MiB, "
            f"not larger than this host's {llc.name} ({llc.bytes / 2**20:.0f} MiB): lookups stay in cache, so the "
            f"DRAM stalls the case is about will mostly be missing ({why})")
