"""`stallscope run --layouts N`: every variant built N times, its objects linked in N orders
(layout shuffle numbers 1..N, collectors/variants/linkorder.py), and the paired reps spread over them.

Paired rep k runs layout seed ((k - 1) mod N) + 1 of both variants, so layout i of the
baseline is always measured against layout i of the candidate, the layouts take turns
(slow drift of the host hits all alike) and each layout gets --reps reps. The manifest
records each variant's builds (`variants.<name>.layouts`) and each rep's seed
(`schedule[].layout`); analysis/compare/layouts.py gives the change over layouts.

Seeds are 1..N rather than drawn: a second run with the same N reuses the cached builds,
and the layouts are the same ones on every machine (a seed names an order of the objects
the Makefile lists, not a random state of this host).
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from analysis.inputs.manifest import Variant
from collectors.runner.options import RunError, RunOptions
from collectors.variants.builder import build_variant
from collectors.variants.spec import VariantSpec

Log = Callable[[str], None]


def layout_seeds(n: int) -> list[int]:
    """The seeds of N layouts."""
    return list(range(1, n + 1))


def rep_layout(opts: RunOptions, index: int) -> int | None:
    """The seed paired rep number `index` (0-based) runs; None without --layouts."""
    n = opts.layouts
    return layout_seeds(n)[index % n] if n > 1 else None


def check(opts: RunOptions, specs: list[VariantSpec]) -> None:
    """RunError for --layouts where it cannot work (before anything is built)."""
    if opts.layouts < 1:
        raise RunError("--layouts must be at least 1")
    if opts.layouts == 1:
        return
    if opts.pairing == "unpaired" or len(specs) != 2:
        raise RunError(f"--layouts {opts.layouts} pairs layout i of one variant with layout i of "
                       f"the other in paired reps: give two variants and no --unpaired")
    given = [s.name for s in specs if s.kind == "binary"]
    if given:
        raise RunError(f"--layouts {opts.layouts}: variant(s) {', '.join(given)} are prebuilt "
                       f"binaries (bin:); a layout is a link order, so only debsrc:, git: and dir: "
                       f"variants can have several")
    fixed = [s.name for s in specs if s.layout is not None]
    if fixed:
        raise RunError(f"--layouts {opts.layouts}: variant(s) {', '.join(fixed)} already name a "
                       f"+layout=; give --layouts or +layout=, not both")
    if opts.precision is not None:
        raise RunError("--layouts and --precision do not combine yet: --precision plans reps "
                       "for one interval over reps, --layouts gives one over layouts")


def build_layouts(spec: VariantSpec, seeds: list[int], log: Log) -> Variant:
    """Every layout's build of `spec`: the first layout's record, with `layouts` naming all
    of them (seed, server binary, its sha256)."""
    built = [build_variant(dataclasses.replace(spec, layout=s), log=log) for s in seeds]
    first = built[0]
    first.layouts = [{"seed": s, "server_bin": v.server_bin, "binary_sha256": v.binary_sha256}
                     for s, v in zip(seeds, built)]
    return first


def build_all(specs: list[VariantSpec], opts: RunOptions, log: Log) -> dict[str, Variant]:
    """The run's variants: as today with one layout, else each built in every layout."""
    if opts.layouts == 1:
        return {s.name: build_variant(s, log=log) for s in specs}
    seeds = layout_seeds(opts.layouts)
    log(f"stallscope run: {opts.layouts} layouts of every variant (layout shuffle numbers "
        f"{', '.join(map(str, seeds))})")
    return {s.name: build_layouts(s, seeds, log) for s in specs}


def variants_for(variants: dict[str, Variant], seed: int | None) -> dict[str, Variant]:
    """The variants as a rep of layout `seed` runs them: each one's server binary of that
    layout (the variants themselves for a rep without a layout)."""
    if seed is None:
        return variants
    out = {}
    for name, v in variants.items():
        lay = next((x for x in v.layouts or [] if x.get("seed") == seed), None)
        if lay is None:
            raise RunError(f"variant {name} has no build of layout {seed} "
                           f"(its layouts: {[x.get('seed') for x in v.layouts or []]})")
        out[name] = dataclasses.replace(v, server_bin=lay["server_bin"],
                                        binary_sha256=lay["binary_sha256"],
                                        layout={"seed": seed})
    return out
