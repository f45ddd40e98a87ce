"""`make demo`: the main job on an embedded default.

Baseline: Redis built from its Debian source package. Candidate: the same source plus
cases/patches/mset-bucket-prefetch.patch (batched dict-bucket prefetch in MSET, the
technique of redis/redis#15043). Case: MSET with 50 keys per command over a keyspace
many times larger than L3. Throughput is measured paired: both builds loaded at once and
the load switched between them in short ABBA windows (--paired), which gives a far
narrower interval on a noisy host than a server restart per rep (--unpaired, the old
way). perf samples both servers in those same windows (every other ABBA block), so each
function's CPU time per MSET is a paired ratio too, and the blocks without perf measure
the profiler's own cost. Then the reports in reports/demo/ (report.md, report.html,
results.json, flame graphs, pprof).
"""
from __future__ import annotations

from pathlib import Path

from analysis.inputs.option_specs import TARGET_WINDOWS

# The demo's variants and sizes; the command (commands/demo.py) prints this module's
# docstring as its --help description.

REPO = Path(__file__).resolve().parents[2]
PATCH = "cases/patches/mset-bucket-prefetch.patch"   # relative to REPO
# Pinned to the version the patch was written for (Debian testing will move past 8.0).
BASE = "base=debsrc:redis@8.0"
CAND = f"prefetch=debsrc:redis@8.0+patch={PATCH}"


def cand_spec(cwd: Path | None = None) -> str:
    """CAND as typed from the repository root (so the manifest and the report's reproduce
    command stay short); from any other directory the patch path is made absolute, or
    the build would look for cases/patches/ under that directory."""
    cwd = Path.cwd() if cwd is None else cwd
    if (cwd / PATCH).resolve() == (REPO / PATCH).resolve():
        return CAND
    return f"prefetch=debsrc:redis@8.0+patch={REPO / PATCH}"

# Per size: (case, paired reps, windows per paired rep, --set overrides of the case). Each
# window is 0.25 s and perf samples a share of the ABBA blocks of them (every other one
# unless planned), so the profiles are paired too. The default size is a run that decides
# (reps None: collectors/runner/targets.py, as `stallscope run` with no flags): its paired
# reps, their windows and perf's share of them planned together from this host's recorded
# spread and seconds a rep (collectors/runner/rep_plan.py), perf at the rate the function
# rows need, within BUDGET_S of the run (the builds before it: ~2 min each from a fresh clone). Unpaired (--unpaired), the
# reps are throughput reps per variant and 3 separate profile reps per variant follow. The
# paired interval is over reps (docs/statistics.md, "The rep is the unit").
SIZES = {
    "default": ("mset-50keys", None, TARGET_WINDOWS, ()),
    # 3: the fewest paired reps whose interval is over reps and decides (window pairs of
    # fewer reps are shown but decide nothing: docs/statistics.md). The case's small size:
    # a dataset at least 2x this host's last-level cache. A fixed count failed somewhere:
    # 200K keys (~18 MB) fit a 32 MB L3, and there the gain swung with the neighbours'
    # cache pressure (+13% [+1.3, +26.4] in one CI run, +24..+32% in four others); 1M keys
    # (~90 MB) missed that L3 (+33% [+26.5, +40.2]) but sat in a 480 MiB one.
    "small": ("mset-50keys", 3, 64, ()),
}
# 12 min: 9 min of reps (dataset preload included), then 3 kept for the in-cache control
# (collectors/runner/stall_control.py: 8 short paired reps over at most 1/4 of L3;
# stall_control.budget_s); a run whose looks answer early ends sooner (~11 min fresh with its builds)
BUDGET_S = 720.0
