"""The plan of a sweep, made before anything is built or started: every point resolved into
its case (a bad axis value fails here, in a second), how it will be measured, its peak
memory and wall time, and whether it fits this host. `plan_lines` is what the sweep prints
before it starts; points that do not fit are refused unless --skip-unfit."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from analysis.errors import UserError
from analysis.inputs.case import Case
from analysis.inputs.host import HostSummary
from analysis.sweep.sweep_manifest import Estimate, SweepAxis, SweepPoint
from analysis.sweep.sweep_options import SweepOptions
from collectors.variants.spec import VariantSpec, parse_variant
from collectors.runner.progress import duration
from collectors.runner.snapshot import loader_sha256, snapshot_key
from collectors.sweep.axes import Axis, PointSpec, matrix_axes, parse_axis, points
from collectors.sweep.estimate import estimate
from collectors.workload.casefile import CaseError
from collectors.workload.cases import case_doc, load_case
from collectors.workload.overrides import show

BUILD_S = 180.0      # one new Debian-source build on 2 cores (1.5-3 min)


class PlanError(UserError):
    """A sweep that cannot start as asked; the message says what and how to fix it."""


@dataclass
class PlannedPoint:
    spec: PointSpec
    case: Case
    estimate: Estimate
    skip: str | None = None          # why it will not run (does not fit)


@dataclass
class Plan:
    case: str
    size: str
    variants: list[str]
    axes: list[Axis]
    sets: dict[str, Any]
    opts: SweepOptions
    host: HostSummary
    points: list[PlannedPoint] = field(default_factory=list)
    config_only: bool = False

    @property
    def runnable(self) -> list[PlannedPoint]:
        return [p for p in self.points if p.skip is None]

    def keyspace_axis(self, a: Axis) -> bool:
        """dataset.keys changes along `a` (between points equal on every other axis)."""
        groups: dict[tuple, set[int]] = {}
        for p in self.points:
            key = tuple(p.spec.labels[b.name] for b in self.axes if b.name != a.name)
            groups.setdefault(key, set()).add(p.case.dataset.keys)
        return any(len(v) > 1 for v in groups.values())

    def sweep_axes(self) -> list[SweepAxis]:
        return [SweepAxis(a.name, a.kind, [v.label for v in a.values], keyspace=self.keyspace_axis(a))
                for a in self.axes]

    def sweep_points(self) -> list[SweepPoint]:
        return [SweepPoint(**p.spec.identity(), sets=p.spec.sets, estimate=p.estimate,
                           status="skipped" if p.skip else "pending", reason=p.skip)
                for p in self.points]


def config_only(specs: list[VariantSpec]) -> bool:
    """Variants that differ only in +config= run the same binary (paired in one process)."""
    def build(s: VariantSpec) -> tuple:
        return (s.kind, s.source, s.ref, s.suite, tuple(s.patches), tuple(s.make_flags))
    return len({build(s) for s in specs}) == 1


def parse_variants(texts: list[str]) -> list[VariantSpec]:
    if len(texts) < 2:
        raise PlanError(f"a sweep compares variants: give --variant NAME=SPEC at least twice "
                        f"(got {len(texts)}); the first is the baseline")
    specs = [parse_variant(t) for t in texts]
    names = [s.name for s in specs]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise PlanError(f"variant name {twice!r} given twice")
    return specs


def _axes(case: str, axis_texts: list[str] | None) -> list[Axis]:
    doc, fixed = case_doc(case)
    matrix = doc.data.get("matrix", {})
    name = doc.data["name"]
    if axis_texts is None:      # no --axis: the case's matrix axes not fixed by name@...
        return [parse_axis(a, matrix, name) for a in matrix_axes(matrix, fixed)]
    return [parse_axis(t, matrix, name) for t in axis_texts]


def make_plan(case: str, size: str, variants: list[str], axis_texts: list[str] | None,
              sets: dict[str, Any], opts: SweepOptions, host: HostSummary,
              keep: Callable[[dict[str, str]], bool] | None = None) -> Plan:
    """Resolve every point (CaseError on a bad value), estimate it and judge its memory.
    `keep(labels)`: only the points it accepts (experiment --only), estimated as the only
    ones (a dataset is written by the first kept point that needs it)."""
    specs = parse_variants(variants)
    axes = _axes(case, axis_texts)
    plan = Plan(case, size, variants, axes, dict(sets), opts, host, config_only=config_only(specs))
    mem = host.memory_bytes
    seen: dict[str, str] = {}
    loader = loader_sha256()
    for ps in points(case, axes, sets):
        if keep is not None and not keep(ps.labels):
            continue
        try:
            c = load_case(ps.case, size, ps.sets, llc=opts.llc_bytes)
        except CaseError as e:
            raise CaseError(f"point {ps.id} ({_labels(ps.labels)}): {e}") from None
        # Points with the same data share the dataset snapshot (the runner's cache key).
        key = snapshot_key(c, loader)
        est, skip = estimate(c, opts, plan.config_only, mem, len(specs), seen.get(key))
        if opts.pairing == "paired" and not est.paired:
            raise PlanError(f"--pairing paired: point {ps.id} ({_labels(ps.labels)}) cannot pair: "
                            f"{est.method}. Sweep with --pairing auto (separate reps where a point "
                            "cannot pair)")
        if skip is None:
            seen.setdefault(key, ps.id)
        plan.points.append(PlannedPoint(ps, c, est, skip))
    return plan


def _labels(labels: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in labels.items()) or "the case as is"


def _size(n: float) -> str:
    for div, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n:.0f} B"


def total_s(plan: Plan, new_builds: int | None = None) -> float:
    builds = BUILD_S * (new_builds if new_builds is not None else 0)
    return builds + sum(p.estimate.time_s for p in plan.runnable)


def plan_lines(plan: Plan) -> list[str]:
    o = plan.opts
    axes = " × ".join(f"{a.name} ({len(a.values)})" for a in plan.axes) or "no axis"
    n = len(plan.points)
    prof = ("no profile" if o.profile == "off" else
            f"{o.profile} in the paired windows" if o.profile_reps is None
            else f"{o.profile_reps} {o.profile} profile reps per variant")
    out = [f"plan: {plan.case}, size {plan.size}: {n} point{'s' * (n != 1)} over {axes}",
           f"  variants: {', '.join(plan.variants)} (the first is the baseline)",
           f"  each point: {o.reps} reps ({'paired reps of ' + str(o.paired_windows) + ' windows' if any(p.estimate.paired for p in plan.points) else 'per variant'}), {prof}"]
    if plan.sets:
        out.append("  every point: " + " ".join(f"--set {k}={show(v)}" for k, v in plan.sets.items()))
    head = f"  {'point':<34} {'keys':>12} {'dataset':>10} {'peak mem':>10} {'time':>8}  how"
    out += [head]
    for p in plan.points:
        e = p.estimate
        pre = f" (data of {e.preload_shared_with})" if e.preload_shared_with else ""
        how = ("NOT RUN: " + p.skip) if p.skip else e.method + pre
        out.append(f"  {p.spec.id:<34} {e.keys:>12,} {_size(e.dataset_bytes):>10} "
                   f"{_size(e.memory_bytes):>10} {duration(e.time_s):>8}  {how}")
    mem, l3 = plan.host.memory_bytes, plan.host.l3_bytes
    out.append(f"  host: {_size(mem) if mem else 'memory unknown'}, L3 "
               f"{_size(l3) if l3 else 'unknown'}; "
               f"estimated {duration(total_s(plan))} for {len(plan.runnable)} point(s), plus about "
               f"{duration(BUILD_S)} per variant not yet built (builds and dataset snapshots are cached "
               "and shared by the points)")
    return out


def check_fit(plan: Plan) -> None:
    """Refuse a plan with points that do not fit, unless the options skip them."""
    bad = [p for p in plan.points if p.skip]
    if bad and not plan.opts.skip_unfit:
        lines = "\n".join(f"  {p.spec.id}: {p.skip}" for p in bad)
        raise PlanError(f"{len(bad)} point(s) do not fit this host's memory:\n{lines}\n"
                        "Drop them from the axis, run at a smaller --size, or give --skip-unfit to "
                        "run the other points and list these as not run.")
    if not plan.runnable:
        raise PlanError("no point of this sweep fits this host's memory")
