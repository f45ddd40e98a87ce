"""The verdict of one function's flat or cumulative cost, after the statistics: whether it
matters at all, whether it exists on both sides, whether enough samples stand behind it,
and which of its two measures (share, CPU time per operation) speaks.

stats.compare_shares judges any two lists of shares; a report needs more than that:
- a function under the share floor on both sides is `negligible` (0.05% → 0.00% is no
  news, whatever its interval says);
- below `min_samples` samples (the larger side, summed over its profile reps) there is
  `too few samples` for a verdict: at 99 Hz a 1% function gets ~10 samples a rep;
- a function absent from one side (in no rep, or a stray sample in one rep: median share
  0) is `new in candidate` or `gone`: its cost is the new code's own price (a prefetch
  helper, or Valkey's batch path that only runs with prefetching on), not a regression of
  something that was there;
- with CPU time per operation the per-op verdict counts and the share never contradicts
  it: a share that moved while the cost per op did not is dilution, said as such.
docs/statistics.md ("Reading a function's verdict") has the rules and the defaults.
"""
from __future__ import annotations

from dataclasses import dataclass

from analysis.compare.options import MIN_SAMPLES, MIN_SHARE
from analysis.counting import Dispersion
from analysis.stats import DECIDED
from analysis.compare.results import ChangeOut, Judgement, Side

_MOVE = DECIDED        # a decided move, at or under its line


@dataclass
class Measure:
    """One measure of one function: its shares per side, the samples behind them, the
    share change, and (when the run has operation counts) its CPU time per operation."""
    base: Side
    cand: Side
    change: ChangeOut                       # pp
    base_samples: list[float] | None        # per profile rep; None when unknown
    cand_samples: list[float] | None
    base_ns: Side | None = None
    cand_ns: Side | None = None
    ns_change: ChangeOut | None = None
    # the spread of the measure that speaks against counting its samples (None: unknown)
    dispersion: Dispersion | None = None


def _total(x: list[float] | None) -> float | None:
    return None if x is None else float(sum(x))


def _cost(side: Side, ns: Side | None) -> str:
    per_op = f", {ns.median:.4g} ns per operation" if ns is not None else ""
    return f"{side.median:.2f}% of samples{per_op}"


def _one_sided(m: Measure, has_b: bool, has_c: bool) -> Judgement | None:
    if has_b and has_c:
        return None
    side, ns, word = (m.cand, m.cand_ns, "new in candidate") if has_c else (m.base, m.base_ns, "gone")
    absent = m.base if has_c else m.cand
    which = "base" if has_c else "candidate"
    where = (f"absent from every {which} rep" if not any(v > 0 for v in absent.values)
             else f"absent from most {which} reps (median 0% of samples)")
    return Judgement(word, f"{where}: its own cost, {_cost(side, ns)}; not a change of "
                           "something that was there")


def _dilution(share: str, per_op: str, total: ChangeOut | None = None) -> str:
    """Why the share verdict differs from the per-op one, or "" when it does not (an
    unstable side says nothing either way). A cost per op that moved while the share did
    not means the whole profile's cost per op moved alike: `total` (the view's all-samples
    CPU time per operation) shows by how much."""
    up = {v: "up" if v.endswith("regression") else "down" for v in _MOVE}
    if share in _MOVE and per_op == "no change":
        return f"share {up[share]} by dilution, cost per op unchanged"
    if share in ("no change", "unstable") and per_op in _MOVE:
        alike = "the rest of the profile moved alike"
        if total is not None and total.rel is not None and total.rel_ci_low is not None:
            alike = (f"the whole profile's CPU time per operation moved {total.rel:+.0%} "
                     f"[{total.rel_ci_low:+.0%}, {total.rel_ci_high:+.0%}] alike")
        return f"share {'unchanged' if share == 'no change' else 'too noisy to say'}, cost per op {up[per_op]}: {alike}"
    if share in _MOVE and per_op in _MOVE and up[share] != up[per_op]:
        return f"share {up[share]} by dilution, cost per op {up[per_op]}"
    return ""


def judge(m: Measure, min_share: float = MIN_SHARE, min_samples: float = MIN_SAMPLES,
          total: ChangeOut | None = None, present: tuple[bool, bool] | None = None) -> Judgement:
    """The verdict of one measure (rules: module docstring). Order: negligible (share
    floor), too few samples (count floor), new/gone, then the statistic that counts.
    `total`: the whole profile's CPU time per operation, which the note quotes when a cost
    per op moved and its share did not. `present`: whether the function ran at all on each
    side (its cumulative share, in most reps), when that is not this measure's own: a
    function that ran in the base without its own samples (a thin wrapper) and gains a cost
    is a change of something that was there, not new code."""
    tb, tc = _total(m.base_samples), _total(m.cand_samples)
    samples = (tb, tc)
    has_b, has_c = any(v > 0 for v in m.base.values), any(v > 0 for v in m.cand.values)
    if not has_b and not has_c:
        return Judgement("negligible", "in no profile rep of either side", *samples)
    if m.base.median < min_share and m.cand.median < min_share:
        return Judgement("negligible", f"under {min_share:g}% of samples on both sides "
                                       f"({m.base.median:.2f}% → {m.cand.median:.2f}%)", *samples,
                         detectable=m.change.detectable, detectable_unit="pp")
    if tb is not None and tc is not None and max(tb, tc) < min_samples:
        return Judgement("too few samples", f"too few samples ({max(tb, tc):.0f}, fewer than "
                                            f"{min_samples:g}) for a verdict", *samples)
    # Present on a side = in most of its reps: one stray sample in one rep is not "there".
    ran = present if present is not None else (m.base.median > 0, m.cand.median > 0)
    one = _one_sided(m, *ran)
    if one is not None:
        one.base_samples, one.cand_samples = samples
        return one
    if m.ns_change is None:
        verdict, reason = _spread(m.change.verdict, m.change.reason, m.dispersion, tb, tc)
        return Judgement(verdict, reason, *samples, basis="share",
                         detectable=m.change.detectable, detectable_unit="pp",
                         line=m.change.line)
    per_op, share = m.ns_change.verdict, m.change.verdict
    verdict, reason = _spread(per_op, m.ns_change.reason, m.dispersion, tb, tc)
    return Judgement(verdict, reason, *samples, basis="CPU time per operation",
                     note=_dilution(share, per_op, total), detectable=m.ns_change.detectable,
                     detectable_unit="rel", line=m.ns_change.line)


def _spread(verdict: str, reason: str, d: Dispersion | None, tb: float | None,
            tc: float | None) -> tuple[str, str]:
    """An "unstable" statistic said as what it is: where the dispersion test (analysis/
    counting.py, at 5%) finds no spread beyond counting its samples, "undersampled" (the
    reports: "too few samples, could see ±X% (80% power)"): more samples would narrow it.
    What a quieter machine could do is not read off a test that did not reject (at twice
    counting's spread it does not reject at 13 reps in 43% of runs): the reason gives the
    most it could narrow the interval, from the dispersion's 95% upper bound
    (bench/undersampled.py, `make bench` figure 7f). Under no change, 88% of the recorded
    A/A's 5%-share rows printed "unstable ... vary too much" where the dispersion against
    counting was 0.92. Spread beyond counting stays "unstable", the test's figures added to
    its reason."""
    if verdict != "unstable" or d is None:
        return verdict, reason
    said = f"dispersion {d.phi:.2f} against counting on {d.df} degrees of freedom, p = {d.p_value:.2g}"
    if not d.counting:
        return verdict, f"{reason} Beyond counting its samples ({said}): the machine or the server starts."
    n = f"{min(tb, tc):,.0f}" if tb is not None and tc is not None else "its"
    gain = d.quiet_gain()
    quiet = (f"a quieter machine would not (the dispersion's 95% upper bound, {d.upper():.2f}, "
             f"is within counting's)" if gain == 0 else
             f"a quieter machine could narrow it by up to {gain:.0%} (the dispersion's 95% upper "
             f"bound is {d.upper():.2f}; the test cannot tell the machine's part from none)")
    return "undersampled", (f"{reason} Its reps spread as counting {n} samples a side predicts "
                            f"({said}): more samples (a higher rate, more or longer windows, "
                            f"more reps) would narrow it; {quiet}.")
