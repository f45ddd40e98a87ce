"""Which verdicts of a report are judged together, and by which rule
(analysis/compare/multiplicity.py):

- "focus function": the questions the case asked before the run: each focus function's
  flat and cumulative cost (the measure that speaks: CPU time per operation when the run
  has it, else the share), in the focus view and the other thread view, each thread
  group's share, and the whole profile's CPU time per operation. The case file lists its
  focus functions, so this family is fixed before any sample is seen.
- "top mover": the exploratory question, which other function moved: every material
  candidate the movers are picked from, corrected as one family before the pick (picking
  first and correcting the 15 picked gave a false discovery in 25% of null runs,
  bench/fdr.py). A focus function among the candidates is judged once, in its own family.
- "throughput and latency": the load generator's rows (several tests, p50/p99 latency)
  when a run has more than one; a paired run's one throughput row stands alone.

Why two function families: the questions are different, and the number of exploratory
candidates (~60 on a Redis profile) must not set the level at which the few pre-declared
ones are answered (with one family, an A/A run of 5 paired reps printed its focus rows
at 99.92%: dictFindByHash per MSET "no change, could see -44.8%/+81.1%"; in the two
families, from the same run: "-26.7%/+36.4%"). Each family holds its own error rate q,
as primary and secondary endpoints of a trial do; the report prints both levels and rules
(docs/statistics.md, "Families").

More power for the movers (issue 38): the top movers' family is ~70 rows (every material
candidate's own and cumulative cost), and judged alike each at 1 - q/m (99.93%) with a rank
or t interval over 5-10 reps, a function of 13% of the samples could see only ±112% on an
A/A run. Two changes, each keeping the family's error at q, make it see ±20% at the recorded
run's counts (bench/movers.py, figure 7d): (1) each function's rows weigh its own share of
the samples (weighted Holm, multiplicity.weighted_holm: a row's level 1 - q x its share / the
shares of the rows not called; the weight is symmetric in base and cand, so under no change
it says nothing of the row's direction), so the few functions that matter get most of q
and the many small ones, which could see only huge moves anyway, little; (2) a row of CPU
time per operation is judged by its moderated t (analysis/moderated.py): its spread is
counting its samples times a dispersion shrunk towards the family's rows', so its t has the
rows' degrees of freedom, not its own 4-9. The focus family keeps its rank / t rows: the
case's questions include the profile's largest functions, whose spread between server
starts is beyond counting.

Why the function families are held to their family-wise error (Holm: the chance of any
false verdict in the family at most q) and not to their false discovery rate
(Benjamini-Hochberg, which the throughput and latency rows and a sweep's points keep): one
real change moves its function's own and cumulative cost, the cumulative cost of every
caller up its stack (15 rows for a busy wait in msetGenericCommand) and the whole profile's
CPU per operation, and under Benjamini-Hochberg each of those discoveries loosens the level
at which every other row is judged (1 - q·R/m). CI once saw tcp_sendmsg_locked and
do_syscall_64 called regressions beside a known cost; on a recorded paired A/A run given a
known cost (bench/fdr.py --known-cost, `make bench` figure 7c) another row was called
changed in 23% of draws, beyond its line (✅/❌) in 10%; under Holm in 17% and 3%, almost
all of them focus functions whose cost differs a little between two server processes of
one build (Bonferroni: 10% and 2%, but it lost what Holm keeps when many rows truly move:
Holm's level is 1 - q/(m - R), R rows called changed). A false discovery rate allows a false
lead in a share of the discoveries; a reader chasing one does not.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from analysis import moderated
from analysis.compare.multiplicity import Member, control
from analysis.compare.options import CompareOptions
from analysis.compare.results import ChangeOut, FdrFamily, FunctionRow, MetricRow, ProfileSection
from analysis.counting import Dispersion
from analysis.inputs.run_spread import RunSpread

# the function families' rules (module docstring); bench/fdr.py compares them
FOCUS_RULE = "holm"
MOVER_RULE = "holm"
# the top movers weighted by own share, their rows of CPU time per operation by the
# moderated t (module docstring, "More power for the movers"); bench/movers.py compares
MOVERS_WEIGHTED = True


def _setter(objs: list[object], attr: str) -> Callable[[ChangeOut], None]:
    def store(ch: ChangeOut) -> None:
        for o in objs:
            setattr(o, attr, ch)
    return store


# (thread, function, "flat" | "cum") -> the statistic's per-rep values of its CPU time per
# operation, base and cand (a zero-sample rep given half a sample: every interval of the
# row is computed from them), and in a paired run their dispersion against counting
# (profiles.counted_rows)
Counted = dict[tuple[str, str, str], tuple[list[float], list[float], Dispersion | None]]


def _ns_values(r: FunctionRow, k: str, counted: Counted | None) -> tuple[list[float], list[float]]:
    """The values a row's CPU time per operation is judged on: the statistic's, else the
    sides' (results read back have only those)."""
    got = (counted or {}).get((r.thread, r.name, k))
    if got is not None:
        return got[0], got[1]
    return getattr(r, f"base_{k}_ns").values, getattr(r, f"cand_{k}_ns").values


def own_share(r: FunctionRow) -> float:
    """A function's weight in the top movers' family: its own (flat) share of the samples,
    both sides and every rep (a fraction). Symmetric in base and cand, so under no change it
    says nothing about which way the row moved: weighting by it keeps each row's test."""
    vals = list(r.base_flat.values) + list(r.cand_flat.values)
    return max(sum(vals) / len(vals) / 100.0, 1e-6) if vals else 1e-6


def _moderated(o: CompareOptions, b: list[float], c: list[float], t: moderated.RowTest,
               fallback) -> ChangeOut:
    ch = moderated.change(b, c, t, o.confidence, higher_is_better=False, noise=o.noise,
                          regression=o.regression, max_cv=o.max_cv)
    # a paired run's only: the spread between runs its CPU time per operation carries
    return ChangeOut.of(o.widened(ch, False), "ns/op") if ch is not None else fallback(o)


def _function_members(rows: list[FunctionRow], paired: bool = False,
                      counted: Counted | None = None, weighted: bool = False) -> list[Member]:
    """The family's verdicts; `counted`: the statistic's values of the rows' CPU time per
    operation. `weighted` (the top movers): each function's rows weigh its own share, and
    a row of CPU time per operation with a dispersion (a paired run with sample counts) is
    judged by its moderated t (analysis/moderated.py), the prior fitted to those rows."""
    groups: dict[tuple[str, str], list[FunctionRow]] = {}
    for r in rows:
        groups.setdefault((r.thread, r.name), []).append(r)
    out = []
    tests: list[tuple[Member, tuple[list[float], list[float], Dispersion]]] = []
    for (thread, name), same in groups.items():
        r = same[0]
        for k in ("flat", "cum"):
            j = getattr(r, f"{k}_verdict")
            if j is None or j.basis == "":
                continue        # negligible, too few samples, new or gone: no statistic speaks
            ns = getattr(r, f"{k}_ns_change")
            if ns is not None and "two-stage" in ns.method:
                continue        # a --precision --on run's function: the one it was planned for
            if getattr(r, f"{k}_ns_change") is not None:
                (b, c), attr = _ns_values(r, k, counted), f"{k}_ns_change"
                fn = (lambda o, b=b, c=c: ChangeOut.of(o.relative(
                    b, c, higher_is_better=False, paired=paired), "ns/op"))
            else:
                b, c, attr = getattr(r, f"base_{k}"), getattr(r, f"cand_{k}"), f"{k}_change"
                fn = (lambda o, b=b, c=c: ChangeOut.of(o.points(b.values, c.values,
                                                                paired=paired), "pp"))
            m = Member(f"{name} ({k}, {thread})", getattr(r, attr), fn, _setter(same, attr),
                       own_share(r) if weighted else 1.0)
            out.append(m)
            got = (counted or {}).get((thread, name, k))
            if weighted and attr == f"{k}_ns_change" and got is not None and got[2] is not None:
                tests.append((m, got))
    prior = moderated.prior_of([d for _, (_, _, d) in tests])
    for m, (b, c, d) in tests:
        m.recompute = (lambda o, b=b, c=c, t=moderated.row_test(d, prior), f=m.recompute:
                       _moderated(o, b, c, t, f))
    return out


def _metric_member(row: MetricRow, paired: bool = False, pilot: int | None = None,
                   name: str = "", spread: RunSpread | None = None) -> Member:
    """`spread`: the spread between runs of the row's own run where the family's options are
    not that run's (a sweep's points: each its own run's)."""
    def again(o: CompareOptions) -> ChangeOut:
        if spread is not None:
            o = dataclasses.replace(o, run_spread=spread)
        return ChangeOut.of(o.relative(row.base.values, row.cand.values,
                                       higher_is_better=row.higher_is_better, paired=paired,
                                       pilot=pilot), row.unit)
    return Member(name or f"{row.test} {row.metric}", row.change, again, _setter([row], "change"))


def _display_members(rows: list[FunctionRow], paired: bool = False, weighted: bool = False,
                     counted: Counted | None = None) -> list[Member]:
    """Every interval the function tables print that is not a verdict of its own (a share
    beside the CPU time per operation that speaks, a negligible function's): re-computed
    at the family's level too (`weighted`: at its function's), so a table's intervals are
    at the level of the verdicts beside them."""
    out = []
    for r in rows:
        w = own_share(r) if weighted else 1.0
        for k in ("flat", "cum"):
            j = getattr(r, f"{k}_verdict")
            speaks_ns = j is not None and j.basis == "CPU time per operation"
            speaks_share = j is not None and j.basis == "share"
            b, c = getattr(r, f"base_{k}"), getattr(r, f"cand_{k}")
            if not speaks_share:
                out.append(Member("", getattr(r, f"{k}_change"),
                                  lambda o, b=b, c=c: ChangeOut.of(
                                      o.points(b.values, c.values, paired=paired), "pp"),
                                  _setter([r], f"{k}_change"), w))
            bn, cn = getattr(r, f"base_{k}_ns"), getattr(r, f"cand_{k}_ns")
            if bn is not None and cn is not None and not speaks_ns:
                b, c = _ns_values(r, k, counted)
                out.append(Member("", getattr(r, f"{k}_ns_change"),
                                  lambda o, b=b, c=c: ChangeOut.of(
                                      o.relative(b, c, higher_is_better=False, paired=paired),
                                      "ns/op"),
                                  _setter([r], f"{k}_ns_change"), w))
    return out


def function_fdr(sec: ProfileSection, opts: CompareOptions, candidates: list[FunctionRow] = (),
                 counted: Counted | None = None) -> tuple[FdrFamily | None, FdrFamily | None]:
    """The focus family and the top-mover family (module docstring). `candidates`: every
    function the movers are picked from (after this); `counted`: the candidates' rows of
    CPU time per operation whose samples are counted, for the movers' moderated t."""
    asked = {(r.thread, r.name) for r in sec.focus + sec.focus_other_view}
    focus = sec.focus + sec.focus_other_view + [r for r in list(candidates) + sec.movers
                                                if (r.thread, r.name) in asked]
    others = [r for r in list(candidates) + sec.movers if (r.thread, r.name) not in asked]
    members = _function_members(focus, sec.paired, counted)
    for t in sec.threads:
        members.append(Member(
            f"thread group {t.group}", t.change,
            lambda o, t=t: ChangeOut.of(o.points(t.base.values, t.cand.values, higher_is_better=True,
                                                 paired=sec.paired), "pp"),
            _setter([t], "change")))
    if sec.per_op_total is not None:
        members.append(_metric_member(sec.per_op_total, sec.paired))
    movers = _function_members(others, sec.paired, counted, MOVERS_WEIGHTED)
    return (control("focus function", members, opts,
                    _display_members(focus, sec.paired, counted=counted), rule=FOCUS_RULE),
            control("top mover", movers, opts,
                    _display_members(others, sec.paired, MOVERS_WEIGHTED, counted),
                    rule=MOVER_RULE, weighted=MOVERS_WEIGHTED))


def metric_fdr(rows: list[MetricRow], opts: CompareOptions) -> FdrFamily | None:
    """The load generator's throughput and latency rows of a run of separate reps."""
    return control("throughput and latency", [_metric_member(r) for r in rows], opts)


def sweep_fdr(rows: list[tuple[str, MetricRow, bool, int | None, RunSpread | None]],
              opts: CompareOptions) -> FdrFamily | None:
    """A sweep's (or an experiment part's) headline rows, one per point: (point id, row,
    paired, pilot, the point's run's spread between runs). "An improvement from X on" reads
    across points, so the points' verdicts are judged together (each alone at 95% gives a
    false one per twenty null points); each keeps its own run's widening."""
    return control("point", [_metric_member(r, paired, pilot, pid, spread)
                             for pid, r, paired, pilot, spread in rows], opts)
