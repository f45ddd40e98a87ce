"""pprof reading against a real Parca capture, and write -> read round trips."""
import gzip
import json

import pytest

from analysis.profile import profile_pb2
from analysis.profile.pprof import PprofError, load_profile, read_pprof, sample_types, write_pprof
from analysis.profile.stacks import Stacks, function_costs, read_folded
from tests.test_profile import DATA as PROFILE_DATA


@pytest.fixture(scope="module")
def parca(fixtures_dir):
    return read_pprof(fixtures_dir / "parca" / "redis.parca.pb.gz")


def test_matches_pprof_top(parca):
    # `pprof -top` on this file (pprof built from google/pprof, 2026-11):
    #   4000ms 27.89% flat, 5818.18ms 40.56% cum  dictFind   of 14343.43ms total
    assert parca.unit == "nanoseconds"
    assert parca.total == 14343434200
    c = function_costs(parca)
    assert round(c["dictFind"].flat_share, 2) == 27.89
    assert round(c["dictFind"].cum_share, 2) == 40.56
    assert round(c["lookupKey"].cum_share, 2) == 46.41
    assert round(c["dictSdsKeyCompare"].flat_share, 2) == 8.52
    # unsymbolised code is grouped per mapping, as pprof -top shows it
    assert round(c["[libc.so.6]"].flat_share, 2) == 4.01
    assert list(c)[:4] == ["dictFind", "lookupKey", "malloc_usable_size", "dictSdsKeyCompare"]


def test_matches_parca_top_table(parca, fixtures_dir):
    """Parca's own REPORT_TYPE_TOP of the same query agrees for every named function."""
    top = json.loads((fixtures_dir / "parca" / "top.json").read_text())["top"]["list"]
    c = function_costs(parca)
    named = [r for r in top if (r["meta"].get("function") or {}).get("name")]
    assert len(named) > 50
    for r in named:
        name = r["meta"]["function"]["name"]
        assert c[name].flat == int(r["flat"]), name
        assert c[name].cum == int(r["cumulative"]), name


def test_sample_type_choice(fixtures_dir):
    f = fixtures_dir / "parca" / "redis.parca.pb.gz"
    assert sample_types(load_profile(f)) == [("cpu", "nanoseconds")]
    with pytest.raises(PprofError, match="no sample type 'alloc_space'; has cpu/nanoseconds"):
        read_pprof(f, sample_type="alloc_space")


def test_round_trip_folded_samples(tmp_path):
    st = read_folded(PROFILE_DATA / "redis-main.inferno.folded", unit="nanoseconds")
    out = tmp_path / "p.pb.gz"
    write_pprof(st, out, period_ns=1001001)
    back = read_pprof(out)                       # default: last type, cpu nanoseconds
    assert back.unit == "nanoseconds" and back.weights == st.weights
    counts = read_pprof(out, sample_type="samples")
    assert counts.total == st.total / 1001001
    prof = load_profile(out)
    assert prof.string_table[0] == ""
    assert all(x.id != 0 for x in list(prof.location) + list(prof.function) + list(prof.mapping))
    assert sample_types(prof) == [("samples", "count"), ("cpu", "nanoseconds")]
    assert prof.period == 1001001


def test_round_trip_counts_only(tmp_path):
    st = Stacks({("io_thd_1", "IOThreadMain", "read"): 3, ("redis-server", "main", "aeMain"): 5})
    write_pprof(st, tmp_path / "c.pb.gz")
    assert read_pprof(tmp_path / "c.pb.gz").weights == st.weights
    with pytest.raises(ValueError, match="period_ns"):
        write_pprof(Stacks({("t", "f"): 1001001}, unit="nanoseconds"), tmp_path / "x.pb.gz")


def test_bad_files_name_the_file(tmp_path):
    bad = tmp_path / "bad.pb.gz"
    bad.write_bytes(gzip.compress(b"\xff\xff\xff\xff"))
    with pytest.raises(PprofError, match="bad.pb.gz: not a profile.proto"):
        read_pprof(bad)
    with pytest.raises(PprofError, match="no such pprof file"):
        read_pprof(tmp_path / "missing.pb.gz")
    empty = tmp_path / "empty.pb"
    empty.write_bytes(profile_pb2.Profile().SerializeToString())
    with pytest.raises(PprofError, match=r"string_table\[0\]"):
        read_pprof(empty)
