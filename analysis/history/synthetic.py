"""Realistic synthetic history, for the detector's precision/recall and the store's speed
(bench/history.py) and for tests: runs of N runners x M jobs x K days whose results.json
has the shape `stallscope compare` writes (throughput, CPU per operation of focus
functions, the in-run change), with rep-to-rep noise at the coefficients of variation
measured on the 2-core VM, and shifts of known size injected at known runs.

Noise defaults (docs/statistics.md, README): paired throughput across runs ~3% CV
(the run's median over 5 paired reps), a focus function's CPU per op ~4%.
"""
from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field

FUNCTIONS = ("dictFindLinkInternal", "lookupKey", "msetGenericCommand", "setKey")


@dataclass
class Shift:
    run: int                      # index of the first run after the shift
    size: float                   # relative (-0.05: throughput 5% lower; cost 5% higher)
    function: str = "dictFindLinkInternal"   # whose CPU per op moves with it


@dataclass
class JobHistory:
    job: str
    runs: list[dict] = field(default_factory=list)      # results.json dicts, oldest first
    shifts: list[Shift] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)


def _side(vals: list[float]) -> dict:
    s = sorted(vals)
    n = len(s)
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    return {"n": n, "median": med, "min": s[0], "max": s[-1], "values": vals, "reps": list(range(1, n + 1))}


def make_job(job: str, days: int, shifts: list[Shift], *, seed: int = 0, reps: int = 5,
             cv_throughput: float = 0.03, cv_cpu: float = 0.04, start: dt.datetime | None = None,
             base_ops: float = 20000.0) -> JobHistory:
    rng = random.Random(seed)
    start = start or dt.datetime(2026, 1, 1, 2, 0, 0)
    h = JobHistory(job, shifts=shifts)
    cost = {f: c for f, c in zip(FUNCTIONS, (12000.0, 9000.0, 400.0, 2500.0))}
    for day in range(days):
        ops = base_ops
        run_cost = dict(cost)
        for s in shifts:
            if day >= s.run:
                ops *= 1 + s.size
                # the function pays all the CPU per op that the throughput change implies
                run_cost[s.function] += sum(cost.values()) * (1 / (1 + s.size) - 1)
        level = rng.gauss(1.0, cv_throughput)           # this run's machine/noise level
        cand = [ops * level * rng.gauss(1.0, cv_throughput / 2) for _ in range(reps)]
        base = [base_ops * level * rng.gauss(1.0, cv_throughput / 2) for _ in range(reps)]
        commit = f"{rng.getrandbits(160):040x}"
        h.commits.append(commit)
        focus = []
        for f, c in run_cost.items():
            cn = [c * rng.gauss(1.0, cv_cpu) for _ in range(3)]
            bn = [cost[f] * rng.gauss(1.0, cv_cpu) for _ in range(3)]
            focus.append({"name": f, "base_flat_ns": _side(bn), "cand_flat_ns": _side(cn),
                          "flat_ns_change": {"rel": _side(cn)["median"] / _side(bn)["median"] - 1,
                                             "verdict": ""}})
        created = (start + dt.timedelta(days=day)).strftime("%Y-%m-%dT%H:%M:%SZ")
        h.runs.append({
            "schema": 3, "run_id": f"{created[:10].replace('-', '')}-{job}", "created": created,
            "case": {"name": job, "size": "default"}, "base": "base", "cand": "cand",
            "paired": [{"test": job, "metric": "paired throughput", "unit": "ops/s",
                        "higher_is_better": True, "base": _side(base), "cand": _side(cand),
                        "change": {"rel": _side(cand)["median"] / _side(base)["median"] - 1,
                                   "verdict": ""}}],
            "profile": {"focus": focus},
            "environment": {"variants": {"base": {"commit": "f" * 40}, "cand": {"commit": commit}}},
        })
    return h
