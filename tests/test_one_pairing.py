"""One pairing option (analysis/inputs/option_specs.py PAIRING): auto | paired | unpaired,
default auto, for `stallscope run` (--pairing, --paired / --unpaired for short), `stallscope
sweep --pairing`, the PR config's `pairing:` and an experiment file's options; the sweep's
older words (paired for auto, interleaved for unpaired) read from old files."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.inputs.host import HostSummary
from analysis.inputs.option_specs import PAIRING, PAIRINGS
from analysis.inputs.records import from_json
from analysis.sweep.sweep_manifest import SCHEMA, SweepManifest, load_sweep
from analysis.sweep.sweep_options import SweepOptions
from collectors.sweep.plan import PlanError, make_plan
from collectors.workload.casefile import CaseError
from commands import run_arguments as arguments
from commands import sweep as sweep_cli
from tests.conftest import REPO
from tests.conftest_run import BASE_SPEC, CAND_SPEC

VARIANTS = [f"base={BASE_SPEC}", f"prefetch={CAND_SPEC}"]
HOST = HostSummary(memory_bytes=24 * 2**30, l3_bytes=32 * 2**20)


def test_one_vocabulary_and_one_default():
    assert PAIRINGS == ("auto", "paired", "unpaired") and PAIRING.default == "auto"
    assert PAIRING.commands == ("run", "sweep", "pr", "experiment file")
    from analysis.inputs.run_options import RunOptions
    from collectors.pr.config import PrConfig
    assert RunOptions().pairing == SweepOptions().pairing == PrConfig().pairing == PAIRING.default


@pytest.mark.parametrize("argv,pairing", [
    ([], "auto"), (["--pairing", "auto"], "auto"), (["--pairing", "paired"], "paired"),
    (["--paired"], "paired"), (["--pairing", "unpaired"], "unpaired"), (["--unpaired"], "unpaired"),
])
def test_run_takes_pairing_and_its_shorthands(argv, pairing):
    assert arguments.options_from_args(arguments.parser().parse_args(["c", *argv])).pairing == pairing


@pytest.mark.parametrize("argv", [["--paired", "--unpaired"], ["--pairing", "unpaired", "--paired"],
                                  ["--pairing", "interleaved"]])
def test_run_refuses_two_pairings_or_an_unknown_word(argv, capsys):
    with pytest.raises(SystemExit):
        arguments.parser().parse_args(["c", *argv])
    assert "--pairing" in capsys.readouterr().err


def test_a_flag_given_at_its_default_counts_as_given():
    assert arguments.given(["--paired"]) == {"options": {"pairing": "paired"}}
    assert arguments.given(["--pairing", "auto", "--reps", "5"])["options"] == {"pairing": "auto", "reps": 5}
    assert arguments.given(["--out", "runs", "--no-progress"]) == {"out": Path("runs"), "progress": False,
                                                                 "options": {}}


def test_sweep_pairing_unpaired_runs_every_point_in_separate_reps():
    args = sweep_cli.parser().parse_args(["mset-50keys", "--pairing", "unpaired"])
    opts = sweep_cli._options(args)
    assert opts.pairing == "unpaired"
    plan = make_plan("mset-50keys", "tiny", VARIANTS, ["dataset.keys=20K,40K"], {}, opts, HOST)
    assert plan.points and not any(p.estimate.paired for p in plan.points)
    assert all(p.estimate.method == "interleaved reps, a server start each" for p in plan.points)
    # auto, the default, pairs where a point fits (the sweep's old "paired")
    assert sweep_cli.parser().parse_args(["mset-50keys"]).pairing == "auto"
    auto = make_plan("mset-50keys", "tiny", VARIANTS, ["dataset.keys=20K"], {}, SweepOptions(), HOST)
    assert all(p.estimate.paired for p in auto.points)


def test_a_strict_paired_sweep_refuses_a_point_that_cannot_pair():
    three = VARIANTS + [f"hz={BASE_SPEC}+config=hz=50"]
    assert make_plan("mset-50keys", "tiny", VARIANTS, ["dataset.keys=20K"], {},
                     SweepOptions(pairing="paired"), HOST).points[0].estimate.paired
    with pytest.raises(PlanError, match="--pairing paired: point .* cannot pair: .*3 variants"):
        make_plan("mset-50keys", "tiny", three, ["dataset.keys=20K"], {}, SweepOptions(pairing="paired"), HOST)
    # auto falls back to interleaved reps, as run's auto falls back to separate reps
    plan = make_plan("mset-50keys", "tiny", three, ["dataset.keys=20K"], {}, SweepOptions(), HOST)
    assert not plan.points[0].estimate.paired


def _sweep_json(tmp_path, schema: int, pairing: str):
    m = SweepManifest(sweep_id="s", created="2026-11-01T00:00:00Z", command=[], case="mset-50keys",
                      size="small", variants=VARIANTS)
    d = m.to_json()
    d["schema"], d["options"]["pairing"] = schema, pairing
    (tmp_path / "sweep.json").write_text(json.dumps(d))
    return d


@pytest.mark.parametrize("schema,written,read", [
    (1, "interleaved", "unpaired"), (1, "paired", "auto"),       # the sweep's old words
    (2, "paired", "paired"), (2, "unpaired", "unpaired"), (2, "auto", "auto"),
])
def test_old_sweep_json_pairing_reads_in_the_one_vocabulary(tmp_path, schema, written, read):
    d = _sweep_json(tmp_path, schema, written)
    m = load_sweep(tmp_path)
    assert (m.options.pairing, m.schema) == (read, SCHEMA)
    # the same wherever a sweep.json is read as data (a fanout's whole, an experiment's parts)
    assert from_json(SweepManifest, d).options.pairing == read


def test_an_experiment_file_takes_the_one_vocabulary_and_reads_interleaved_as_unpaired(tmp_path):
    from collectors.sweep.experiment import load_experiment
    from collectors.sweep.experiment.parts import sweep_argv, sweep_options
    text = (REPO / "cases" / "experiments" / "zrange-2867.yaml").read_text().replace("name: zrange-2867", "name: x")
    f = tmp_path / "x.yaml"
    for word, pairing in (("interleaved", "unpaired"), ("auto", "auto"), ("paired", "paired")):
        f.write_text(text.replace("skip_unfit: true}", f"skip_unfit: true, pairing: {word}}}"))
        exp = load_experiment(str(f))
        opts = sweep_options(exp, "default", False, (1 / 30, 90.5))
        assert opts.pairing == pairing
        # the part's sweep arguments give the same options back (declared options spelled
        # by option_specs.argv_for, exactly: a precision of 1/30, a budget of 90.5 s)
        argv = sweep_argv(exp, exp.parts[0], "default", opts)
        back = sweep_cli._options(sweep_cli.parser().parse_args(argv))
        for name in ("reps", "profile", "profile_reps", "pairing", "paired_window_s", "paired_windows",
                     "precision", "budget_s"):
            assert getattr(back, name) == getattr(opts, name), name
    f.write_text(text.replace("skip_unfit: true}", "skip_unfit: true, pairing: sometimes}"))
    with pytest.raises(CaseError, match=r"x.yaml:\d+: options.pairing: one of auto, paired, unpaired"):
        load_experiment(str(f))


@pytest.mark.parametrize("written,flags", [(None, "--pairing auto"), ("paired", "--pairing paired"),
                                           ("unpaired", "--pairing unpaired")])
def test_the_pr_config_takes_the_runs_pairing(tmp_path, written, flags):
    from collectors.pr import config
    from collectors.pr.workflow import _run_args
    f = tmp_path / "pr.yaml"
    f.write_text("cases: [mset-50keys]\nprecision: 0.02\n" + (f"pairing: {written}\n" if written else ""))
    cfg = config.load(f)
    assert _run_args(cfg) == f"--size default --precision 2% --budget 30m {flags}"
    f.write_text("cases: [mset-50keys]\npairing: interleaved\n")
    with pytest.raises(config.PrConfigError, match="pairing must be one of auto, paired, unpaired"):
        config.load(f)
