"""memtier's command mixes and key patterns, as a suite's clientconfig writes them, in the
terms of one redis-benchmark run per case.

memtier sends a *mix* on every connection: its default SET/GET pair in `--ratio S:G`, or
several `--command`s weighted by `--command-ratio`. redis-benchmark sends one command per
run and stallscope's runner drives one load generator per case, so a mix becomes a matrix
axis `op` with one variant per command (the base case is the most frequent one); the
notes say what is lost (the interleaving) and how to weight the variants. A transaction
(MULTI ... EXEC) is one unit and cannot be split: refused.

Key patterns (`--key-pattern SET:GET`, `--command-key-pattern X`): R (uniform) is
redis-benchmark's -r; G (gaussian) runs on a uniform window of the same entropy; S and P
(sequential, parallel) run uniform over the same range; Z (zipfian) is refused.
"""
from __future__ import annotations

import math
import shlex
from dataclasses import dataclass

from analysis.errors import UserError
from collectors.workload.memtier_args import MemtierArgs

TRANSACTION = {"MULTI", "EXEC", "WATCH", "DISCARD", "UNWATCH"}
# sqrt(2*pi*e): a gaussian of deviation s has the entropy of a uniform window of s * this.
GAUSS_WINDOW = math.sqrt(2 * math.pi * math.e)


class MixError(UserError, ValueError):
    """A mix or pattern that cannot run as one redis-benchmark command; says why."""


@dataclass
class Part:
    """One command of the client's mix."""
    label: str         # its variant name on the `op` axis
    command: str       # memtier's command text, __key__/__data__ placeholders included
    weight: int        # its share of the mix (memtier --ratio / --command-ratio)
    pattern: str       # memtier key pattern letter for its __key__: R G S P Z


def parts(ca: MemtierArgs, where: str) -> list[Part]:
    """The client's commands in order, with weights and key patterns."""
    if "command" not in ca.opts:
        return _set_get(ca, where)
    out: list[Part] = []
    for name, value in ca.order:
        if name == "command":
            out.append(Part("", value, 1, "R"))
        elif name == "command-ratio" and out:
            try:
                out[-1].weight = int(value)
            except ValueError:
                raise MixError(f"{where}: memtier --command-ratio {value!r} is not an integer") from None
        elif name == "command-key-pattern" and out:
            out[-1].pattern = value.upper()[:1] or "R"
    try:
        verbs = [(shlex.split(p.command) or [""])[0].upper() for p in out]
    except ValueError as e:
        raise MixError(f"{where}: cannot split a --command into words: {e}") from None
    if TRANSACTION & set(verbs):
        raise MixError(f"{where}: the commands form a transaction ({' '.join(verbs)}): memtier sends them in "
                       "order on each connection; redis-benchmark runs one command per run, so the transaction "
                       "cannot be split into variants. Write the case by hand (e.g. one EVAL script doing the "
                       "same work) if that approximation is acceptable")
    seen: dict[str, int] = {}
    for p, verb in zip(out, verbs):
        base = verb.lower() or "cmd"
        seen[base] = seen.get(base, 0) + 1
        p.label = base if seen[base] == 1 else f"{base}-{seen[base]}"
    return [p for p in out if p.weight > 0]


def _set_get(ca: MemtierArgs, where: str) -> list[Part]:
    ratio = ca.get("ratio", "1:10")
    pattern = (ca.get("key-pattern") or "R:R").upper().split(":")
    try:
        sets, gets = (int(x) for x in ratio.split(":"))
    except ValueError:
        raise MixError(f"{where}: memtier --ratio {ratio!r} is not SET:GET (two integers)") from None
    set_pat, get_pat = (pattern + pattern)[:2] if len(pattern) == 1 else pattern[:2]
    out = [Part("set", "SET __key__ __data__", sets, set_pat[:1] or "R"),
           Part("get", "GET __key__", gets, get_pat[:1] or "R")]
    out = [p for p in out if p.weight > 0]
    if not out:
        raise MixError(f"{where}: memtier --ratio {ratio} sends nothing")
    return out


def base_part(ps: list[Part]) -> Part:
    """The variant the case runs by default: the most frequent command (first on ties)."""
    return max(ps, key=lambda p: p.weight)


def mix_note(ps: list[Part], base: Part, default_set_get: bool) -> str:
    total = sum(p.weight for p in ps)
    how = (f"memtier --ratio {':'.join(str(p.weight) for p in ps)} (SET:GET)" if default_set_get else
           "memtier --command mix " + ", ".join(f"{p.command.split()[0]} x{p.weight}" for p in ps))
    return (f"{how} interleaves {len(ps)} commands on every connection; redis-benchmark sends one command per "
            "run and stallscope runs one load generator per case, so the mix is matrix axis op "
            f"({', '.join(p.label for p in ps)}): one variant per command, the base case being {base.label} "
            f"({100 * base.weight / total:.0f}% of the suite's requests). Each variant measures its command alone; "
            "the interleaving (e.g. GETs reading values SETs just rewrote) is not reproduced. To estimate the "
            "mix, weight the variants' per-request costs "
            + " : ".join(f"{p.label} {p.weight}/{total}" for p in ps))


def pattern_keyspace(part: Part, ca: MemtierArgs, where: str, lo: int, hi: int,
                     tag: str = "") -> tuple[int, str | None]:
    """redis-benchmark's -r for this part's key pattern over memtier's [lo, hi], and the
    note (starting with `tag`) that says how it differs (None when it does not)."""
    span = hi - lo + 1
    p = part.pattern
    if p == "R":
        return span, None
    if p == "G":
        sd = float(ca.get("key-stddev") or 0) or (hi - lo) / 6.0   # memtier's default deviation
        window = max(1, min(span, round(sd * GAUSS_WINDOW)))
        return window, (
            f"{tag}memtier key pattern G (gaussian, deviation {sd:.0f} keys around the middle of "
            f"[{lo}, {hi}]) has no redis-benchmark equivalent; it runs uniform over {window} keys "
            f"(-r {window}), the window whose entropy equals the gaussian's (deviation x sqrt(2 pi e)): "
            "about as many distinct keys per second, but no hot middle")
    if p in ("S", "P"):
        what = "sequential" if p == "S" else "parallel: each connection its own slice, in order"
        return span, (
            f"{tag}memtier key pattern {p} ({what}) has no redis-benchmark equivalent; it runs uniform random "
            f"over the same {span} keys (-r {span}). Same keys, different order: in order, successive requests "
            "touch keys preloaded (allocated) next to each other; uniform order has less locality, so expect "
            "more cache misses per request than the suite. Writes to new keys: uniform random repeats keys "
            "(N requests over N keys create about 63% of them), in order creates each once")
    if p == "Z":
        raise MixError(
            f"{where}: memtier key pattern Z (zipfian) for {part.command.split()[0]}: a few hot keys take most "
            "requests and stay in cache; redis-benchmark draws keys uniformly (-r), a different cache regime "
            "with nothing comparable to run instead. Use a case with a smaller keyspace to study the hot set, "
            "or run the suite with memtier_benchmark itself")
    raise MixError(f"{where}: memtier key pattern {p!r} is not one of R, G, S, P, Z")
