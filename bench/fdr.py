"""`make bench` figure 7: false verdicts in a report's function tables, with and without
the false discovery rate control (analysis/compare/multiplicity.py), on recorded profiles.

An A/A run of the demo case (tests/data/runs/mset-aa-default: one build on both sides,
eight profile reps each) holds 16 profile reps of one build: no function truly changed
between any two groups of them. Each simulated run draws 3 + 3 of them at random (the
default --profile-reps), calls the first three "a" and the others "b", and builds the
report's profile section as `stallscope compare` does. Every row it then calls an
"improvement" or a "regression" is a false verdict:

- naive: each row judged alone at 95% (the rule before the control);
- controlled: the rows of each function family judged together, what stallscope ships:
  Holm at 5% (intervals at 1 - q/(m - R)), the top movers weighted by each function's own
  share (each row at its own level; bench/movers.py, figure 7d, shows that rule's power).
  The families (analysis/compare/families.py): the focus functions the case declares (both
  thread views, the thread groups, the whole profile's CPU time per operation), and the
  top-mover candidates.

The figure is the share of simulated runs with at least one false verdict in the focus
family, in the top-mover family, and anywhere in the function tables: the controlled rule
promises at most 5% per family (so at most about 10% anywhere).

  .venv/bin/python bench/fdr.py
  .venv/bin/python bench/fdr.py --runs 400 --seed 7
  .venv/bin/python bench/fdr.py --known-cost

Figure 7c (`--known-cost`, in `make bench`) asks the same with a real change: draws of 5 of
the 10 paired reps of tests/data/runs/mset-aa-paired-small (a paired A/A run at CI size,
perf in its windows), each b side given a known own cost in msetGenericCommand
(KNOWN_FRACTION of the rep's CPU, added on its heaviest stack through msetGenericCommand),
so that function's own cost and the cumulative cost of every caller up that stack truly
moved, and nothing else did. A verdict on any other row is false. With the function
families held to their false discovery rate (Benjamini-Hochberg), every row the cost moves
is a discovery that loosens the level for the rest, and false verdicts come with the real
change. Held to their family-wise error (Holm, what stallscope ships:
analysis/compare/families.py) the chance of any false verdict is at most 5% a family, as
far as the two servers of one build do not differ for real: the figure shows that they do,
a little, in some focus functions' own costs (below the 3% line, mostly).
"""
from __future__ import annotations

import argparse
import math
import sys
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from unittest import mock

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis import stats  # noqa: E402
from analysis.compare import families, profile_reps, profiles as profiles_mod  # noqa: E402
from analysis.compare.options import CompareOptions  # noqa: E402
from analysis.compare.results import ProfileSection  # noqa: E402
from analysis.inputs.rundir import RunDir, load_run  # noqa: E402
from analysis.profile.stacks import Stacks  # noqa: E402

RUN = REPO / "tests" / "data" / "runs" / "mset-aa-default"
PER_SIDE = 3
KNOWN_FUNCTION = "msetGenericCommand"
# the known own cost, as a fraction of the rep's CPU: about a tenth, as the live test's
# 3 us busy wait is of an MSET of 50 keys at CI size (tests/test_known_effects.py)
KNOWN_FRACTION = 0.10
# a paired A/A run at CI size profiled in its windows, 10 reps; each draw takes 5 of them,
# as the live known-cost test runs 5 paired reps (tests/test_known_effects.py)
KNOWN_RUN = REPO / "tests" / "data" / "runs" / "mset-aa-paired-small"
KNOWN_PER_SIDE = 5
# (focus family's rule, top movers' rule, top movers weighted by share with the moderated
# t) of each rule figure 7c compares
BEFORE = "both families by Benjamini-Hochberg (before)"
HOLM = "both families by Holm (2026-11-27)"
SHIPPED = "Holm, the top movers weighted by share, moderated t (shipped)"
KNOWN_RULES = {BEFORE: ("bh", "bh", False),
               "focus BH, top movers Bonferroni": ("bh", "bonferroni", False),
               "both families by Bonferroni": ("bonferroni", "bonferroni", False),
               HOLM: ("holm", "holm", False),
               SHIPPED: ("holm", "holm", True)}
CALLED = stats.DECIDED      # a minor change is a decided one too


@dataclass
class Outcome:
    rule: str
    runs: int
    with_false: int                  # runs with at least one false verdict
    false_rows: int                  # false verdicts over all runs
    rows: float                      # statistical rows per run, on average
    with_false_focus: int = 0        # runs with a false verdict among the focus rows
    with_false_movers: int = 0       # runs with a false verdict among the top movers
    with_false_marked: int = 0       # runs with a false ✅/❌ verdict (not a minor one)

    @property
    def rate(self) -> float:
        return self.with_false / self.runs

    def interval(self) -> tuple[float, float]:
        """Wilson 95% interval of the rate (the runs share reps, so it is a little narrow)."""
        n, p, z = self.runs, self.rate, 1.96
        mid = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return max(0.0, mid - half), min(1.0, mid + half)


def called(sec: ProfileSection) -> tuple[list[str], list[str], int]:
    """(the focus family's rows the section calls a change, the top movers' rows it calls
    a change, how many rows had a statistic)."""
    out, movers, judged = [], [], 0
    for rows, found in ((sec.focus + sec.focus_other_view, out), (sec.movers, movers)):
        for r in rows:
            for k in ("flat", "cum"):
                j = getattr(r, f"{k}_verdict")
                if j is not None and j.basis:
                    judged += 1
                    if j.verdict in CALLED:
                        found.append(f"{r.name} ({k}, {r.thread}): {j.verdict}")
    for t in sec.threads:
        judged += 1
        if t.change.verdict in CALLED:
            out.append(f"thread {t.group}: {t.change.verdict}")
    tot = sec.per_op_total
    if tot is not None and tot.change is not None:
        judged += 1
        if tot.change.verdict in CALLED:
            out.append(f"CPU time per operation: {tot.change.verdict}")
    return out, movers, judged


@contextmanager
def _split(a: list[profile_reps.ProfileRep], b: list[profile_reps.ProfileRep], controlled: bool):
    """profiles() reading these reps as variants a and b (rep numbers 1..n each side)."""
    sides = {"a": [replace(r, rep=i + 1) for i, r in enumerate(a)],
             "b": [replace(r, rep=i + 1) for i, r in enumerate(b)]}
    with mock.patch.object(profiles_mod.profile_reps, "load", lambda run, variants: sides):
        if controlled:
            yield
        else:
            with mock.patch.object(profiles_mod, "function_fdr",
                                   lambda sec, opts, candidates=(), counted=None: (None, None)):
                yield


def simulate(run: RunDir, runs: int, seed: int, per_side: int = PER_SIDE
             ) -> tuple[Outcome, Outcome, list[str]]:
    """(naive, controlled, an example of the naive rule's false verdicts)."""
    sides = profile_reps.load(run, tuple(run.manifest.variants))
    if sum(map(len, sides.values())) < 2 * per_side:
        raise SystemExit(f"{run.path}: {sum(map(len, sides.values()))} profile reps, {2 * per_side} needed")
    focus = list(run.manifest.case.focus or [])
    opts = CompareOptions()
    rng = np.random.default_rng(seed)
    tallies = {True: [0, 0, 0, 0, 0], False: [0, 0, 0, 0, 0]}
    example: list[str] = []
    for _ in range(runs):
        a, b = _draw(sides, False, per_side, rng)       # a random split of every rep
        for controlled in (False, True):
            with _split(a, b, controlled):
                sec, _ = profiles_mod.profiles(run, "a", "b", focus, opts)
            focus_found, movers_found, judged = called(sec)
            found = focus_found + movers_found
            t = tallies[controlled]
            t[0] += bool(found)
            t[1] += len(found)
            t[2] += judged
            t[3] += bool(focus_found)
            t[4] += bool(movers_found)
            if found and not controlled and not example:
                example = found
    out = [Outcome(rule, runs, t[0], t[1], t[2] / runs, t[3], t[4])
           for rule, t in (("naive (each row at 95%)", tallies[False]),
                           ("controlled (each family at 5%)", tallies[True]))]
    return out[0], out[1], example


def with_known_cost(rep: profile_reps.ProfileRep, fn: str, fraction: float
                    ) -> tuple[profile_reps.ProfileRep, set[str]]:
    """The rep with `fraction` of its CPU added as `fn`'s own cost on its heaviest stack
    through `fn`, and the functions above `fn` on that stack (whose cumulative cost moved)."""
    st = rep.stacks
    through = [(w, fr) for fr, w in st.weights.items() if fn in st.functions_of(fr)]
    if not through:
        raise SystemExit(f"{rep.dir}: no stack through {fn}")
    frames = max(through)[1]
    fns = st.functions_of(frames)
    cut = frames[:len(frames) - len(fns) + fns.index(fn) + 1]
    out = Stacks(dict(st.weights), st.unit, st.thread_frame)
    out.add(cut, fraction * st.total)
    return replace(rep, stacks=out), set(fns[:fns.index(fn)])


def _false_rows(sec: ProfileSection, fn: str, callers: set[str]) -> tuple[list[str], list[str], bool]:
    """(false focus rows, false movers, whether fn's own cost was called a regression): every
    decided row except fn's own and cumulative cost, its callers' cumulative cost, the whole
    profile's CPU per operation and the thread groups (the cost is the main thread's)."""
    focus, movers, hit = [], [], False
    for rows, found in ((sec.focus + sec.focus_other_view, focus), (sec.movers, movers)):
        for r in rows:
            for k in ("flat", "cum"):
                j = getattr(r, f"{k}_verdict")
                if j is None or j.verdict not in CALLED:
                    continue
                if r.name == fn:
                    hit = hit or (k == "flat" and "regression" in j.verdict)
                elif not (k == "cum" and r.name in callers):
                    found.append(f"{r.name} ({k}, {r.thread}): {j.verdict}")
    return focus, movers, hit


def _draw(sides: dict[str, list[profile_reps.ProfileRep]], paired: bool, per_side: int,
          rng: np.random.Generator) -> tuple[list[profile_reps.ProfileRep], list[profile_reps.ProfileRep]]:
    """per_side reps a side: of a paired run, per_side of its paired reps (both sides of each,
    so the pairs stay pairs); else a random split of every rep of the run."""
    a_side, b_side = sides.values()
    if paired:
        pick = sorted(rng.choice(len(a_side), per_side, replace=False))
        return [a_side[i] for i in pick], [b_side[i] for i in pick]
    pool = a_side + b_side
    pick = rng.choice(len(pool), 2 * per_side, replace=False)
    return [pool[i] for i in pick[:per_side]], [pool[i] for i in pick[per_side:]]


def simulate_known(run: RunDir, runs: int, seed: int, fn: str = KNOWN_FUNCTION,
                   fraction: float = KNOWN_FRACTION, per_side: int = KNOWN_PER_SIDE,
                   rules: tuple[str, ...] = tuple(KNOWN_RULES), confidence: float = 0.95
                   ) -> tuple[dict[str, Outcome], dict[str, int], list[str]]:
    """Figure 7c: per rule of the function families (KNOWN_RULES), the runs with a false verdict when
    b carries a known cost in `fn`; how often fn's own cost was called a regression; an
    example of the false movers under BH."""
    sides = profile_reps.load(run, tuple(run.manifest.variants))
    paired = profile_reps.are_paired(sides)
    focus_fns = list(run.manifest.case.focus or [])
    opts, rng = CompareOptions(confidence=confidence), np.random.default_rng(seed)
    tallies = {rule: [0, 0, 0, 0, 0] for rule in rules}
    hits = {rule: 0 for rule in tallies}
    example: list[str] = []
    for _ in range(runs):
        a, drawn = _draw(sides, paired, per_side, rng)
        b, callers = [], set()
        for r in drawn:
            rep, up = with_known_cost(r, fn, fraction)
            b.append(rep)
            callers |= up
        for rule, t in tallies.items():
            focus_rule, mover_rule, weighted = KNOWN_RULES[rule]
            with _split(a, b, True), mock.patch.object(families, "MOVER_RULE", mover_rule), \
                    mock.patch.object(families, "FOCUS_RULE", focus_rule), \
                    mock.patch.object(families, "MOVERS_WEIGHTED", weighted):
                sec, _ = profiles_mod.profiles(run, "a", "b", focus_fns, opts)
            focus, movers, hit = _false_rows(sec, fn, callers)
            marked = [f for f in focus + movers if "minor" not in f]
            for i, v in enumerate((bool(focus or movers), len(focus + movers), bool(marked),
                                   bool(focus), bool(movers))):
                t[i] += v
            hits[rule] += hit
            if rule == BEFORE and movers and not example:
                example = focus + movers
    out = {rule: Outcome(rule, runs, t[0], t[1], 0.0, t[3], t[4], t[2])
           for rule, t in tallies.items()}
    return out, hits, example


def _print_known(run: Path, runs: int, seed: int, rules: tuple[str, ...] = tuple(KNOWN_RULES)) -> None:
    out, hits, example = simulate_known(load_run(run), runs, seed, rules=rules)
    print(f"figure 7c: false verdicts when b carries a known own cost in {KNOWN_FUNCTION} "
          f"({KNOWN_FRACTION:.0%} of its CPU; {KNOWN_PER_SIDE} of the {run.name} paired reps a draw, "
          f"{runs} draws)")
    for rule, o in out.items():
        lo, hi = o.interval()
        print(f"  {o.rule}: runs with a false verdict {100 * o.rate:5.1f}% [{100 * lo:.1f}, "
              f"{100 * hi:.1f}] (focus family {100 * o.with_false_focus / o.runs:.1f}%, top movers "
              f"{100 * o.with_false_movers / o.runs:.1f}%; a false ✅/❌ {100 * o.with_false_marked / o.runs:.1f}%); "
              f"{o.false_rows / o.runs:.2f} false verdicts per run; the known cost called a regression "
              f"in {100 * hits[rule] / o.runs:.0f}%")
    if example:
        print(f"  e.g. {BEFORE}, a false mover: " + "; ".join(example[:3]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", type=Path, help=f"an A/A run directory (default: {RUN}; with "
                    f"--known-cost {KNOWN_RUN})")
    ap.add_argument("--runs", type=int, help="simulated runs (default 300; with --known-cost 60)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--known-cost", action="store_true",
                    help=f"figure 7c: the splits' b side carries a known cost in {KNOWN_FUNCTION}")
    ap.add_argument("--rules", nargs="+", choices=range(len(KNOWN_RULES)), type=int,
                    help="figure 7c: only these rules, by their place in the figure (0-"
                         f"{len(KNOWN_RULES) - 1}; default all)")
    args = ap.parse_args()
    if args.known_cost:
        rules = tuple(list(KNOWN_RULES)[i] for i in args.rules) if args.rules else tuple(KNOWN_RULES)
        _print_known(args.run or KNOWN_RUN, args.runs or 60, args.seed, rules)
        return 0
    args.run, args.runs = args.run or RUN, args.runs or 300
    run = load_run(args.run)
    naive, ctrl, example = simulate(run, args.runs, args.seed)
    print(f"figure 7: false verdicts in the function tables of A/A splits "
          f"({PER_SIDE}+{PER_SIDE} of the {args.run.name} profile reps, {args.runs} runs)")
    for o in (naive, ctrl):
        lo, hi = o.interval()
        print(f"  {o.rule}: runs with a false verdict {100 * o.rate:5.1f}% "
              f"[{100 * lo:.1f}, {100 * hi:.1f}]; {o.false_rows / o.runs:.2f} false verdicts "
              f"per run over {o.rows:.1f} statistical rows (focus family {100 * o.with_false_focus / o.runs:.1f}%, "
              f"top movers {100 * o.with_false_movers / o.runs:.1f}%)")
    if example:
        print("  e.g. the naive rule called: " + "; ".join(example[:3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
