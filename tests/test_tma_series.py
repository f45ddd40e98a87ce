"""A job's TMA node series are one family (analysis/history/tma_series.py): E-Divisive on
each node alone at p < 0.05 calls a shift in most shift-free jobs of 20 nodes; judged
together (Holm over the nodes' permutation tests) about one job in twenty, and a real
shift of one node is still found, at its run."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from analysis.compare.results import TmaSection
from analysis.history import tma_series
from analysis.history.changepoints import detect
from analysis.history.edivisive import change_indices
from analysis.history.store import HistoryStore
from analysis.tma.funnel_doc import FunnelDoc, FunnelRowDoc, FunnelSide
from bench.synthetic_history import make_job

NODES = 20         # a level-3 funnel's rows, about
RUNS = 40


def _job(rng: np.random.Generator, shift_node: int | None = None, at: int = 20,
         size: float = 0.0) -> dict[str, list]:
    """name -> [(run, point)]: NODES series of RUNS values, % of slots with sd 1.5."""
    out = {}
    for i in range(NODES):
        v = rng.normal(30.0, 1.5, RUNS)
        if i == shift_node:
            v[at:] += size
        out[f"tma:Node{i}"] = [(None, {"value": float(x)}) for x in v]
    return out


@pytest.mark.heavy
def test_nodes_alone_call_false_shifts_in_most_jobs_judged_together_rarely():
    rng = np.random.default_rng(20261127)
    jobs = [_job(rng) for _ in range(30)]
    naive = sum(any(change_indices([p["value"] for _, p in pts]) for pts in j.values()) for j in jobs)
    family = sum(bool(tma_series.shifted(j)) for j in jobs)
    # Holm at 5%: about 1.5 of 30 jobs; 5 or more has probability 0.016 if it holds
    assert family <= 4, family
    assert naive >= 12, naive          # each node at 0.05: most jobs of 20 nodes


def test_a_shifted_node_is_found_and_only_it():
    rng = np.random.default_rng(7)
    found = tma_series.shifted(_job(rng, shift_node=3, size=4.5))      # 3 sd
    assert found == {"tma:Node3"}
    assert tma_series.p_value(list(rng.normal(0, 1, 5))) == 1.0        # too few runs to test


def _row(node: str, base: float, cand: float) -> FunnelRowDoc:
    side = lambda x: FunnelSide(n=1, values=[x], median=x, min=x, max=x)       # noqa: E731
    return FunnelRowDoc(node, node.rsplit(".", 1)[-1], 3, "slots", "%", side(base), side(cand),
                        None, None, 0.95, "", "", False, False, None, None, False)


@pytest.mark.heavy
def test_the_history_reports_the_shifted_node_at_its_run_and_no_other(tmp_path):
    rng = np.random.default_rng(11)
    h = make_job("tma", RUNS, [], seed=3)
    for k, run in enumerate(h.runs):
        rows = [_row(f"Backend_Bound.Node{i}", 30.0, float(rng.normal(30.0, 1.5)) + (4.5 if i == 5 and k >= 20
                                                                                    else 0.0))
                for i in range(NODES)]
        run["tma"] = dataclasses.asdict(TmaSection("replay", funnel=FunnelDoc(
            "stallscope.tma-funnel/1", "base", "cand", None, rows=rows)))
    st = HistoryStore.open(tmp_path / "h.sqlite")
    for r in h.runs:
        st.ingest_results(r, job=h.job)
    ids = [r.id for r in st.runs(h.job)]
    tma = [c for c in detect(st, h.job) if c.series.startswith("tma:")]
    assert [c.series for c in tma] == ["tma:Backend_Bound.Node5"], [c.series for c in tma]
    assert abs(ids.index(tma[0].first_run.id) - 20) <= 1
