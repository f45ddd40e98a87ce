"""collectors/runner/pairing.py: a run pairs wherever it fits and says why when it cannot.

The decisions only read the variants' identity (binary hash, config), the case and the
host's memory, so plain Variant records stand in for builds here; test_paired_servers.py and
test_run.py run the chosen modes for real.
"""
from __future__ import annotations

import pytest

from analysis.inputs.manifest import Variant
from collectors.runner import pairing
from collectors.runner.options import RunError, RunOptions
from collectors.workload.cases import load_case
from collectors.workload.working_set import Llc

GiB = 2**30
BIG = load_case("mset-50keys", "default", llc=Llc(32 * 2**20))   # 10M keys (a 32 MB L3), ~1 GB a server
SMALL = load_case("mset-50keys", "tiny")


def v(name: str, sha: str = "aaa", **config: str) -> Variant:
    return Variant(name=name, spec=f"bin:/x/{sha}", kind="binary", binary_sha256=sha,
                   config=dict(config))


def choose(variants, case=BIG, memory=24 * GiB, asked="auto"):
    return pairing.choose({x.name: x for x in variants}, RunOptions(pairing=asked), case, memory)


def test_two_builds_pair_as_two_servers_by_default():
    plan, why = choose([v("base", "aaa"), v("cand", "bbb")])
    assert plan.mode == "servers" and why.mode == "servers" and why.asked == "auto"
    assert not why.aa and "two servers loaded at once" in why.reason


def test_config_only_variants_share_one_server():
    plan, why = choose([v("a", "aaa", **{"prefetch-batch-max-size": "0"}),
                        v("b", "aaa", **{"prefetch-batch-max-size": "16"})])
    assert plan.mode == "config" and plan.setting == ["prefetch-batch-max-size"]
    assert "CONFIG SET" in why.reason


def test_an_aa_run_is_accepted_as_two_servers_of_one_build():
    plan, why = choose([v("a"), v("b")])
    assert plan.mode == "servers" and why.aa and why.reason.startswith("A/A run")


def test_an_aa_run_without_room_for_two_uses_one_server_and_no_config_change():
    plan, why = choose([v("a"), v("b")], memory=2 * GiB)
    assert plan.mode == "config" and plan.setting == [] and why.aa
    assert "no CONFIG change" in why.reason and "GiB" in why.reason


def test_no_room_for_two_falls_back_to_separate_reps_and_says_why():
    plan, why = choose([v("base", "aaa"), v("cand", "bbb")], memory=2 * GiB)
    assert plan is None and why.mode == "off"
    assert why.reason.startswith("separate reps") and "this host's 2.0 GiB" in why.reason
    # the small size fits the same host: paired again
    assert choose([v("base", "aaa"), v("cand", "bbb")], case=SMALL, memory=2 * GiB)[0].mode == "servers"


def test_asking_for_pairing_that_cannot_work_is_an_error_not_a_fallback():
    with pytest.raises(RunError, match=r"^--paired: two servers loaded at once would need"):
        choose([v("base", "aaa"), v("cand", "bbb")], memory=2 * GiB, asked="paired")


@pytest.mark.parametrize("variants,case,words", [
    ([v("a", "aaa"), v("b", "bbb"), v("c", "ccc")], BIG, "pairing alternates two variants, this run has 3"),
    ([v("a", "aaa"), v("b", "bbb")], load_case("rdb-load", "tiny"), "rdb-load case measures the server start"),
])
def test_what_cannot_pair_runs_separate_reps(variants, case, words):
    plan, why = choose(variants, case=case)
    assert plan is None and why.mode == "off" and words in why.reason


def test_unpaired_as_asked():
    plan, why = choose([v("base", "aaa"), v("cand", "bbb")], asked="unpaired")
    assert plan is None and why.reason == "separate reps, as asked (--unpaired)"


def test_a_paired_manifest_says_its_windows_are_profiled():
    """A paired run's perf samples its paired reps' windows; its manifest no longer says
    "throughput reps are unprofiled" (the note of separate profile reps)."""
    from analysis.inputs.case import Case
    from collectors.runner.new_manifest import profiling
    from collectors.runner.options import RunOptions
    paired = profiling(Case(name="mset-50keys"), RunOptions(paired=True, profile="perf", profile_reps=0,
                                                            frequency_hz=999))
    assert "unprofiled" not in paired.note and "samples the paired reps' windows" in paired.note
    both = profiling(Case(name="mset-50keys"), RunOptions(paired=True, profile="perf", profile_reps=3))
    assert "windows" in both.note and "3 separate profile reps" in both.note
    apart = profiling(Case(name="mset-50keys"), RunOptions(paired=False, profile="perf", profile_reps=3))
    assert apart.note.startswith("throughput reps are unprofiled")
