"""The false discovery rate control of the function tables, proved on recorded profiles.

tests/data/runs/mset-aa-default holds 16 profile reps of one build (an A/A run of the demo
case, eight a side): no function changed between any two groups of them. bench/fdr.py
draws 3 + 3 of them (the default --profile-reps), calls them variants a and b and builds
the report's profile section as `stallscope compare` does; any row it calls an improvement
or a regression is a false verdict. Judged alone at 95%, the rows of one table give a
false verdict in a large share of such runs (the naive rule failing); judged together
(Holm per family, the top movers weighted by share: analysis/compare/families.py) at most
about 5% a family. `make bench` figure 7 runs more splits."""
from __future__ import annotations

from pathlib import Path

import pytest

from analysis.compare import families
from analysis.inputs.rundir import load_run
from bench import fdr

RUN = Path(__file__).parent / "data" / "runs" / "mset-aa-default"
SPLITS = 40


@pytest.mark.heavy
def test_judged_together_the_function_tables_of_aa_splits_rarely_call_a_change():
    run = load_run(RUN)
    assert run.manifest.variants["a"].binary_sha256 == run.manifest.variants["b"].binary_sha256
    naive, ctrl, example = fdr.simulate(run, SPLITS, seed=3)
    assert naive.runs == ctrl.runs == SPLITS and naive.rows > 10      # many rows a table
    # the naive rule: false verdicts in a large share of runs, as ~20 tests at 5% predict
    assert naive.rate >= 0.25 and example, (naive, example)
    # the rule stallscope ships: at most about 5% per family (2 of 40 is 5%; 4 would be 10%),
    # so at most about 10% over the two function families together
    assert ctrl.with_false_focus <= 4 and ctrl.with_false_movers <= 4, ctrl
    assert ctrl.rate <= 0.15 and ctrl.with_false < naive.with_false / 3, (ctrl, naive)


@pytest.mark.heavy
def test_beside_a_known_cost_no_other_function_is_called_a_mover():
    """bench/fdr.py --known-cost on the recorded paired A/A run (tests/data/runs/
    mset-aa-paired-small): 5 of its paired reps a draw, a known own cost of 10% of the CPU
    added to msetGenericCommand on the b side. The cost is found in every draw; no other
    function is called a top mover (the movers' rule: family-wise error 5%), and at most one
    draw calls a focus function changed beyond its line."""
    run = load_run(fdr.KNOWN_RUN)
    assert run.manifest.variants["a"].binary_sha256 == run.manifest.variants["b"].binary_sha256
    shipped = fdr.SHIPPED
    assert fdr.KNOWN_RULES[shipped] == (families.FOCUS_RULE, families.MOVER_RULE,
                                        families.MOVERS_WEIGHTED)
    out, hits, _ = fdr.simulate_known(run, 6, seed=5, rules=(shipped,))
    o = out[shipped]
    assert hits[shipped] == 6 and o.with_false_movers == 0, (o, hits)
    assert o.with_false_marked <= 1, o
