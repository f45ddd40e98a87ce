"""A bisection's report (report.md beside bisect.json): the culprit or why there is none, each
step's interval and decision, and the functions whose CPU per operation moved between the
culprit's parent and the culprit."""
from __future__ import annotations

from analysis.bisect.search import CULPRIT, ENDS, FUNCTIONS, REST, Bisection, Step

ROLE = {ENDS: "the ends", "probe": "probe", FUNCTIONS: "parent → culprit", REST: "culprit → bad end"}


def looks_text(looks: list[int]) -> str:
    """'4, then every 2, up to 96' for evenly spaced looks, else the list."""
    gaps = {b - a for a, b in zip(looks, looks[1:])}
    if len(looks) > 3 and len(gaps) == 1:
        return f"{looks[0]}, then every {gaps.pop()}, up to {looks[-1]}"
    return ", ".join(map(str, looks))


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:+.1%}"


def _ns(x: float | None) -> str:
    return "0" if not x else f"{x:,.0f}"


def _change(f: dict) -> str:
    if f.get("change") is None:
        # no interval of the ratio (a rep of one side without a sample of it): the medians say
        base, cand = f.get("base_ns"), f.get("cand_ns")
        if base and cand:
            return f"×{cand / base:.1f} (medians; a rep without samples, no interval)"
        return "new at the culprit" if cand else "gone at the culprit"
    return f"{_pct(f['change'])} [{_pct(f['low'])}, {_pct(f['high'])}]"


def _step_row(b: Bisection, k: int, s: Step) -> str:
    d = s.decided()
    base, probe = b.commits[s.base], b.commits[s.probe]
    iv = "—" if d is None else f"{d.change:+.1%} [{d.low:+.1%}, {d.high:+.1%}] at {d.level:.0%}"
    subject = probe.subject.replace("|", "\\|")[:60]
    test = "" if d is None or d.llr != d.llr else f" (L {d.llr:+.1f}, bounds ±{d.bound:.1f})"
    return (f"| {k} | {ROLE.get(s.role, s.role)} | `{probe.sha[:12]}` {subject} | `{base.sha[:12]}` "
            f"| {len(s.log_ratios)} | {iv} | {s.verdict}{test} |")


def markdown(b: Bisection) -> str:
    c = b.culprit()
    lines = [f"# stallscope bisect: {b.case} ({b.size})", ""]
    if c is not None:
        lines += [f"**Culprit: `{c.sha[:12]}` {c.subject}** (author date {c.date})", ""]
    lines += [b.why or "running", "",
              f"Range: {len(b.commits) - 1} first-parent commits from `{b.good}` "
              f"(`{b.commits[0].sha[:12]}`) to `{b.bad}` (`{b.commits[-1].sha[:12]}`) in {b.repo}.",
              f"Minimum change ±{b.min_change:.1%} ({b.min_change_why}); each step's error "
              f"{b.alpha:.2%}, looks after {looks_text(b.looks)} paired reps"
              + (f", {b.commits[b.hint].sha[:12]} probed first" if b.hint is not None else "") + "; "
              f"{b.spent_s / 60:.1f} min spent of {b.budget_s / 60:.0f}.", "",
              "| step | what | probe | against | paired reps | throughput change (probe/against) | decision |",
              "|---:|---|---|---|---:|---|---|"]
    lines += [_step_row(b, k, s) for k, s in enumerate(b.steps, 1) if s.decision is not None]
    lines += ["", f"L: the log likelihood ratio of a change of ±{b.min_change:.1%} against none (a probe and "
                  "the culprit against its parent: in the bad end's direction); a step is different at "
                  "L ≥ the bound, the same at L ≤ −bound (docs/bisect.md)."]
    rest = next((s for s in b.steps if s.role == REST and s.decision is not None), None)
    if b.status == CULPRIT and rest is not None and rest.verdict != "same":
        lines += ["", f"The rest of the range (culprit → bad end) is **{rest.verdict}**: "
                      "another change may lie after the culprit; it is unresolved (bisect "
                      f"`{c.sha[:12] if c else ''}`..`{b.commits[-1].sha[:12]}` to find it)."]
    lines += ["", "## Functions that moved at the culprit", ""]
    fn = next((s for s in b.steps if s.role == FUNCTIONS and s.decision is not None), None)
    if fn is None:
        lines.append("No functions comparison (no culprit).")
    elif not b.functions:
        lines.append(f"No function's CPU per operation moved with a decided verdict "
                     f"(comparison: {fn.report or 'not rendered'}).")
    else:
        lines += ["| function | cost | verdict | ns per operation (parent → culprit) | change |",
                  "|---|---|---|---:|---|"]
        lines += [f"| {f['function']} | {f['basis']} | {f['verdict']} | {_ns(f.get('base_ns'))} → "
                  f"{_ns(f.get('cand_ns'))} | {_change(f)} |" for f in b.functions]
        lines += ["", f"From the culprit's parent against the culprit, profiled in the paired "
                      f"windows: {fn.report}"]
    return "\n".join(lines) + "\n"
