"""A case's dataset against the host's last-level cache: how many bytes a dataset takes, which
cache it has to outgrow, and the key count a size asks for on this host.

A size of a case that is about DRAM stalls names its working set as a multiple of the
last-level cache (`llc_multiple: 4` in the case file: at least 4x), its own dataset.keys the
floor; so `default` misses the cache on a 32 MB Zen guest and on a 480 MiB Xeon alike, where a
fixed key count missed one and sat in the other's cache. An explicit key count (--set
dataset.keys=..., a matrix value that sets dataset.keys) wins: the user asked for exactly it.
The cache is read from the host (sysfs), or given for a planned target machine (--llc).
docs/cases.md, "Sizes from the host's cache".
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from analysis.inputs.case import DatasetSpec, WorkingSet
from collectors.host.machine import SYS_CPU, cache_sizes

EMBSTR_MAX = 44  # bytes; longer strings are "raw" (OBJ_ENCODING_EMBSTR_SIZE_LIMIT)


@dataclasses.dataclass(frozen=True)
class Llc:
    """The last-level cache a dataset has to outgrow: one instance's bytes, its level's
    name, and where the figure came from."""
    bytes: int | None
    name: str = "L3"
    source: str = "host"          # host | --llc (a planned target machine)


def host_llc(cpu_dir: Path = SYS_CPU / "cpu0") -> Llc:
    """This host's last-level cache (one instance): L3, or L2 where the host reports no L3
    (some Arm servers keep their system cache out of sysfs)."""
    sizes = cache_sizes(cpu_dir)
    if sizes["l3_bytes"]:
        return Llc(sizes["l3_bytes"], "L3")
    return Llc(sizes["l2_bytes"], "L2")


# ---------------------------------------------------------------- bytes of a dataset
def _jemalloc(n: int) -> int:
    """Round an allocation to jemalloc's size class (what the server really spends)."""
    if n <= 8:
        return 8
    if n <= 128:
        return -(-n // 16) * 16
    step = 1 << (n.bit_length() - 3)  # four classes per doubling
    return -(-n // step) * step


def _sds(n: int) -> int:
    return _jemalloc(n + 4)  # sdshdr8 (3 B) + NUL; longer strings' headers are noise here


def bytes_per_key(ds: DatasetSpec) -> int:
    """Rough memory of one top-level key with its value, in bytes (about +-30%: dict entry,
    bucket pointer, key, object and value, rounded to allocator size classes)."""
    if ds.kind == "none":
        return 0
    per_key = 24 + 8 + _sds(len(ds.key_name(0)))  # dictEntry + bucket slot (load factor ~1) + key sds
    if ds.kind == "strings":
        if ds.value_size <= EMBSTR_MAX:
            per_key += _jemalloc(16 + 3 + ds.value_size + 1)  # robj and sds in one allocation
        else:
            per_key += 16 + _sds(ds.value_size)
    elif ds.kind == "hashes":
        field = _sds(len(f"field:{ds.fields}"))
        per_key += 16 + 8 + ds.fields * (24 + 8 + field + _sds(ds.value_size))
    elif ds.kind == "zsets":
        member = _sds(len(f"member:{ds.members}"))
        # skiplist node (score, backward, ~1.33 levels) + dict entry + member sds
        per_key += 16 + 64 + ds.members * (_jemalloc(8 + 8 + 8 + 16 * 2) + 24 + 8 + member)
    return per_key


def dataset_bytes(ds: DatasetSpec) -> int:
    """The dataset's memory estimate in bytes (0 for none): what is compared with the cache."""
    return 0 if ds.kind == "none" else ds.keys * bytes_per_key(ds)


def keys_for(ds: DatasetSpec, multiple: float, llc_bytes: int) -> int:
    """The fewest keys whose dataset is at least `multiple` x the cache, rounded up to two
    significant digits (12M, not 11,673,420: a readable label, and one snapshot for hosts of
    nearly the same cache)."""
    need = math.ceil(multiple * llc_bytes / bytes_per_key(ds))
    step = 10 ** max(len(str(need)) - 2, 0)
    return -(-need // step) * step


def keys_within(ds: DatasetSpec, fraction: float, llc_bytes: int) -> int:
    """The most keys whose dataset takes at most `fraction` of the cache, rounded down to two
    significant digits: the in-cache control's dataset (a quarter of L3 leaves room for the
    code, the stacks, the load generator and the neighbours)."""
    most = math.floor(fraction * llc_bytes / bytes_per_key(ds))
    step = 10 ** max(len(str(most)) - 2, 0)
    return most // step * step


# ---------------------------------------------------------------- a size, resolved
def fit(ds: DatasetSpec, multiple: float | None, why_in_cache: str | None, llc: Llc,
        explicit: str | None) -> tuple[DatasetSpec, WorkingSet]:
    """The dataset a size asks for on this cache, and the record of how it was chosen.
    `explicit` names what set dataset.keys exactly (a --set or a matrix value), else None."""
    ws = WorkingSet(llc_bytes=llc.bytes, llc_name=llc.name, llc_source=llc.source, multiple=multiple,
                    floor_keys=ds.keys, keys_from=explicit or "size", why_in_cache=why_in_cache)
    if multiple and llc.bytes and not explicit and ds.kind != "none":
        need = keys_for(ds, multiple, llc.bytes)
        if need > ds.keys:
            ds = dataclasses.replace(ds, keys=need)
            ws.keys_from = "llc"
    ws.bytes = dataset_bytes(ds)
    return ds, ws
