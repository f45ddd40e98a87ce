"""Where each point of a sweep ran: the table of a sweep assembled from points run on
many runners (`--merge`), and the note that flags points measured on different host
models. Each point's change compares its two variants on one machine, so a row stays
valid; what differs across rows run on different CPUs is the absolute numbers and the
size of a change (docs/sweeps.md, "Over many runners")."""
from __future__ import annotations

from analysis.inputs.host import RunnerHost
from analysis.sweep.results import PointRow, SweepResults


def model(host: RunnerHost | None) -> str:
    """"AMD EPYC 7B13, 2 logical CPUs": what makes two hosts measure alike."""
    return (host or RunnerHost()).model()


def _measured(points: list[PointRow]) -> list[PointRow]:
    return [p for p in points if p.host is not None and p.run_dir]


def models(points: list[PointRow]) -> dict[str, list[str]]:
    """host model -> the points measured on it, in sweep order."""
    out: dict[str, list[str]] = {}
    for p in _measured(points):
        out.setdefault(model(p.host), []).append(p.id)
    return out


def host_notes(points: list[PointRow]) -> list[str]:
    """One note when the measured points ran on more than one host model."""
    by = models(points)
    if len(by) < 2:
        return []
    where = "; ".join(f"{', '.join(ids)} on {m}" for m, ids in by.items())
    return [f"points ran on {len(by)} different host models ({where}): each row's change "
            "compares its variants on one machine, but absolute numbers and the size of a "
            "change are not comparable between rows measured on different CPUs"]


def show_hosts(res: SweepResults) -> bool:
    """The where-it-ran table: for a sweep run over many runners, or on several hosts."""
    return res.fanout is not None or len({p.host.hostname for p in _measured(res.points)}) > 1


def host_rows(res: SweepResults) -> list[tuple[str, str, str, str]]:
    """(point, hostname, CPU model, logical CPUs) for every point; "not run" where none."""
    rows = []
    for p in res.points:
        if not p.run_dir:
            rows.append((p.id, "not run", "", ""))
            continue
        h = p.host or RunnerHost()
        cpus = h.logical_cpus
        rows.append((p.id, str(h.hostname or "?"), str(h.cpu_model or "?"),
                     str(cpus) if cpus is not None else "?"))
    return rows


def where_text(res: SweepResults) -> str:
    """The sentence above the where-it-ran table (`spans` are code)."""
    f = res.fanout
    if f is not None and f.point:
        return f"Point `{f.point}` of plan `{f.plan}`, run alone; where it ran"
    if f is not None and f.plan:
        return f"Assembled by `--merge` from point runs of plan `{f.plan}`; where each point ran"
    return "Run on more than one host; where each point ran"
