"""Case labels in the seed tables' words (keyspace × value size × command shape), from
the project's own case files and from the cases recorded in run directories."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.inputs.case import Case, count, size
from collectors.workload.cases import load_case
from collectors.workload.working_set import Llc

RUNS = Path(__file__).parent / "data" / "runs"


@pytest.mark.parametrize("name, size_, label", [
    ("mset-50keys", "default", "10M keys × 10 B, 50 keys per MSET"),
    ("mset-50keys", "tiny", "200K keys × 10 B, 50 keys per MSET"),
    ("mset-10keys", "default", "10M keys × 10 B, 10 keys per MSET"),
    ("hgetall", "default", "100K hashes × 100 fields × 100 B, HGETALL"),
    ("hgetall-1key-1kfields", "default", "1 hash × 1K fields × 100 B, HGETALL"),
    ("zrange-129members", "default", "100K zsets × 129 members, ZRANGE"),
    ("mget-100keys", "default", "5M keys × 100 B, 100 keys per MGET"),
    ("get-iothreads", "default", "5M keys × 100 B, GET, io-threads 2"),
    ("rdb-load", "default", "1M keys × 100 B, RDB load"),
])
def test_case_files_have_seed_labels(name, size_, label):
    # a 32 MB L3 (the AMD CI guests): each case's own key counts, past 4x that cache already
    assert load_case(name, size_, llc=Llc(32 * 2**20)).label() == label


def test_pipeline_and_matrix_choices_show():
    c = load_case("mget-30keys", llc=Llc(32 * 2**20))
    c.workload.pipeline = 16
    assert c.label() == "5M keys × 100 B, 30 keys per MGET, pipeline 16"


@pytest.mark.parametrize("run, label", [
    ("mset-demo-small-v1", "200K keys × 10 B, 50 keys per MSET"),
    ("io-threads-mset", "100K keys × 100 B, 10 keys per MSET, pipeline 4"),
    ("paired-hz", "20K keys × 10 B, 2 keys per MSET"),
])
def test_recorded_cases_read_back_with_labels(run, label):
    case = Case.from_json(json.loads((RUNS / run / "manifest.json").read_text())["case"])
    assert case.label() == label


def test_other_tests_of_one_load_keep_the_keyspace():
    # redis-benchmark -t set,get: one row per test, each named by its own command
    c = load_case("get-iothreads", llc=Llc(32 * 2**20))
    assert c.label("SET") == "5M keys × 100 B, SET, io-threads 2"


def test_numbers():
    assert [count(n) for n in (1, 129, 1000, 1500, 200_000, 10_000_000, 2_500_000)] == \
        ["1", "129", "1K", "1.5K", "200K", "10M", "2.5M"]
    assert [size(n) for n in (10, 1000, 4096, 1 << 20)] == ["10 B", "1000 B", "4 KiB", "1 MiB"]


def test_paired_rows_and_summary_carry_the_label():
    from analysis.compare.engine import analyse
    from analysis.compare.options import CompareOptions
    from analysis.inputs.rundir import load_run
    from analysis.report import markdown as report_md
    r = analyse(load_run(RUNS / "paired-hz"), CompareOptions())
    (row,) = r.paired
    assert row.label == "20K keys × 10 B, 2 keys per MSET" and row.test.startswith("mset-tiny")
    md = report_md.render(r)
    assert "**Summary:** Paired throughput 20K keys × 10 B, 2 keys per MSET " in md
    assert "| 20K keys × 10 B, 2 keys per MSET · paired throughput |" in md


def test_the_headline_says_why_its_level_is_not_95():
    """"95.8% CI" printed bare read as a typo: the headline says what made the level, a rank
    interval's step, the throughput family's adjustment, or a run that decides' last look."""
    import dataclasses

    from analysis.compare.engine import analyse
    from analysis.compare.options import CompareOptions
    from analysis.inputs.rundir import load_run
    from analysis.report import lead
    r = analyse(load_run(RUNS / "aa-decides-emr-1"), CompareOptions())
    assert "; 95.21% CI (the nearest level at or above 95% that an exact rank interval of 13 " \
           "pairs can reach), 13 pairs" in lead.headline(r).detail
    r = analyse(load_run(RUNS / "io-threads-mset"), CompareOptions())
    assert "96.66% CI (adjusted for the 3 throughput and latency rows judged together by " \
           "Benjamini-Hochberg), 3+3 reps" in lead.headline(r).detail
    r = analyse(load_run(RUNS / "mset-aa-default"), CompareOptions())
    assert "; 95% CI, 5 pairs" in lead.headline(r).detail               # nothing to explain
    r = analyse(load_run(RUNS / "aa-decides-emr-1"), CompareOptions())
    r.measurement = dataclasses.replace(r.measurement, looks=[4, 6, 10, 13], look=4, level=0.9719)
    assert "look 4 of 4: its looks share 5%, so its intervals hold 95% together" in lead.headline(r).detail


def test_a_decided_change_reads_alike_in_both_directions_by_default():
    """-4% decided printed "🔸 regression, below the 5% line" where +4% printed "✅
    improvement": one line both ways by default (3%; 0.5 pp for shares)."""
    from analysis import stats
    from analysis.compare.options import CompareOptions
    from analysis.report import mdtext
    base = [100.0, 100.1, 99.9, 100.0, 100.0, 100.2, 99.8]
    down = stats.compare(base, [b * 0.96 for b in base], paired=True)
    up = stats.compare(base, [b * 1.04 for b in base], paired=True)
    assert mdtext.verdict(down.verdict, down.verdict) == "❌ regression"
    assert mdtext.verdict(up.verdict, up.verdict) == "✅ improvement"
    small_down = stats.compare(base, [b * 0.98 for b in base], paired=True)
    small_up = stats.compare(base, [b * 1.02 for b in base], paired=True)
    assert (small_down.verdict, small_up.verdict) == ("minor regression", "minor improvement")
    assert small_down.line == small_up.line == 0.03
    o = CompareOptions()
    assert (o.noise, o.regression, o.noise_pp, o.regression_pp) == (0.03, 0.03, 0.5, 0.5)
    assert CompareOptions(noise=0.02).regression == 0.02 and CompareOptions(regression=0.05).regression == 0.05
