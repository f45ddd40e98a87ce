"""The TMA section: the funnel of the reps' TMA outputs, or why there is none.

A rep's TMA output is the file its collector wrote (collectors/profilers/tma.py):
tma.csv (toplev -x, / topdown-tool) or tma.json (perf stat -j); analysis.tma.formats reads
either, with the tma.stderr beside it (where a missing PMU shows), in the catalogue the
manifest's tma block names ("catalog": amdzen4, neoverse-v2 ...; absent for Intel runs and
runs made before it was recorded: the output's own or the default catalogue then). Two
sides whose trees differ (vendors, CPU models) are not compared: the section says why.
"""
from __future__ import annotations

from analysis.compare.results import TmaSection
from analysis.inputs.layout import TMA_FILES
from analysis.inputs.rundir import RunDir
from analysis.tma import funnel, formats
from analysis.tma.model import NoPmuError, TmaParseError, TmaResult

FUNNEL_DEPTH = 4


def tma(run: RunDir, base: str, cand: str) -> TmaSection:
    plan = run.manifest.tma
    catalog = plan.catalog
    res: dict[str, list[TmaResult]] = {base: [], cand: []}
    srcs: dict[str, list[str]] = {base: [], cand: []}
    no_pmu = None
    bad: list[str] = []
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
