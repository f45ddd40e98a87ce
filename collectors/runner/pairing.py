"""How a run measures throughput: paired (both variants side by side, the load switched
between them in short ABBA windows) wherever it fits, reps with a server restart each
(unpaired) otherwise, and why.

Pairing cancels the restart, reload and host drift that separate reps carry: on the 2-core
VM an A/A run of the demo case gave -1.1% [-16.4, +28.8] unpaired and a quarter of that
width paired for the same time (docs/statistics.md). So `stallscope run` pairs by default
(`--pairing auto`) and falls back to separate reps only when pairing cannot work, saying
why on stderr and in manifest.json `pairing`:

  - config-only variants (one binary, different +config=) share one server process, the
    differing settings switched with CONFIG SET between windows (mode "config");
  - two builds run as two servers loaded at once (mode "servers"), memory permitting;
  - the same build and config on both sides (an A/A run, which calibrates the host's
    noise) runs as two servers of that build, or as one server with no CONFIG change when
    two datasets do not fit;
  - rdb-load cases measure the server start itself, and more than two variants cannot
    alternate in ABBA windows: separate reps.
"""
from __future__ import annotations

from analysis.inputs.case import Case
from analysis.inputs.manifest import PairedPlan, Pairing, Variant
from analysis.inputs.option_specs import PAIRINGS
from collectors.runner.options import RunError, RunOptions
from collectors.workload.dataset import keyspace_bytes_estimate

# Two servers each hold the dataset (about +-30% estimated), plus the allocator's slack.
TWO_SERVER_HEADROOM = 1.5
TWO_SERVER_SHARE = 0.8      # of the host's memory two loaded servers may plan to use


def identical(a: Variant, b: Variant) -> bool:
    """The same binary with the same config: an A/A comparison."""
    return a.binary_sha256 == b.binary_sha256 and dict(a.config or {}) == dict(b.config or {})


def room_for_two(case: Case | None, memory_bytes: int | None) -> str | None:
    """None when two servers holding the dataset fit this host, else why not."""
    if case is None or not memory_bytes:
        return None
    need = 2 * TWO_SERVER_HEADROOM * keyspace_bytes_estimate(case)
    if need <= TWO_SERVER_SHARE * memory_bytes:
        return None
    return (f"two servers loaded at once would need about {need / 2**30:.1f} GiB for case "
            f"{case.name} (size {case.size}), more than {TWO_SERVER_SHARE:.0%} of this host's "
            f"{memory_bytes / 2**30:.1f} GiB")


def choose(variants: dict[str, Variant], opts: RunOptions, case: Case | None,
           memory_bytes: int | None) -> tuple[PairedPlan | None, Pairing]:
    """The paired plan (None: separate reps) and the decision as recorded. Raises RunError
    when --paired was asked for and pairing cannot work."""
    asked = opts.pairing
    if asked not in PAIRINGS:
        raise RunError(f"--pairing {asked!r}: choose one of {', '.join(PAIRINGS)}")
    names = list(variants)
    aa = len(names) == 2 and identical(*(variants[n] for n in names))
    if asked == "unpaired":
        return None, Pairing("off", asked, "separate reps, as asked (--unpaired)", aa)
    why_not = _cannot_pair(names, case)
    if why_not:
        return _fallback(asked, why_not, aa)
    a, b = (variants[n] for n in names)
    common = dict(window_s=opts.paired_window_s, windows=opts.paired_windows, variants=names,
                  counter="INFO stats total_commands_processed")
    room = room_for_two(case, memory_bytes)
    keys = sorted(set(a.config or {}) | set(b.config or {}))
    keys = [k for k in keys if (a.config or {}).get(k) != (b.config or {}).get(k)]
    if a.binary_sha256 == b.binary_sha256 and (keys or (aa and room)):
        # One process: the differing settings switched by CONFIG SET (none for an A/A run
        # that has no room for two servers: the windows alternate labels only).
        why = (f"one server, {', '.join(keys)} switched by CONFIG SET between windows" if keys
               else f"A/A run on one server with no CONFIG change ({room})")
        return (PairedPlan(mode="config", setting=keys,
                           values={n: {k: (variants[n].config or {}).get(k) for k in keys} for n in names},
                           **common), Pairing("config", asked, why, aa))
    if room:
        return _fallback(asked, room, aa)
    why = ("A/A run: two servers of the same build loaded at once" if aa
           else "two servers loaded at once, the load switched between them")
    return (PairedPlan(mode="servers", values={n: dict(variants[n].config or {}) for n in names},
                       **common), Pairing("servers", asked, why, aa))


def _cannot_pair(names: list[str], case: Case | None) -> str | None:
    if len(names) != 2:
        return f"pairing alternates two variants, this run has {len(names)}"
    if case is not None and case.workload.tool == "rdb-load":
        return "an rdb-load case measures the server start itself: there is no load to switch"
    return None


def _fallback(asked: str, why: str, aa: bool) -> tuple[None, Pairing]:
    if asked == "paired":
        raise RunError(f"--paired: {why}. Run without --paired (separate reps, wider intervals)"
                       + (" or at a smaller --size" if "GiB" in why else ""))
    return None, Pairing("off", asked, f"separate reps, a server start each: {why}", aa)
