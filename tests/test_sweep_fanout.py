"""Sweeps and experiments over many runners (docs/sweeps.md, "Over many runners"):
--emit-matrix, --point, --merge and `stallscope experiment github`.

End to end: a two-point sweep (mset-50keys at CI size, Redis 8.0 with and without the MSET
prefetch patch, real servers and redis-benchmark on 127.0.0.1, no profile) is run whole,
and its points are run again as separate processes (`--point ID`) and merged. The merged
table has the whole run's shape, each merged row has the numbers its own point directory
gives, and the whole run's sweep.json reported over the point runs' run directories gives
the merged table line for line. Point runs of another plan are refused; a point whose
directory records another CPU model is merged and flagged."""
from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from analysis.inputs.host import HostSummary
from analysis.sweep.sweep_options import SweepOptions
from collectors.pr import actions
from collectors.sweep.fanout import differences, digest, identity
from collectors.sweep.plan import make_plan
from tests.conftest import REPO
from tests.conftest_run import BASE_SPEC, CAND_SPEC, base_variant, built, cli_env
from tests.test_schedule_units import _actionlint

VARIANTS = ["--variant", f"base={BASE_SPEC}", "--variant", f"prefetch={CAND_SPEC}"]
# 2 paired reps of 4 windows (n = 4 a side) at the default window length: the tests compare
# runs' shapes and each merged row with its own point directory, never a measured value
SWEEP = ["mset-50keys", "--size", "tiny", "--axis", "dataset.keys=20K,50K", "--reps", "2",
         "--paired-windows", "4", "--profile", "off", "--no-progress", *VARIANTS]
IDS = ["p01-keys-20K", "p02-keys-50K"]
SAFE = re.compile(r"[A-Za-z0-9._-]+")


def cli(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "collectors", *args], cwd=REPO, env=cli_env(),
                          capture_output=True, text=True, timeout=timeout)


# ------------------------------------------------------------------ nothing runs
@pytest.mark.heavy
def test_emit_matrix_lists_every_point_with_a_stable_safe_id(tmp_path):
    args = ["sweep", "mset-50keys", "--size", "tiny", "--axis", "dataset.keys=20K,50K",
            "--axis", "value=10,100", *VARIANTS, "--out", str(tmp_path), "--emit-matrix"]
    p, again = cli(*args, timeout=120), cli(*args, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout == again.stdout and p.stdout.count("\n") == 1   # one line for $GITHUB_OUTPUT
    include = json.loads(p.stdout)["include"]
    assert [e["point"] for e in include] == ["p01-keys-20K-value-10", "p02-keys-20K-value-100",
                                             "p03-keys-50K-value-10", "p04-keys-50K-value-100"]
    assert include[1]["labels"] == "dataset.keys=20K,value=100"
    assert all(SAFE.fullmatch(e["point"]) and e["estimate_s"] > 0 and e["memory_bytes"] > 0
               for e in include)
    assert not any(tmp_path.iterdir())                   # nothing built, no sweep directory
    assert re.search(r"4 point\(s\) of plan [0-9a-f]{16}", p.stderr)
    e = cli("experiment", "mset-15043", "--size", "tiny", "--emit-matrix", timeout=120)
    assert e.returncode == 0, e.stderr
    points = json.loads(e.stdout)["include"]
    assert [(x["point"], x["part"], x["labels"]) for x in points] == [
        ("mset10.p01-value-10", "mset10", "value=10"), ("mset10.p02-value-100", "mset10", "value=100"),
        ("mset50.p01-value-10", "mset50", "value=10"), ("mset50.p02-value-100", "mset50", "value=100")]


@pytest.mark.heavy
def test_point_unknown_id_exits_2_listing_the_ids(tmp_path):
    p = cli("sweep", *SWEEP, "--point", "p09-keys-1G", "--out", str(tmp_path), timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "--point 'p09-keys-1G': no such point in this sweep" in p.stderr
    assert "p01-keys-20K, p02-keys-50K" in p.stderr
    e = cli("experiment", "mset-15043", "--size", "tiny", "--point", "mset10.p09", timeout=120)
    assert e.returncode == 2 and "mset10.p01-value-10, mset10.p02-value-100, mset50.p01-value-10" in e.stderr
    assert not any(tmp_path.iterdir())


def test_identity_is_the_plan_not_the_host():
    """Two runners with different memory plan the same sweep alike (each decides for itself
    how to measure a point); another --reps or another axis value is another plan."""
    def plan(host, reps=2, keys="20K,50K"):
        return make_plan("mset-50keys", "tiny", [VARIANTS[1], VARIANTS[3]], [f"dataset.keys={keys}"], {},
                         SweepOptions(reps=reps, profile="off"), host)
    small = plan(HostSummary(memory_bytes=2**30, l3_bytes=8 * 2**20))
    big = plan(HostSummary(memory_bytes=512 * 2**30, l3_bytes=256 * 2**20))
    assert digest(identity(small)) == digest(identity(big))
    assert differences(identity(small), identity(plan(HostSummary(), reps=3))) == ["options.reps: 2 vs 3"]
    diff = differences(identity(small), identity(plan(HostSummary(), keys="20K,60K")))
    assert diff[0] == 'axes[0].values[1]: "50K" vs "60K"'
    assert any("resolved.dataset.keys: 50000 vs 60000" in d for d in diff)


def test_fanout_entries_are_typed_and_keep_their_keys(tmp_path):
    """The point runs' sweep.json "fanout" (as --point writes it, before its point runs) and
    the merged one read back as records, write back the same JSON (a newer writer's key
    kept), and carry the documented keys; a merged experiment part's identity is the
    experiment's."""
    from analysis.sweep.experiment.manifest import ExperimentManifest
    from analysis.sweep.fanout_entry import ExperimentIdentity, MergedPoint, PartIdentity, SweepIdentity
    from analysis.sweep.sweep_manifest import SweepFanout, SweepManifest, load_sweep, save_sweep
    from collectors.sweep.directory import create_point, host_summary
    from collectors.sweep.fanout import matrix_entry
    from collectors.sweep.merge import merge_sweep
    host, axis, opts = host_summary(), ["dataset.keys=20K,50K"], SweepOptions(reps=2, profile="off")
    whole = make_plan("mset-50keys", "tiny", VARIANTS[1::2], axis, {}, opts, host)
    for p in whole.points:
        plan = make_plan("mset-50keys", "tiny", VARIANTS[1::2], axis, {}, opts, host,
                         keep=lambda got, want=p.spec.labels: got == want)
        d = create_point(whole, plan, SWEEP + ["--point", p.spec.id], tmp_path / "points", p.spec.id)
        raw = json.loads((d / "sweep.json").read_text())
        assert list(raw["fanout"]) == ["plan", "identity", "point", "host", "whole"]
        assert set(raw["fanout"]["host"]) == {"hostname", "cpu_model", "logical_cpus"}
        raw["fanout"]["runner"] = raw["fanout"]["identity"]["a_newer_key"] = "kept"
        (d / "sweep.json").write_text(json.dumps(raw))
        f = load_sweep(d).fanout
        assert isinstance(f, SweepFanout) and isinstance(f.identity, SweepIdentity)
        assert isinstance(f.whole, SweepManifest) and [q.id for q in f.whole.points] == IDS
        assert f.point == p.spec.id and f.plan == digest(identity(whole)) and f.extra == {"runner": "kept"}
        assert load_sweep(d).to_json() == raw
    assert [matrix_entry(p.spec.id, p).to_json()["point"] for p in whole.points] == IDS
    assert list(matrix_entry(IDS[0], whole.points[0], "part").to_json()) == \
        ["point", "labels", "estimate_s", "memory_bytes", "part"]
    dest, m = merge_sweep([tmp_path / "points"], tmp_path / "merged", lambda msg: None)
    raw = json.loads((dest / "sweep.json").read_text())
    assert list(raw["fanout"]) == ["plan", "identity", "at", "merged"] and m.status == "incomplete"
    assert [set(x) for x in raw["fanout"]["merged"]] == [{"point", "from", "host"}] * 2
    merged = load_sweep(dest).fanout.merged
    assert all(isinstance(x, MergedPoint) for x in merged) and merged[0].source.endswith(IDS[0])
    assert load_sweep(dest).to_json() == raw
    # a merged experiment's part names the experiment's plan: its identity reads as one
    ident = ExperimentIdentity(experiment="x", size="small", parts=[PartIdentity("p", identity(whole))])
    m.fanout = SweepFanout(plan=digest(ident), identity=ident, at="now", merged=[])
    save_sweep(dest, m)
    back = load_sweep(dest).fanout.identity
    assert isinstance(back, ExperimentIdentity) and back.parts[0].sweep.points[1].id == IDS[1]
    assert ExperimentManifest.from_json({"parts": [], "fanout": {"plan": "x"}}).fanout.whole is None


@pytest.mark.heavy
def test_experiment_workflow_fans_out_and_merges_and_passes_actionlint(tmp_path):
    out = tmp_path / ".github" / "workflows" / "mset-15043.yml"
    p = cli("experiment", "github", "mset-15043", "--size", "tiny", "--runner-group", "bench-trusted",
            "--runner-labels", "self-hosted,bare-metal", "--max-parallel", "3", "--out", str(out), timeout=120)
    assert p.returncode == 0, p.stderr
    doc = yaml.safe_load(out.read_text())
    on = doc[True] if True in doc else doc["on"]       # YAML 1.1 reads a bare `on` as true
    assert "workflow_dispatch" in on and doc["permissions"] == {"contents": "read"}
    plan, point, merge = (doc["jobs"][j] for j in ("plan", "point", "merge"))
    assert plan["outputs"]["matrix"] == "${{ steps.plan.outputs.matrix }}"
    assert point["strategy"] == {"fail-fast": False, "max-parallel": 3,
                                 "matrix": "${{ fromJSON(needs.plan.outputs.matrix) }}"}
    # every job in the runner group, with the labels (docs/pr.md, "Runner isolation")
    assert plan["runs-on"] == point["runs-on"] == merge["runs-on"] == {
        "group": "bench-trusted", "labels": ["self-hosted", "bare-metal"]}
    script = lambda job, word: next(s["run"] for s in job["steps"] if word in s.get("run", ""))
    # every job runs the same experiment arguments: the points agree on the plan
    emit = re.search(r"\$\((.*) --emit-matrix\)", script(plan, "--emit-matrix")).group(1)
    assert emit == "stallscope experiment mset-15043 --size tiny"
    assert f'{emit} --point "$POINT" --out points' in script(point, "--point")
    up = next(s for s in point["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert up["with"]["name"] == "stallscope-point-${{ matrix.point }}" and up["if"] == "always()"
    down = next(s for s in merge["steps"] if s.get("uses") == actions.DOWNLOAD)   # v4.3.0, pinned
    assert down["with"] == {"pattern": "stallscope-point-*", "path": "points", "merge-multiple": True}
    assert "stallscope experiment --merge points" in script(merge, "--merge")
    assert merge["needs"] == ["plan", "point"] and "always()" in merge["if"]
    # the custom runner label, declared as a repository's actionlint.yaml would
    conf = tmp_path / ".github" / "actionlint.yaml"
    conf.write_text("self-hosted-runner:\n  labels: [bare-metal]\n")
    r = subprocess.run([_actionlint(), "-no-color", "-config-file", str(conf), str(out)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    bad = cli("experiment", "github", "no-such-experiment", "--runner-group", "bench-trusted", timeout=120)
    assert bad.returncode == 2 and "no experiment 'no-such-experiment'" in bad.stderr


# ------------------------------------------------------------------ end to end
def _table(md: str) -> list[str]:
    """The sweep table's lines (header, rule, one per point)."""
    lines = md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| ") and "| Report |" in line)
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    return lines[start:end]


def _one(path: Path) -> Path:
    (d,) = [p.parent for p in path.glob("*/sweep.json")]
    return d


@pytest.fixture(scope="module")
def fanned(tmp_path_factory):
    base_variant()
    built("prefetch", CAND_SPEC)
    tmp = tmp_path_factory.mktemp("fanout")
    whole = cli("sweep", *SWEEP, "--out", str(tmp / "whole"), "--report-out", str(tmp / "whole-report"))
    assert whole.returncode == 0, whole.stderr[-4000:]
    ids = [e["point"] for e in json.loads(cli("sweep", *SWEEP, "--emit-matrix", timeout=120).stdout)["include"]]
    assert ids == IDS
    runs = {}
    for pid in ids:        # one process per point, as each runner of a fleet runs it
        p = cli("sweep", *SWEEP, "--point", pid, "--out", str(tmp / "points"))
        assert p.returncode == 0, p.stderr[-4000:]
        runs[pid] = Path(p.stdout.strip().splitlines()[-1])
    m = cli("sweep", "--merge", str(tmp / "points"), "--out", str(tmp / "merged"),
            "--report-out", str(tmp / "merged-report"), timeout=300)
    assert m.returncode == 0, m.stderr[-4000:]
    # a point of another plan: the first point with one paired rep
    other = list(SWEEP)
    other[other.index("--reps") + 1] = "1"
    o = cli("sweep", *other, "--point", IDS[0], "--out", str(tmp / "other"))
    assert o.returncode == 0, o.stderr[-4000:]
    return {"tmp": tmp, "whole": _one(tmp / "whole"), "whole_report": tmp / "whole-report",
            "runs": runs, "merged": _one(tmp / "merged"), "report": tmp / "merged-report",
            "merge_log": m.stderr, "other": _one(tmp / "other")}


@pytest.mark.slow
def test_merged_table_is_the_whole_sweeps_table(fanned):
    whole = json.loads((fanned["whole_report"] / "results.json").read_text())
    merged = json.loads((fanned["report"] / "results.json").read_text())
    for k in ("axes", "x_axis", "case", "size", "base", "cand", "status", "sets"):
        assert merged[k] == whole[k], k
    shape = lambda pt: {k: pt[k] for k in ("id", "index", "labels", "x", "status", "keys", "method", "report")}
    assert [shape(p) for p in merged["points"]] == [shape(p) for p in whole["points"]]
    assert all(p["metric"]["base"]["n"] == p["metric"]["cand"]["n"] == 4 for p in merged["points"])
    wt, mt = _table((fanned["whole_report"] / "report.md").read_text()), \
        _table((fanned["report"] / "report.md").read_text())
    assert mt[:2] == wt[:2] and len(mt) == len(wt) == 4
    for w, m in zip(wt[2:], mt[2:]):         # axis value, then the numbers; the link last
        assert m.split(" | ")[0] == w.split(" | ")[0] and m.split(" | ")[-1] == w.split(" | ")[-1]
    # each merged row is what its own point directory gives (read as a sweep of one point)
    for pt in merged["points"]:
        rep = fanned["tmp"] / f"alone-{pt['id']}"
        p = cli("sweep", "--report", str(fanned["runs"][pt["id"]]), "--report-out", str(rep), timeout=300)
        assert p.returncode == 0, p.stderr
        (alone,) = json.loads((rep / "results.json").read_text())["points"]
        assert (alone["metric"], alone["method"], alone["labels"]) == (pt["metric"], pt["method"], pt["labels"])
        row = next(r for r in mt[2:] if f"[{pt['id']}]" in r)
        assert _table((rep / "report.md").read_text())[2].split(" | ")[1:] == row.split(" | ")[1:]


@pytest.mark.slow
def test_the_whole_sweep_reported_over_the_point_runs_is_the_merged_table(fanned):
    """The whole run's sweep.json, each point's run directory replaced by the one its point
    run wrote, reported by the ordinary `--report` path: the merged table, line for line."""
    swap = fanned["tmp"] / "swapped"
    shutil.copytree(fanned["whole"], swap)
    sj = json.loads((swap / "sweep.json").read_text())
    for pt in sj["points"]:
        shutil.rmtree(swap / pt["id"])
        point_dir = fanned["runs"][pt["id"]]
        src = json.loads((point_dir / "sweep.json").read_text())["points"][0]
        shutil.copytree(point_dir / src["run_dir"], swap / src["run_dir"])
        pt["run_dir"] = src["run_dir"]
    (swap / "sweep.json").write_text(json.dumps(sj))
    p = cli("sweep", "--report", str(swap), "--report-out", str(fanned["tmp"] / "swapped-report"), timeout=300)
    assert p.returncode == 0, p.stderr
    assert _table((fanned["tmp"] / "swapped-report" / "report.md").read_text()) == \
        _table((fanned["report"] / "report.md").read_text())
    swapped = json.loads((fanned["tmp"] / "swapped-report" / "results.json").read_text())["points"]
    merged = json.loads((fanned["report"] / "results.json").read_text())["points"]
    assert [p["metric"] for p in swapped] == [p["metric"] for p in merged]


@pytest.mark.slow
def test_merged_report_says_which_point_ran_where(fanned):
    md = (fanned["report"] / "report.md").read_text()
    host = socket.gethostname()
    assert "Assembled by `--merge` from point runs of plan `" in md
    for pid in IDS:
        assert re.search(rf"^\| {pid} \| {re.escape(host)} \| .+ \| \d+ \|$", md, re.M), md
    res = json.loads((fanned["report"] / "results.json").read_text())
    assert res["fanout"]["merged"] == IDS and re.fullmatch(r"[0-9a-f]{16}", res["fanout"]["plan"])
    assert all(p["host"]["hostname"] == host and p["host"]["cpu_model"] for p in res["points"])
    html = (fanned["report"] / "report.html").read_text()
    assert 'class="hosts"' in html and f'<tr data-point="{IDS[1]}"><td class="axis">{IDS[1]}</td>' in html
    assert "host models" not in md                       # one machine: nothing to flag
    assert "Assembled by" not in (fanned["whole_report"] / "report.md").read_text()
    assert (fanned["merged"] / IDS[0]).is_dir() and json.loads(
        (fanned["merged"] / "sweep.json").read_text())["status"] == "complete"


@pytest.mark.slow
def test_merge_refuses_points_of_another_plan_or_given_twice(fanned, tmp_path):
    one = fanned["runs"][IDS[1]]
    p = cli("sweep", "--merge", str(one), str(fanned["other"]), "--out", str(tmp_path), timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "is a point of another plan than" in p.stderr and "options.reps: 2 vs 1" in p.stderr
    p = cli("sweep", "--merge", str(one), str(one), "--out", str(tmp_path), timeout=120)
    assert p.returncode == 2 and f"point {IDS[1]} given twice" in p.stderr
    p = cli("sweep", "--merge", str(fanned["whole"]), "--out", str(tmp_path), timeout=120)
    assert p.returncode == 2 and "not a point run" in p.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_missing_point_is_listed_as_not_run(fanned, tmp_path):
    p = cli("sweep", "--merge", str(fanned["runs"][IDS[0]]), "--out", str(tmp_path / "m"),
            "--report-out", str(tmp_path / "r"), timeout=300)
    assert p.returncode == 1, p.stderr            # the sweep is not complete
    res = json.loads((tmp_path / "r" / "results.json").read_text())
    assert [(x["status"], x["reason"]) for x in res["points"]][1] == \
        ("skipped", "not run: no point directory for it among those merged")
    md = (tmp_path / "r" / "report.md").read_text()
    assert f"points not run: {IDS[1]} (not run: no point directory" in md
    assert f"| {IDS[1]} | not run |  |  |" in md


@pytest.mark.slow
def test_a_point_from_another_cpu_model_is_merged_and_flagged(fanned, tmp_path):
    """The second point's directory as a runner with another CPU records it (its sweep.json
    names the host it ran on): merged, and the report flags the two host models."""
    moved = tmp_path / "runner-b" / fanned["runs"][IDS[1]].name
    shutil.copytree(fanned["runs"][IDS[1]], moved)
    sj = json.loads((moved / "sweep.json").read_text())
    xeon = {"hostname": "runner-b", "cpu_model": "Intel(R) Xeon(R) Platinum 8488C", "logical_cpus": 192}
    sj["points"][0]["host"] = sj["fanout"]["host"] = xeon
    (moved / "sweep.json").write_text(json.dumps(sj))
    p = cli("sweep", "--merge", str(fanned["runs"][IDS[0]]), str(moved), "--out", str(tmp_path / "m"),
            "--report-out", str(tmp_path / "r"), timeout=300)
    assert p.returncode == 0, p.stderr
    assert "points ran on 2 host models (flagged in the report)" in p.stderr
    md = (tmp_path / "r" / "report.md").read_text()
    note = next(line for line in md.splitlines() if "different host models" in line)
    assert note.startswith("> Note: points ran on 2 different host models")
    assert f"{IDS[1]} on Intel(R) Xeon(R) Platinum 8488C, 192 logical CPUs" in note.replace("\\", "")
    assert f"| {IDS[1]} | runner-b | Intel(R) Xeon(R) Platinum 8488C | 192 |" in md.replace("\\", "")
    res = json.loads((tmp_path / "r" / "results.json").read_text())
    assert any("2 different host models" in n for n in res["notes"])
    assert res["points"][1]["host"] == xeon
    assert "2 different host models" in (tmp_path / "r" / "report.html").read_text()


@pytest.mark.slow
def test_experiment_point_runs_alone_and_merges_with_the_rest_not_run(tmp_path):
    """One point of an experiment on its own (a separate process, as on a runner), merged:
    the experiment's report with that row beside its seed row, the rest listed as not run."""
    base_variant()
    built("prefetch", CAND_SPEC)
    args = ["experiment", "mset-15043", "--size", "tiny"]
    p = cli(*args, "--point", "mset10.p01-value-10", "--out", str(tmp_path / "points"), "--no-progress")
    assert p.returncode == 0, p.stderr[-4000:]
    m = cli("experiment", "--merge", str(tmp_path / "points"), "--out", str(tmp_path / "exp"),
            "--report-out", str(tmp_path / "report"), timeout=300)
    assert m.returncode == 1, m.stderr[-4000:]        # three of four points not run
    assert "merged 1 of 4 point(s) of plan" in m.stderr
    res = json.loads((tmp_path / "report" / "results.json").read_text())
    assert [part["id"] for part in res["parts"]] == ["mset10", "mset50"]
    first = res["parts"][0]["sweep"]["points"]
    assert first[0]["status"] == "complete" and first[0]["metric"]["base"]["n"] > 0
    assert [x["status"] for x in first[1:] + res["parts"][1]["sweep"]["points"]] == ["skipped"] * 3
    md = (tmp_path / "report" / "report.md").read_text()
    assert "| Seed | Agrees | Report |" in md and "Assembled by `--merge`" in md
    assert (tmp_path / "report" / "mset10" / "p01-value-10" / "report.md").is_file()
