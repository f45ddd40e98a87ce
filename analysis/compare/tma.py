"""The TMA section: the funnel of the reps' TMA outputs, or why there is none.

A rep's TMA output is the file its collector wrote (collectors/profilers/tma/plugin.py):
tma.csv (toplev -x, / topdown-tool) or tma.json (perf stat -j); analysis.tma.formats reads
either, with the tma.stderr beside it (where a missing PMU shows), in the catalogue the
manifest's tma block names ("catalog": amdzen4, neoverse-v2 ...; absent for Intel runs and
runs made before it was recorded: the output's own or the default catalogue then). Two
sides whose trees differ (vendors, CPU models) are not compared: the section says why.

A paired run on a PMU host counts TMA in its paired windows instead (`perf stat -I` on each
server, collectors/profilers/tma/windows.py): each rep gives each variant the intervals of
its own windows (analysis/tma/windows.py), and the funnel compares the reps as pairs.
"""
from __future__ import annotations

from analysis.compare.results import TmaSection
from analysis.inputs.collector_facts import TmaFacts
from analysis.inputs.layout import PAIRED_JSON, TMA_FILES
from analysis.inputs.paired import read_paired
from analysis.inputs.rundir import RunDir
from analysis.tma import funnel, formats
from analysis.tma.model import NoPmuError, TmaParseError, TmaResult
from analysis.tma.windows import in_windows

FUNNEL_DEPTH = 4


def paired_tma(run: RunDir, base: str, cand: str, catalog: str | None
               ) -> tuple[dict[str, list[TmaResult]], dict[str, list[str]], list[str]]:
    """Each paired rep's TMA intervals that fall in each variant's own windows
    (collectors/profilers/tma/windows.py, analysis/tma/windows.py): one result per rep and
    variant, the k-th of each side a pair. Empty when the paired reps counted no TMA."""
    res: dict[str, list[TmaResult]] = {base: [], cand: []}
    srcs: dict[str, list[str]] = {base: [], cand: []}
    bad: list[str] = []
    for rep in run.manifest.reps(kind="paired"):
        d, facts = run.rep_dir(rep), run.facts(rep)
        got = {}
        for v in (base, cand):
            tf = facts.collectors.get(f"tma:{v}")
            if not isinstance(tf, TmaFacts) or not tf.file or tf.start_mono is None \
                    or not (d / tf.file).is_file() or not (d / PAIRED_JSON).is_file():
                break
            spans = [(w.mono0, w.mono1) for w in read_paired(d / PAIRED_JSON).of(v)
                     if w.mono0 is not None and w.mono1 is not None]
            try:
                got[v] = in_windows(formats.parse_file(d / tf.file, catalog=catalog), spans,
                                    tf.start_mono)
            except TmaParseError as e:
                bad.append(str(e))
                break
        if len(got) == 2:                # a pair, or nothing from this rep
            for v in (base, cand):
                res[v].append(got[v])
                srcs[v].append(f"{rep.dir}/{facts.collectors[f'tma:{v}'].file} ({v}'s windows)")
    return res, srcs, bad


def tma(run: RunDir, base: str, cand: str) -> TmaSection:
    plan = run.manifest.tma
    catalog = plan.catalog
    res, srcs, bad = paired_tma(run, base, cand, catalog)
    if res[base] and res[cand]:
        try:
            f = funnel.compare(res[base], res[cand], depth=FUNNEL_DEPTH, base_label=base,
                               cand_label=cand, interval="mean", paired=True)
        except funnel.IncompatibleTrees as e:
            return TmaSection("absent", reason=str(e), sources=srcs)
        return TmaSection("measured", funnel=f.doc(), sources=srcs)
    res = {base: [], cand: []}
    srcs = {base: [], cand: []}
    no_pmu = None
    for v in (base, cand):
        for rep in run.manifest.reps(v):
            name = next((n for n in TMA_FILES if (run.rep_dir(rep) / n).is_file()), None)
            if name is None:
                continue
            try:
                res[v].append(formats.parse_file(run.rep_dir(rep) / name, catalog=catalog))
                srcs[v].append(f"{rep.dir}/{name}")
            except NoPmuError as e:
                no_pmu = e.evidence
            except TmaParseError as e:
                # One unreadable TMA file must not cost the whole report: the TMA
                # section says which file and line instead.
                bad.append(str(e))
    replay = plan.backend == "replay" or plan.status == "replay"
    if res[base] and res[cand]:
        try:
            f = funnel.compare(res[base], res[cand], depth=FUNNEL_DEPTH, base_label=base,
                               cand_label=cand)
        except funnel.IncompatibleTrees as e:
            return TmaSection("absent", reason=str(e), sources=srcs)
        return TmaSection("replay" if replay else "measured",
                          reason=str(plan.reason or "") if replay else "",
                          funnel=f.doc(), sources=srcs)
    if bad:
        return TmaSection("absent", reason="unreadable TMA output: " + "; ".join(bad), sources=srcs)
    reason = plan.reason or (f"no hardware PMU ({no_pmu})" if no_pmu else None)
    if not reason:
        reason = (f"no tma.csv or tma.json in the reps (TMA backend: {plan.backend or 'off'})"
                  if not any(res.values())
                  else f"TMA data for only one side ({', '.join(v for v in res if res[v])})")
    return TmaSection("absent", reason=str(reason), sources=srcs)
