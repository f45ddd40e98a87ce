"""The three-way rule of a bisection step (analysis/bisect/rule.py) and the search over a range
(analysis/bisect/search.py), proven by simulation from recorded per-rep values (bench/
bisection.py: the paired reps of three runs recorded on this project's 2-core VM, each run's
mean taken out, drawn with replacement, plus a known change), against the naive rule that
fails; then the search's logic on scripted step outcomes, and the range from a real git
repository."""
from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.bisect import rule
from analysis.bisect.report import markdown
from analysis.bisect.search import (CULPRIT, ENDS, FUNCTIONS, NO_CULPRIT, PROBE, REST, UNRESOLVED,
                                    Bisection, Commit)
from bench.bisection import COMMITS, bisection, one_step, residuals
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


@pytest.mark.heavy
def test_one_step_errs_at_most_its_alpha_and_the_naive_rule_does_not_keep_its_5pct(res):
    alpha = rule.step_alpha(COMMITS)
    m = rule.default_min_change(float(res.std(ddof=1)), alpha)
    got = one_step(res, m, alpha, SIMS)
    # no change: "different" is the error; a change of m: "same" is the error
    assert got[0.0]["three-way"]["different"] <= alpha + _mc(alpha, SIMS)
    assert got[1.0]["three-way"]["same"] <= alpha + _mc(alpha, SIMS)
    # the default minimum change is the one a step finds with 95% power (by its last look)
    assert got[1.0]["three-way"]["different"] >= 0.88
    assert got[2.0]["three-way"]["different"] >= 0.99
    # the naive rule at half the minimum: "different" most of the time (no indifference zone)
    assert got[0.5]["naive"]["different"] > 0.5 > got[0.5]["three-way"]["different"]


def test_whole_bisections_name_the_right_culprit_and_the_naive_rule_names_wrong_ones(res):
    alpha = rule.step_alpha(COMMITS)
    m = rule.default_min_change(float(res.std(ddof=1)), alpha)
    rng = np.random.default_rng(7)
    n = 400
    ours = [bisection(res, m, int(rng.integers(1, COMMITS + 1)), rng)[0] for _ in range(n)]
    naive = [bisection(res, m, int(rng.integers(1, COMMITS + 1)), rng, naive_steps=True)[0]
             for _ in range(n)]
    none = [bisection(res, m, None, rng)[0] for _ in range(n)]
    wrong = ours.count("wrong culprit") / n
    assert wrong <= rule.ALPHA, wrong               # the claim: at most 5% wrong culprits
    assert ours.count("right culprit") / n >= 0.75
    assert none.count("no culprit") / n >= 0.95 and "wrong culprit" not in none
    # each naive step spends its 5%: wrong culprits several times the three-way rule's, and
    # culprits named in ranges that hold no change (the three-way rule names none there)
    assert naive.count("wrong culprit") / n > 4 * max(wrong, 1 / n)
    assert "wrong culprit" in [bisection(res, m, None, rng, naive_steps=True)[0] for _ in range(n)]


def test_a_decision_looks_only_at_its_planned_looks():
    x = [0.2, 0.21, 0.19, 0.2, 0.5]          # five units: the look is at 3, the 5th is unused
    d = rule.decide(x, 0.05, 0.01)
    assert d.n == 3 and d.verdict == rule.DIFFERENT and math.isclose(d.change, math.expm1(0.2), rel_tol=1e-9)
    assert rule.decide(x[:2], 0.05, 0.01).verdict == rule.NOT_YET
    assert rule.next_look(3) == 6 and rule.next_look(12) is None
    same = rule.decide([0.001, -0.002, 0.0, 0.001, -0.001, 0.0], 0.05, 0.01)
    assert same.verdict == rule.SAME and same.n == 6


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


def test_a_smaller_minimum_change_plans_more_reps_and_keeps_its_power(res):
    alpha = rule.step_alpha(COMMITS)
    sd = float(res.std(ddof=1))
    assert rule.plan_looks(rule.default_min_change(sd, alpha), sd, alpha) == rule.LOOKS
    looks = rule.plan_looks(0.06, sd, alpha)
    assert looks[:2] == (3, 6) and looks[-1] > rule.LOOKS[-1] and rule.default_min_change(sd, alpha, looks) <= 0.06
    # the power it plans for, on the recorded reps: 95% by the last look (less the slack)
    rng = np.random.default_rng(11)
    from bench.bisection import sequential
    calls = [sequential(x, 0.06, alpha, looks)[0]
             for x in rng.choice(res, size=(600, looks[-1])) + math.log1p(0.06)]
    assert calls.count(rule.DIFFERENT) / 600 >= 0.88
    assert rule.plan_looks(0.001, sd, alpha)[-1] == rule.MAX_LAST_LOOK


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
