"""Truncated stacks per profile rep and per variant, and what the report says about them
(analysis/profile/truncation.py has the rule): always how perf unwound the stacks and, with
`--call-graph auto`, which probe measurement chose that (collectors/profilers/perf/unwind.py);
above THRESHOLD % the cumulative tables carry a note: "cumulative shares understated by up
to x%", with the fix (`--call-graph dwarf`, or frame pointers in the library the truncated
stacks start in). Beside them, the skipped callers (analysis/compare/skipped_callers.py)."""
from __future__ import annotations

from analysis import stats
from analysis.compare.profile_reps import ProfileRep
from analysis.compare.results import Side, TruncationSection
from analysis.compare.skipped_callers import site_text, skipped_callers
from analysis.inputs.collector_facts import PerfFacts, ThreadProbe
from analysis.inputs.rundir import read_rep_facts
from analysis.profile.stacks import view
from analysis.profile.truncation import truncation

THRESHOLD = 2.0       # % of samples
ROOTS_LISTED = 3
ROOT_MIN = 0.1        # % of samples: smaller starting points are not named


def _unwinding(sec: TruncationSection, reps: list[ProfileRep]) -> None:
    """callgraph (each mode the reps recorded), dwarf_threads, the probe, and the sentence."""
    modes: list[str] = []
    for r in reps:
        # a profile rep's collectors.perf, or a paired rep's collectors["perf:<variant>"]
        for perf in read_rep_facts(r.dir).collectors.values():
            if not isinstance(perf, PerfFacts):
                continue
            if perf.callgraph and perf.callgraph not in modes:
                modes.append(perf.callgraph)
            sec.dwarf_threads += [t for t in perf.dwarf_threads if t not in sec.dwarf_threads]
            sec.probe = sec.probe or perf.unwind_probe
    sec.callgraph = ", ".join(modes)
    sec.unwind = _unwind_text(sec)


def _unwind_text(sec: TruncationSection) -> str:
    text = f"call graph {sec.callgraph or 'n/a'}"
    p = sec.probe
    if p is None:
        return text
    probe = f"a {p.seconds:g} s frame-pointer probe at {p.frequency_hz} Hz in {p.rep}"
    # a probe recorded before it kept its rule's confidence claims none (the rule then was
    # the share as seen, and later a lower bound: either way the shares are printed); one
    # recorded before it counted skipped callers names truncated stacks alone
    over = f"over {p.switch_pct:g}%" + (f" with {p.confidence:.0%} confidence" if p.confidence else "")
    skips = any(t.skipped_pct is not None for t in p.threads.values())
    found = "stacks truncated or skipping a caller" if skips else "stacks truncated"
    if not sec.dwarf_threads:
        return f"{text}: {probe} found no thread's {found} {over}"
    why = []
    for name in sec.dwarf_threads:
        t = p.threads.get(name) or ThreadProbe()
        roots = ", ".join(list(t.roots)[:ROOTS_LISTED])
        sites = ", ".join(site_text(k) for k in list(t.sites)[:ROOTS_LISTED])
        why.append(f"{name} {t.truncated_pct:.1f}%" + (" truncated" if skips else "")
                   + (f", starting in {roots}" if roots else "")
                   + (f", {t.skipped_pct:.1f}% skipping a caller" if t.skipped_pct is not None else "")
                   + (f" ({sites})" if sites else ""))
    return (f"{text}: DWARF for {', '.join(sec.dwarf_threads)}, frame pointers for the other "
            f"threads, because {probe} found {found} {over} "
            f"({'; '.join(why)})")


def truncated_stacks(reps: dict[str, list[ProfileRep]], base: str, cand: str, thread: str,
                     main_names: tuple[str, ...]) -> TruncationSection:
    sec = TruncationSection(True, threshold=THRESHOLD, thread=thread)
    roots: dict[str, float] = {}
    total = 0.0
    for v in (base, cand):
        shares = []
        for r in reps[v]:
            t = truncation(view(r.stacks, thread, main_names))
            shares.append((r.rep, t.share))
            total += t.total
            for k, w in t.roots.items():
                roots[k] = roots.get(k, 0.0) + w
        values = [s for _, s in shares]
        sec.reps[v] = [n for n, _ in shares]
        sec.shares[v] = Side.of(stats.summarize(values), sec.reps[v])
    sec.worst = max((max(s.values) for s in sec.shares.values() if s.values), default=0.0)
    top = sorted(roots.items(), key=lambda kv: (-kv[1], kv[0]))[:ROOTS_LISTED]
    sec.roots = {k: 100.0 * w / total for k, w in top if total and 100.0 * w / total >= ROOT_MIN}
    _unwinding(sec, reps[base] + reps[cand])
    sec.skipped = skipped_callers(reps, base, cand, thread, main_names)
    sec.exceeds = sec.worst > THRESHOLD
    if sec.exceeds:
        sec.note = _note(sec, base, cand)
    return sec


def _note(sec: TruncationSection, base: str, cand: str) -> str:
    med = ", ".join(f"{v} {sec.shares[v].median:.1f}% (reps {sec.shares[v].min:.1f}–"
                    f"{sec.shares[v].max:.1f}%)" for v in (base, cand))
    where = "; they start in " + ", ".join(f"{k} {w:.1f}%" for k, w in sec.roots.items()) \
        if sec.roots else ""
    if "dwarf" not in sec.callgraph:
        fix = ("re-run with `stallscope run ... --call-graph dwarf`, or build the library they "
               "start in with frame pointers")
    elif sec.dwarf_threads:
        fix = (f"in {', '.join(sec.dwarf_threads)} the DWARF unwinder stopped short too (stack "
               "copy too small?), in the other threads frame pointers did: re-run with "
               "`stallscope run ... --call-graph dwarf` for DWARF in every thread")
    else:
        fix = ("the DWARF unwinder also stopped short (stack copy too small?): "
               "raise perf's --call-graph dwarf stack size")
    return (f"cumulative shares understated by up to {sec.worst:.1f}%: {med} of samples have "
            f"truncated stacks (they stop before the thread's entry{where}; {sec.unwind}); "
            f"{fix}.")
