"""The host's memory latency (issue 44, item 2): the pointer-chase probe run for real on this
machine (small buffers where the test allows), its buffer rules held against recorded
machine facts, its figures through the one JSON converter."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from analysis.errors import FAILED
from analysis.inputs.host import HostFacts
from analysis.inputs.latency import MemoryLatency
from collectors.host import latency, machine
from tests.conftest import REPO

MiB = 1 << 20
RUNS = REPO / "tests" / "data" / "runs"


def recorded_host(run: str) -> HostFacts:
    return HostFacts.from_json(json.loads((RUNS / run / "manifest.json").read_text())["host"])


# ---------------------------------------------------------------- buffer sizes, no probe

@pytest.mark.parametrize("run, dram, llc, check", [
    # AMD EPYC (Zen 3), 32 MiB L3, 512 KiB L2: DRAM at its 256 MiB floor, L3 at LLC/4
    ("mset-aa-default", 256 * MiB, 8 * MiB, 2 * MiB),
    # the same CPU recorded with a 1 MiB L2: 4x the L2 is half of LLC/4, too close to check
    ("mset-99hz-small", 256 * MiB, 8 * MiB, None),
    # Intel Xeon (Emerald Rapids) guest, 260 MiB L3, 2 MiB L2
    ("aa-decides-emr-1", 1040 * MiB, 65 * MiB, 8 * MiB),
])
def test_buffers_follow_the_recorded_hosts_caches(run, dram, llc, check):
    host = recorded_host(run)
    buf = latency.buffer_sizes(host.l3_bytes, host.l2_bytes, host.memory_bytes)
    assert (buf.dram, buf.llc, buf.check) == (dram, llc, check)
    assert buf.notes == []


def test_a_480_mib_l3_guest_gets_a_1920_mib_dram_buffer():
    """The Intel guest that reports 480 MiB of L3 and 2 MiB of L2 (cache_sizes there:
    l2_bytes 2097152, l3_bytes 503316480), 23 GiB available."""
    buf = latency.buffer_sizes(503316480, 2097152, 23 * 1024 * MiB)
    assert (buf.dram, buf.llc, buf.check) == (1920 * MiB, 120 * MiB, 8 * MiB)


def test_an_unknown_llc_uses_1_gib_and_8_mib_and_says_so():
    buf = latency.buffer_sizes(None, None, None)
    assert (buf.dram, buf.llc, buf.check) == (1 << 30, 8 * MiB, None)
    assert any("not known" in n for n in buf.notes)


def test_little_memory_caps_the_dram_buffer_and_says_so():
    host = recorded_host("aa-decides-emr-1")           # 1040 MiB wanted
    buf = latency.buffer_sizes(host.l3_bytes, host.l2_bytes, 1536 * MiB)
    assert buf.dram == 768 * MiB
    assert any("capped at 768 MiB" in n and "DRAM figure is low" in n for n in buf.notes)


def test_too_little_memory_for_a_dram_buffer_is_an_error_with_a_hint():
    host = recorded_host("aa-decides-emr-1")           # 2x its 260 MiB L3 does not fit in 400 MiB / 2
    with pytest.raises(latency.LatencyError) as e:
        latency.buffer_sizes(host.l3_bytes, host.l2_bytes, 400 * MiB)
    assert e.value.status == FAILED and "free memory" in e.value.hint


def test_available_memory_reads_memavailable():
    text = "MemTotal:       24683784 kB\nMemFree: 1 kB\nMemAvailable:   24160288 kB\n"
    assert latency.available_memory(text) == 24160288 * 1024
    assert latency.available_memory("MemTotal: 5 kB\n") is None


# ---------------------------------------------------------------- statistics and the record

def test_the_median_interval_is_the_order_statistics_of_a_binomial():
    values = [float(v) for v in (9, 3, 14, 1, 7, 12, 5, 15, 2, 11, 6, 13, 4, 10, 8)]
    med, low, high, achieved = latency.median_interval(values)
    assert (med, low, high) == (8.0, 4.0, 12.0)           # x(4), x(12) of 15
    assert achieved == pytest.approx(1 - 2 * 0.017578125)  # P(Bin(15, 1/2) <= 3) a side


def _record(**kw) -> MemoryLatency:
    base = dict(dram_ns=110.0, dram_low=105.0, dram_high=118.0, llc_ns=35.0, llc_low=34.0,
                llc_high=37.0, dram_bytes=1 << 30, llc_bytes=8 * MiB, page="4k",
                dram_values=[110.0, 105.0, 118.0], llc_values=[35.0, 34.0, 37.0], cpu=1,
                method="A dependent-load pointer chase.")
    return MemoryLatency(**{**base, **kw})


def test_miss_cost_and_round_trips_are_a_lower_bound_in_words():
    m = _record()
    assert m.miss_ns() == 75.0
    assert m.round_trips(150.0) == pytest.approx(2.0)
    assert _record(llc_ns=120.0).round_trips(150.0) is None     # no DRAM-L3 difference seen
    assert m.text() == "DRAM ≈ 110 ns [105, 118], L3 ≈ 35 ns [34, 37] (95%, 4 KiB pages)"


def test_a_record_survives_json_and_keeps_unknown_keys():
    doc = json.loads(json.dumps({**_record(notes=["capped"], raw="rep 0 1.0 0\n").to_json(),
                                 "newer_field": 3}))
    back = MemoryLatency.from_json(doc)
    want = _record(notes=["capped"], raw="rep 0 1.0 0\n")
    want.extra = {"newer_field": 3}
    assert back == want and back.to_json()["newer_field"] == 3


def _probe(values: list[float], huge: int | None = 0) -> latency.Probe:
    return latency.Probe(values, huge, "".join(f"rep {i} {v} 0\n" for i, v in enumerate(values)) + "end 0\n")


def test_an_l3_buffer_the_l3_does_not_serve_gives_way_to_the_check():
    """The rule's LLC/4 buffer measured over twice the 4x-L2 buffer (a guest's share of a big
    L3): the check's figure is the L3's, the rule's kept and said; under twice, it stands."""
    buf = latency.buffer_sizes(503316480, 2097152, None)
    runs = {"check": (buf.check, _probe([38.0] * 15)), "llc": (buf.llc, _probe([190.0] * 15)),
            "dram": (buf.dram, _probe([450.0] * 15))}
    m = latency._result(runs, buf, 503316480, "4k", 1)
    assert (m.llc_ns, m.llc_bytes, m.llc_rule_ns, m.llc_rule_bytes) == (38.0, 8 * MiB, 190.0, 120 * MiB)
    assert "the L3 figure is the 8 MiB buffer's" in m.method and m.notes
    runs["llc"] = (buf.llc, _probe([70.0] * 15))
    m = latency._result(runs, buf, 503316480, "4k", 1)
    assert (m.llc_ns, m.llc_bytes, m.llc_rule_ns, m.check_ns) == (70.0, 120 * MiB, None, 38.0)
    assert m.notes == [] and "4x the 480 MiB LLC" in m.method


def test_thp_the_kernel_did_not_give_is_said():
    buf = latency.buffer_sizes(32 * MiB, None, None)
    runs = {"llc": (buf.llc, _probe([12.0] * 15, 0)), "dram": (buf.dram, _probe([90.0] * 15, 2 * MiB))}
    m = latency._result(runs, buf, 32 * MiB, "thp", 0)
    assert m.huge_fraction == pytest.approx(2 / 256)
    assert any("Only 1% of the DRAM buffer was on huge pages" in n for n in m.notes)


# ---------------------------------------------------------------- the probe itself

def test_a_missing_compiler_is_an_error_naming_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("STALLSCOPE_CACHE", str(tmp_path / "cache"))     # nothing compiled yet
    monkeypatch.setenv("PATH", str(tmp_path))                           # no cc, gcc, clang
    monkeypatch.delenv("CC", raising=False)
    with pytest.raises(latency.LatencyError) as e:
        latency.binary()
    assert e.value.status == FAILED
    assert "no C compiler" in str(e.value) and "apt-get install gcc" in e.value.hint


def test_the_binary_is_cached_by_the_sources_hash(tmp_path, monkeypatch):
    monkeypatch.setenv("STALLSCOPE_CACHE", str(tmp_path))
    said: list[str] = []
    exe = latency.binary(said.append)
    assert exe.parent == tmp_path / "latency" and re.fullmatch(r"chase-[0-9a-f]{16}", exe.name)
    assert len(said) == 1 and "compiling" in said[0]
    assert latency.binary(said.append) == exe and len(said) == 1        # not compiled again


def _positions(raw: str) -> list[int]:
    return [int(m.group(1)) for m in re.finditer(r"^rep \d+ [0-9.]+ (\d+)$", raw, re.M)]


def test_the_chase_is_one_cycle_through_every_line():
    """1024 lines, 16 loads a rep: the walk is back at its first line after exactly 1024
    loads and never before (a permutation of several cycles would return sooner: Sattolo's
    algorithm gives one), and the figures are ns per load."""
    probe = latency.run_probe(latency.binary(), 1024 * 64, "4k", reps=64, loads=16, warm=0,
                              cpu=latency.pick_cpu())
    pos = _positions(probe.raw)
    assert len(pos) == 64 == len(probe.values)
    assert pos[-1] == 0 and 0 not in pos[:-1] and len(set(pos)) == 64
    assert all(0 < v < 2000 for v in probe.values)


def test_a_probe_that_prints_no_result_is_an_error():
    with pytest.raises(latency.LatencyError, match="no complete result"):
        latency.parse_output("# chase 1 bytes=128\nrep 0 1.5 0\n", "chase 128")


def test_bad_arguments_fail_with_the_probes_words():
    with pytest.raises(latency.LatencyError, match="bad arguments"):
        latency.run_probe(latency.binary(), 64 * 1024, "2m", reps=1, loads=16)


def test_thp_asked_for_puts_the_buffer_on_huge_pages():
    setting = latency._thp_setting()
    if setting not in ("always", "madvise"):
        pytest.skip(f"transparent huge pages are {setting} here")
    probe = latency.run_probe(latency.binary(), 32 * MiB, "thp", reps=3, loads=1 << 14, warm=0)
    assert probe.huge_bytes is not None and probe.huge_bytes >= 16 * MiB
    assert latency.run_probe(latency.binary(), 32 * MiB, "4k", reps=1, loads=16, warm=0).huge_bytes == 0


@pytest.fixture(scope="module")
def measured() -> MemoryLatency:
    """The real thing on this machine's own caches (about 5-10 s on a 480 MiB-L3 guest)."""
    return latency.measure(machine.cache_sizes()["l3_bytes"])


@pytest.mark.slow
def test_dram_is_slower_than_the_l3_and_both_plausible(measured):
    m = measured
    assert 1 < m.llc_ns < m.dram_ns < 2000
    assert m.miss_ns() > 0
    assert len(m.dram_values) == len(m.llc_values) == latency.REPS
    assert m.dram_low <= m.dram_ns <= m.dram_high and m.llc_low <= m.llc_ns <= m.llc_high
    assert min(m.dram_values) <= m.dram_low and m.dram_high <= max(m.dram_values)
    assert m.confidence >= 0.95 and m.page == "4k" and m.huge_fraction == 0
    assert m.cpu in os.sched_getaffinity(0) and m.wall_s > 0
    assert m.dram_bytes > m.llc_bytes and m.dram_bytes >= latency.MIN_DRAM
    assert m.raw.count("\nend ") == m.raw.count("## ") and "## dram" in m.raw


@pytest.mark.slow
def test_the_measurement_survives_the_converter(measured):
    back = MemoryLatency.from_json(json.loads(json.dumps(measured.to_json())))
    assert back == measured and back.method.startswith("A dependent-load pointer chase")


def test_the_probe_source_is_ours(repo_root: Path):
    """Written here (not lmbench's or MLC's code), and what the binary's cache key hashes."""
    text = (repo_root / "collectors/host/chase.c").read_text()
    assert "Sattolo" in text and "MADV_NOHUGEPAGE" in text and "CLOCK_MONOTONIC" in text
