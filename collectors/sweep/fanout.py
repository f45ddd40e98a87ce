"""Sweeps and experiments over many runners (docs/sweeps.md, "Over many runners"): the
points as a GitHub Actions matrix (--emit-matrix), the identity of a plan that every
point run records (so --merge refuses points of another sweep), and where a point ran.

A plan's identity is what the user asked for, resolved: the case as given and each
point's resolved case (a runner whose case files differ is caught), the variants as
given, the axes, the --sets and the options that change what is measured. It leaves out
what each host decides for itself (its memory picks paired windows or interleaved reps,
its estimates) and --skip-unfit, so one sweep planned on two runners has one identity."""
from __future__ import annotations

import hashlib
import json
import socket
from dataclasses import asdict
from typing import Any, Sequence

from analysis.inputs.host import RunnerHost
from analysis.inputs.records import Record
from analysis.sweep.fanout_entry import IdentityAxis, IdentityPoint, MatrixEntry, SweepIdentity
from collectors.host import machine
from collectors.sweep.plan import Plan, PlannedPoint, PlanError

HOST_LOCAL = ("skip_unfit",)     # options each runner may set for itself


def _plain(x: Any) -> Any:
    """JSON-shaped (what sweep.json stores), so an identity read back compares equal."""
    return json.loads(json.dumps(x, sort_keys=True, default=str))


def identity(plan: Plan) -> SweepIdentity:
    """What one sweep (or one experiment part) measures, resolved; see the module doc."""
    opts = {k: v for k, v in asdict(plan.opts).items() if k not in HOST_LOCAL}
    pts = []
    for p in plan.points:
        resolved = p.case.to_json()
        resolved.pop("source", None)       # the case file's path on this runner
        pts.append(IdentityPoint(id=p.spec.id, case=p.spec.case, sets=_plain(p.spec.sets),
                                 resolved=_plain(resolved)))
    return SweepIdentity(case=plan.case, size=plan.size, variants=list(plan.variants),
                         axes=[IdentityAxis(a.name, a.kind, [v.label for v in a.values]) for a in plan.axes],
                         sets=_plain(plan.sets), options=_plain(opts), points=pts)


def _json(x: Any) -> Any:
    return x.to_json() if isinstance(x, Record) else x


def digest(ident: Record) -> str:
    """The plan's id: 16 hex digits of the SHA-256 of its identity."""
    return hashlib.sha256(json.dumps(_json(ident), sort_keys=True).encode()).hexdigest()[:16]


def _short(v: Any) -> str:
    t = json.dumps(v, sort_keys=True)
    return t if len(t) <= 60 else t[:57] + "..."


def differences(a: Any, b: Any, path: str = "", limit: int = 4) -> list[str]:
    """Where two identities (records, or their JSON) differ ("options.reps: 2 vs 3"), the
    first `limit` places."""
    a, b = _json(a), _json(b)
    out: list[str] = []
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            out += differences(a.get(k), b.get(k), f"{path}.{k}" if path else str(k), limit - len(out))
            if len(out) >= limit:
                break
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            same_id = isinstance(x, dict) and isinstance(y, dict) and x.get("id") is not None \
                and x.get("id") == y.get("id")
            name = x["id"] if same_id else i
            out += differences(x, y, f"{path}[{name}]", limit - len(out))
            if len(out) >= limit:
                break
    elif a != b:
        out.append(f"{path}: {_short(a)} vs {_short(b)}")
    return out[:max(limit, 0)]


def labels_text(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in labels.items()) or "the case as is"


def matrix_entry(point_id: str, p: PlannedPoint, part: str | None = None) -> MatrixEntry:
    """One `include` entry. The estimate is the emitting host's plan; each runner plans its
    point again (its memory decides how the point is measured)."""
    return MatrixEntry(point=point_id, labels=labels_text(p.spec.labels),
                       estimate_s=round(p.estimate.time_s), memory_bytes=p.estimate.memory_bytes, part=part)


def matrix_json(entries: Sequence[MatrixEntry]) -> str:
    """`{"include": [...]}` on one line, as `$GITHUB_OUTPUT` and `fromJSON` take it."""
    return json.dumps({"include": [e.to_json() for e in entries]}, separators=(",", ":"))


def point_host() -> RunnerHost:
    """The machine a point runs on, as the merged report names it."""
    return RunnerHost(socket.gethostname(), machine.cpuinfo()["cpu_model"],
                      machine.topology()["logical_cpus"])


def find_point(ids: Sequence[str], wanted: str, what: str) -> str:
    if wanted not in ids:
        raise PlanError(f"--point {wanted!r}: no such point in this {what}; its points "
                        f"(`--emit-matrix` lists them): {', '.join(ids)}")
    return wanted


def whole_argv(argv: Sequence[str]) -> list[str]:
    """The command line of the whole sweep that a point run belongs to: its argv without
    --point, --emit-matrix and --out (a point's own directory)."""
    out: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in ("--point", "--out"):
            skip = True
        elif a == "--emit-matrix" or a.startswith(("--point=", "--out=")):
            continue
        else:
            out.append(a)
    return out
