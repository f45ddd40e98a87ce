"""The step rule of a bisection (analysis/bisect/rule.py) and the search over a range
(analysis/bisect/search.py): the rule's core on numbers worked by hand, then its error rates
by simulation from recorded per-rep values (bench/bisection.py: the paired reps of three runs
recorded on this project's 2-core VM, each run's mean taken out, drawn with replacement, plus
a known change), against the naive rule that fails; then the search's logic on scripted step
outcomes, and the range from a real git repository."""
from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.bisect import rule
from analysis.bisect.report import markdown
from analysis.bisect.search import (CULPRIT, ENDS, FUNCTIONS, NO_CULPRIT, PROBE, REST, UNRESOLVED,
                                    Bisection, Commit)
from bench.bisection import COMMITS, bisection, one_step, residuals, step_run
from collectors.bisect.commits import BisectError, first_parent_range
from tests.git_history import small_repo

SIMS = 1500


@pytest.fixture(scope="module")
def res() -> np.ndarray:
    return residuals()


def _mc(p: float, n: int) -> float:
    """Three standard errors of a simulated share (the test's own slack)."""
    return 3 * math.sqrt(max(p * (1 - p), 1e-4) / n)


def test_the_recorded_reps_are_the_three_real_runs(res):
    assert len(res) == 12 + 8 + 5
    assert abs(res.mean()) < 1e-12 and 0.01 < res.std(ddof=1) < 0.05


# ------------------------------------------------------------------ the rule's core, by hand
def test_the_bound_spends_a_on_a_spread_of_nu_degrees_of_freedom():
    for a in (0.0125, 0.004):
        for nu in (2, 5, 11, 60):
            big = rule.bound(a, nu)
            assert math.isclose((1 + 2 * big / nu) ** (-nu / 2), a, rel_tol=1e-9)
        # a spread known: Wald's ln(1 / a); a spread of few degrees of freedom asks far more
        assert rule.bound(a, 10 ** 6) == pytest.approx(math.log(1 / a), rel=1e-4)
        assert rule.bound(a, 2) == pytest.approx(1 / a - 1) and rule.bound(a, 2) > 10 * math.log(1 / a)


def test_a_decision_is_the_log_likelihood_ratio_against_its_bound():
    m, alpha = 0.05, 0.02
    d = math.log1p(m)
    x = [d + e for e in (0.01, -0.01, 0.02, -0.02, 0.0, 0.0)]       # mean d, 6 reps
    got = rule.decide(x, m, alpha)
    var = sum((v - d) ** 2 for v in x) / 5
    llr = d / var * (6 * d - 6 * d / 2)                              # L+ at the mean d
    assert got.n == 6 and got.verdict == rule.DIFFERENT
    assert got.llr == pytest.approx(llr, abs=1e-3) and got.bound == pytest.approx(rule.bound(alpha / 2, 4), abs=1e-3)
    assert math.isclose(got.change, m, rel_tol=1e-9) and got.low < m < got.high and got.level == rule.LEVEL
    # the same spread about 0: L+ = L- = -n d^2 / (2 s^2) below -A: the same
    same = rule.decide([v - d for v in x], m, alpha)
    assert same.verdict == rule.SAME and same.llr == pytest.approx(-6 * d * d / 2 / var, abs=1e-3)
    # halfway: neither (the indifference zone), and units past the last look reached wait
    half = rule.decide([v - d / 2 for v in x] + [5.0], m, alpha)
    assert half.verdict == rule.NOT_YET and half.n == 6 and abs(half.llr) < 1e-9
    assert rule.decide(x[:3], m, alpha).verdict == rule.NOT_YET        # before the first look
    assert rule.next_look(4) == 6 and rule.next_look(rule.MAX_REPS) is None


def test_a_probe_tests_the_bad_ends_direction_and_pooling_adds_degrees_of_freedom():
    m, alpha = 0.05, 0.02
    d = math.log1p(m)
    x = np.array([0.02, -0.02, 0.03, -0.03])
    # four reps alone: nu - 1 = 2 degrees of freedom, the bound 1/a - 1: nothing is decided
    alone = rule.decide(x, m, alpha, side=-1)
    assert alone.verdict == rule.NOT_YET and alone.bound == pytest.approx(1 / alpha - 1, abs=1e-3)
    # the same reps with 40 more degrees of freedom of the same spread from other steps: the same
    pool = (float((x ** 2).sum()) * 40 / 3, 40)
    pooled = rule.decide(x, m, alpha, pool=pool, side=-1)
    assert pooled.verdict == rule.SAME and pooled.bound == pytest.approx(rule.bound(alpha, 42), abs=1e-3)
    # a probe that moved the other way from the bad end is different (the search ends there)
    other = rule.decide(x + d, m, alpha, pool=pool, side=-1)
    assert other.verdict == rule.DIFFERENT and other.change > 0
    # both directions (the ends) split alpha: a larger bound than one direction's
    assert rule.decide(x, m, alpha, pool=pool).bound > pooled.bound


def test_the_default_minimum_change_is_decided_by_12_reps_95_in_100():
    sd, alpha = 0.0271, 0.0125
    m = rule.default_min_change(sd, alpha)
    assert m == 0.05                                                  # 4.9%, up to the half percent
    d = math.log1p(m)
    big = rule.bound(alpha / 2, rule.DEFAULT_BY - 2)
    # L at the change's 5% quantile after 12 reps reaches the bound
    n = rule.DEFAULT_BY
    low = n * d - rule.POWER_Z * sd * math.sqrt(n)
    assert d / sd ** 2 * (low - n * d / 2) >= big
    assert 12 < rule.expected_reps(0.02, sd, alpha) < 25 < rule.expected_reps(0.015, sd, alpha)


# ------------------------------------------------------------------ error rates, simulated
@pytest.mark.heavy
def test_one_step_errs_at_most_its_alpha_and_the_naive_rule_does_not_keep_its_5pct(res):
    alpha = rule.step_alpha(COMMITS)
    m = rule.default_min_change(float(res.std(ddof=1)), alpha)
    got = one_step(res, m, alpha, SIMS)
    # no change: "different" is the error; a change of m: "same" is the error
    assert got[0.0]["sequential"]["different"] <= alpha + _mc(alpha, SIMS)
    assert got[1.0]["sequential"]["same"] <= alpha + _mc(alpha, SIMS)
    # the default minimum change: decided by 12 reps 95 times in 100 (its 95th percentile)
    assert got[1.0]["sequential"]["different"] >= 0.95 and got[1.0]["sequential"]["p95"] <= 16
    assert got[0.0]["sequential"]["same"] >= 0.95 and got[0.0]["sequential"]["p95"] <= 16
    # in fewer reps than the interval rule before it (which tested m/2, not 0)
    for mult in (0.0, 1.0):
        assert got[mult]["sequential"]["reps"] < got[mult]["interval"]["reps"]
    # the naive rule keeps no error rate: at m/2 "different" most of the time, at 0 over 5%
    assert got[0.0]["naive"]["different"] > alpha + _mc(alpha, SIMS)


@pytest.mark.heavy
def test_a_long_step_keeps_its_alpha_too(res):
    """A minimum of half a rep's spread (30-40 reps a step, the bound near Wald's): the bound at
    nu - 1 keeps each error under alpha, for the ends (both directions) and a probe (one)."""
    alpha, sims = rule.step_alpha(COMMITS), 1200
    m = math.expm1(0.5 * float(res.std(ddof=1)))
    rng = np.random.default_rng(23)
    for side in (None, -1):
        for mult, wrong in ((0.0, rule.DIFFERENT), (-1.0, rule.SAME)):
            draws = rng.choice(res, size=(sims, rule.MAX_REPS)) + mult * math.log1p(m)
            got = [step_run(x, lambda y: rule.decide(y, m, alpha, side=side).verdict, rule.LOOKS)[0]
                   for x in draws]
            assert got.count(wrong) / sims <= alpha + _mc(alpha, sims), (side, mult, got.count(wrong))


def test_whole_bisections_name_the_right_culprit_and_the_naive_rule_names_wrong_ones(res):
    alpha = rule.step_alpha(COMMITS)
    m = rule.default_min_change(float(res.std(ddof=1)), alpha)
    rng = np.random.default_rng(7)
    n = 300
    ours = [bisection(res, m, int(rng.integers(1, COMMITS + 1)), rng)[0] for _ in range(n)]
    naive = [bisection(res, m, int(rng.integers(1, COMMITS + 1)), rng, "naive")[0] for _ in range(n)]
    none = [bisection(res, m, None, rng)[0] for _ in range(n)]
    wrong = ours.count("wrong culprit") / n
    assert wrong <= rule.ALPHA, wrong               # the claim: at most 5% wrong culprits
    assert ours.count("right culprit") / n >= 0.95
    assert none.count("no culprit") / n >= 0.95 and "wrong culprit" not in none
    # each naive step spends its 5%: wrong culprits, and culprits named in ranges that hold no
    # change (the sequential rule names none there)
    assert naive.count("wrong culprit") / n > max(wrong, 1 / n)
    assert "wrong culprit" in [bisection(res, m, None, rng, "naive")[0] for _ in range(n)]


@pytest.mark.heavy
def test_a_change_below_the_minimum_ends_unresolved_or_right_not_wrong(res):
    """Half the minimum sits at the step rule's midpoint: probes after it go either way, and a
    culprit named at a commit of chance is caught by its parent, which it does not differ from."""
    alpha = rule.step_alpha(COMMITS)
    m = rule.default_min_change(float(res.std(ddof=1)), alpha)
    rng = np.random.default_rng(9)
    got = [bisection(res, m, int(rng.integers(1, COMMITS + 1)), rng, size=m / 2)[0] for _ in range(300)]
    assert got.count("wrong culprit") / 300 <= rule.ALPHA and got.count("right culprit") < 150


# ------------------------------------------------------------------ the search, scripted
def _bis(n: int = 8) -> Bisection:
    commits = [Commit(f"{i:02d}" * 20, f"subject {i}", "2026-11-27T00:00:00+00:00") for i in range(n + 1)]
    return Bisection("mset-50keys", "/r", "good", "bad", commits, 0.05, "as given",
                     rule.step_alpha(n), list(rule.LOOKS), 3600.0)


def _say(step, verdict: str) -> None:
    n = rule.LOOKS[-1] if verdict == rule.NOT_YET else rule.LOOKS[1]   # "not yet" at the last look
    step.log_ratios = [0.0] * n
    step.decision = {"verdict": verdict, "n": n, "change": -0.1 if verdict == "different" else 0.0,
                     "low": -0.12, "high": -0.08, "level": 0.99}


def _drive(b: Bisection, truth) -> list[tuple[str, int, int]]:
    asked: list[tuple[str, int, int]] = []
    while (s := b.next_step()) is not None:
        asked.append((s.role, s.base, s.probe))
        assert len(asked) < 30, asked
        _say(s, truth(s))
    return asked


def test_the_search_finds_the_first_different_commit():
    b = _bis()
    asked = _drive(b, lambda s: "different" if s.probe >= 5 and s.base < 5 else "same")
    assert b.status == CULPRIT and b.culprit().sha == "05" * 20
    assert [a for a in asked if a[0] in (ENDS, PROBE)] == [(ENDS, 0, 8), (PROBE, 0, 4), (PROBE, 0, 6), (PROBE, 0, 5)]
    assert asked[-2:] == [(FUNCTIONS, 4, 5), (REST, 5, 8)]
    assert "Culprit: `050505050505`" in markdown(b)


def test_no_change_between_the_ends_is_no_culprit_after_one_step():
    b = _bis()
    assert _drive(b, lambda s: "same") == [(ENDS, 0, 8)]
    assert b.status == NO_CULPRIT and b.why.startswith("no culprit: the bad end is the same")


def test_an_undecided_probe_leaves_the_range_it_narrowed_to():
    b = _bis()
    _drive(b, lambda s: {8: "different", 4: "same"}.get(s.probe, "not yet"))
    assert b.status == UNRESOLVED and "the culprit is in 040404040404..080808080808" in b.why


def test_two_changes_name_the_first_and_say_the_rest_is_unresolved():
    b = _bis()
    # changes at commits 3 and 7: against the good end every commit from 3 on differs
    _drive(b, lambda s: "different" if (s.base < 3 <= s.probe) or (s.base < 7 <= s.probe) else "same")
    assert b.culprit().sha == "03" * 20
    assert "another change may lie after the culprit; it is unresolved" in markdown(b)


def test_the_state_survives_json_and_resumes_at_the_same_step():
    b = _bis()
    _say(b.next_step(), "different")
    again = Bisection.from_json(b.to_json())
    nxt = again.next_step()
    assert (nxt.role, nxt.probe) == (PROBE, 4) and again.bounds() == (0, 8)


# -------------------------------------------------------------- the range, a real git repo
def test_the_range_is_the_first_parent_line_oldest_first(tmp_path):
    r, shas = small_repo(tmp_path)
    got = first_parent_range(r, shas[0], "main")
    assert [c.sha for c in got] == shas and got[-1].subject == "commit 3" and got[0].date


def test_bad_ranges_say_what_is_wrong(tmp_path):
    r, shas = small_repo(tmp_path)
    with pytest.raises(BisectError, match="not on the first-parent line"):
        first_parent_range(r, shas[3], shas[0])
    with pytest.raises(BisectError, match="'nope' not found"):
        first_parent_range(r, "nope", "main")
    with pytest.raises(BisectError, match="the same commit"):
        first_parent_range(r, "main", shas[3])
    with pytest.raises(BisectError, match="not a git repository"):
        first_parent_range(tmp_path, "a", "b")


def test_the_command_says_what_is_wrong_and_exits_2(tmp_path, capsys):
    from commands.table import main
    assert main(["bisect", "mset-50keys", "--repo", f"git:{tmp_path}", "--good", "a", "--bad", "b"]) == 2
    assert f"stallscope bisect: error: {tmp_path} is not a git repository" in capsys.readouterr().err
    assert main(["bisect", "--resume", str(tmp_path)]) == 2
    assert "no bisect.json (not a bisection directory" in capsys.readouterr().err
    assert main(["bisect", "mset-50keys"]) == 2
    assert "give CASE, --repo, --good and --bad" in capsys.readouterr().err
    r, shas = small_repo(tmp_path)
    assert main(["bisect", "no-such-case", "--repo", str(r), "--good", shas[0], "--bad", shas[-1]]) == 2
    assert "no-such-case" in capsys.readouterr().err


def test_a_hint_is_probed_first_and_a_late_one_is_followed_back_in_doubling_steps():
    """A scheduled job's history places the change after commit 6 (its run before the place):
    probed first. Right, two steps after the ends name the culprit; the change one commit
    earlier than placed, the search goes back 5, 3, then halves."""
    b = _bis()
    b.hint = 6
    asked = _drive(b, lambda s: "different" if s.base < 7 <= s.probe else "same")
    assert [a for a in asked if a[0] in (ENDS, PROBE)] == [(ENDS, 0, 8), (PROBE, 0, 6), (PROBE, 0, 7)]
    assert b.status == CULPRIT and b.culprit().sha == "07" * 20 and "060606060606 probed first" in markdown(b)
    b = _bis()
    b.hint = 6
    asked = _drive(b, lambda s: "different" if s.base < 4 <= s.probe else "same")
    assert [a[2] for a in asked if a[0] == PROBE] == [6, 5, 3, 4]
    assert b.culprit().sha == "04" * 20
    # each step's share of the error counts the search back: 2 + 2 log2 n steps, not 1 + log2 n
    assert rule.max_steps(8, hinted=True) == 8 and rule.max_steps(8) == 4


def test_a_culprit_that_does_not_differ_from_its_parent_is_unresolved_not_named():
    """Half the minimum change at commit 3: probes after it went either way (5 'same', 6
    'different'), and 6 does not differ from its parent 5: no culprit is named."""
    b = _bis()
    _drive(b, lambda s: {(0, 8): "different", (0, 4): "different", (0, 2): "same", (0, 3): "different",
                         (2, 3): "same"}.get((s.base, s.probe), "same"))
    assert b.status == UNRESOLVED and b.culprit() is None
    assert "030303030303 is the first commit shown different from the good end, but not from its parent" in b.why


def test_a_budget_spent_after_the_culprit_is_proven_keeps_it():
    b = _bis()
    for s in iter(b.next_step, None):
        if s.role == FUNCTIONS:             # proven: 5 differs, 4 is the same
            break
        _say(s, "different" if s.probe >= 5 else "same")
    b.out_of_budget(3700.0)
    assert b.status == CULPRIT and b.culprit().sha == "05" * 20 and "not confirmed against its parent" in b.why
    b = _bis()
    _say(b.next_step(), "different")
    b.out_of_budget(3700.0)
    assert b.status == UNRESOLVED and b.why.startswith("budget spent")


def test_a_failing_functions_comparison_leaves_the_result_standing(tmp_path, monkeypatch):
    """Any failure of the functions table (a template error, a bad run directory) is said
    and gives no rows; it never ends a bisection whose culprit is already known."""
    from collectors.bisect import driver

    def broken(run_dir, out):
        raise RuntimeError("template changed under us")
    monkeypatch.setattr(driver, "report_run", broken)
    said: list[str] = []
    assert driver._functions(tmp_path, tmp_path / "run", said.append) == []
    assert said and "RuntimeError" in said[0] and "template changed under us" in said[0]


def test_a_probe_that_differs_the_other_way_is_a_second_change_not_the_bad_side():
    """Commit 4 made things faster (+10%), commit 6 slower than that by more: the ends say
    -10%. Probe 4 differs from good the *other* way; counting it as the bad side would name
    a culprit at or before 4, the improvement. The search stops unresolved and says why."""
    b = _bis()
    for s in iter(b.next_step, None):
        _say(s, "different")
        if s.role == PROBE and s.probe == 4:
            s.decision.update(change=+0.1, low=0.08, high=0.12)
    assert b.status == UNRESOLVED and b.culprit() is None
    assert "040404040404 differs from the good end the other way from the bad end" in b.why
    # the same probe the way the bad end went is its side, as before
    b = _bis()
    _drive(b, lambda s: "different" if s.probe >= 4 else "same")
    assert b.status == CULPRIT and b.culprit().sha == "04" * 20
