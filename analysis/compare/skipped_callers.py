"""Skipped callers per profile rep and per variant, beside the truncated stacks
(analysis/compare/truncated_reps.py): the share of a rep's samples, in the thread view of the
focus tables, whose stack lost the direct caller of a leaf in code without frame pointers
(analysis/profile/skipped.py has the rule; the collector counts them while it folds and
writes the counts in rep.json, collectors.perf.skipped). A function that calls the C library
itself has each such sample missing from its cumulative row, so above THRESHOLD % in any
rep the cumulative tables carry a note, with the frames where it happened and the fix."""
from __future__ import annotations

from dataclasses import dataclass, field

from analysis import stats
from analysis.compare.values import Side
from analysis.inputs.collector_facts import PerfFacts, SkippedThread
from analysis.inputs.rundir import read_rep_facts
from analysis.profile.stacks import thread_group

THRESHOLD = 2.0       # % of samples, as for truncated stacks
SITES_LISTED = 3
SITE_MIN = 0.1        # % of samples: rarer sites are not named


@dataclass
class SkippedSection:
    """Samples whose stack skipped a caller (docs/statistics.md, "Truncated stacks").
    `available` is False for runs recorded before the collector counted them."""
    available: bool = False
    shares: dict[str, Side] = field(default_factory=dict)   # variant -> % of samples per rep
    reps: dict[str, list[int]] = field(default_factory=dict)
    worst: float = 0.0               # the largest share of any rep, %
    unknown: float = 0.0             # % of all samples whose call site could not be read
    sites: dict[str, float] = field(default_factory=dict)   # "listed -> leaf" -> % of samples
    exceeds: bool = False            # worst > THRESHOLD
    note: str = ""                   # the sentence beside the cumulative tables


def rep_counts(rep_dir, variant: str, thread: str, main_names: tuple[str, ...]
               ) -> SkippedThread | None:
    """One rep's counts for one variant, summed over the threads of the view; None when the
    rep did not count them."""
    facts = read_rep_facts(rep_dir).collectors
    perf = facts.get(f"perf:{variant}") or facts.get("perf")
    if not isinstance(perf, PerfFacts) or perf.skipped is None:
        return None
    out = SkippedThread()
    for comm, t in perf.skipped.items():
        if thread != "all" and thread_group(comm, main_names) != thread:
            continue
        out.samples += t.samples
        out.at_risk += t.at_risk
        out.skipped += t.skipped
        out.unknown += t.unknown
        for k, n in t.sites.items():
            out.sites[k] = out.sites.get(k, 0) + n
    return out


def skipped_callers(reps: dict, base: str, cand: str, thread: str,
                    main_names: tuple[str, ...]) -> SkippedSection:
    """`reps`: variant -> its ProfileReps (analysis/compare/profile_reps.py)."""
    sec = SkippedSection()
    sites: dict[str, int] = {}
    total = unknown = 0
    for v in (base, cand):
        shares = []
        for r in reps[v]:
            c = rep_counts(r.dir, v, thread, main_names)
            if c is None or not c.samples:
                return SkippedSection()          # not counted in every rep: none reported
            shares.append((r.rep, 100.0 * c.skipped / c.samples))
            total += c.samples
            unknown += c.unknown
            for k, n in c.sites.items():
                sites[k] = sites.get(k, 0) + n
        sec.reps[v] = [n for n, _ in shares]
        sec.shares[v] = Side.of(stats.summarize([s for _, s in shares]), sec.reps[v])
    if not total:
        return SkippedSection()
    sec.available = True
    sec.worst = max((max(s.values) for s in sec.shares.values() if s.values), default=0.0)
    sec.unknown = 100.0 * unknown / total
    top = sorted(sites.items(), key=lambda kv: (-kv[1], kv[0]))[:SITES_LISTED]
    sec.sites = {k: 100.0 * n / total for k, n in top if 100.0 * n / total >= SITE_MIN}
    sec.exceeds = sec.worst > THRESHOLD
    if sec.exceeds:
        sec.note = _note(sec, base, cand)
    return sec


def _note(sec: SkippedSection, base: str, cand: str) -> str:
    med = ", ".join(f"{v} {sec.shares[v].median:.1f}% (reps {sec.shares[v].min:.1f}–"
                    f"{sec.shares[v].max:.1f}%)" for v in (base, cand))
    where = ("; the frame listed above the C library code, and that code: "
             + ", ".join(f"{site_text(k)} {w:.1f}%" for k, w in sec.sites.items())) if sec.sites else ""
    return (f"the cumulative shares of functions that call C library code themselves are "
            f"understated by up to {sec.worst:.1f}%: {med} of samples skipped the caller of "
            f"code without frame pointers{where}; re-run with `stallscope run ... "
            f"--call-graph whole` to unwind them whole (DWARF's cost per sample then shows in "
            f"every absolute CPU time per operation).")


def site_text(site: str) -> str:
    """A site as the reports print it: "call → clock_gettime" (rep.json keeps "->")."""
    return site.replace(" -> ", " → ")
