"""The files beside a report: pprof profiles and flame graphs (inferno) of each variant's
merged profile reps, and the differential flame graph.

write_profiles writes the comparison's merged profiles as `<variant>.folded`
(Results.artifacts.folded); everything else here is a file transformation of those.
"""
from __future__ import annotations

from pathlib import Path

from analysis.compare.results import Results
from analysis.profile import pprof
from analysis.profile.stacks import Stacks, read_folded, write_folded
from analysis.report import flamegraph


def write_profiles(r: Results, merged: dict[str, Stacks], out: Path) -> None:
    """Each variant's merged profile reps as out/<variant>.folded, recorded in r.artifacts."""
    if not merged:
        return
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for v, s in merged.items():
        write_folded(s, out / f"{v}.folded")
        r.artifacts.folded[v] = f"{v}.folded"


def _period_ns(r: Results) -> int | None:
    """ns one sample is worth (cpu-clock at `frequency_hz`): pprof gives sample counts
    beside the ns with it."""
    hz = r.environment.profiling.frequency_hz if r.environment.profiling else None
    return round(1e9 / hz) if isinstance(hz, (int, float)) and hz > 0 else None


def _pprof(r: Results, out: Path) -> None:
    a = r.artifacts
    for v, name in a.folded.items():
        try:
            s = read_folded(out / name, unit=r.profile.weight_unit, normalized=True)
            pprof.write_pprof(s, out / f"{v}.pb.gz", period_ns=_period_ns(r))
            a.pprof[v] = f"{v}.pb.gz"
        except (OSError, ValueError) as e:
            a.errors.append(f"pprof for {v}: {e}")


def _flamegraphs(r: Results, out: Path) -> None:
    a = r.artifacts
    count = "samples" if r.profile.weight_unit == "samples" else "ns"
    try:
        for v, name in a.folded.items():
            svg = out / f"flame-{v}.svg"
            flamegraph.flamegraph_svg(out / name, svg, title=f"{v}: CPU flame graph "
                                      f"(all threads, profile reps merged)", count_name=count)
            a.flamegraphs[v] = svg.name
        if r.base in a.folded and r.cand in a.folded:
            svg = out / "flame-diff.svg"
            flamegraph.diff_flamegraph_svg(out / a.folded[r.base], out / a.folded[r.cand], svg,
                                           normalize=True, count_name=count,
                                           title=f"Differential flame graph: {r.cand} vs {r.base} "
                                                 f"(normalised; red grew, blue shrank)")
            a.diff_flamegraph = svg.name
    except flamegraph.FlameGraphError as e:
        a.errors.append(f"flame graphs not rendered: {e}")


def render_artifacts(r: Results, out: Path) -> None:
    """Write the pprof files and flame graphs into `out` and record them in r.artifacts."""
    _pprof(r, Path(out))
    _flamegraphs(r, Path(out))
