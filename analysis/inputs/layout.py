"""The names of the files of a run directory, a sweep and an experiment directory, and of a
report directory: one place, so a writer and its readers cannot drift apart
(docs/run-directory.md is the layout with what each file holds).

    runs/<run-id>/manifest.json, dataset/{preload.txt,verify.json},
        <variant>/<rep>/{rep.json, bench.*, perf.folded, tma.*, paired.json, ...}
    sweeps/<id>/sweep.json, <point run directories>
    experiments/<id>/experiment.json, <one sweep directory per part>
    reports/<id>/report.md, report.html, results.json, <variant>.folded, ...
"""
from __future__ import annotations

# -- a run directory
MANIFEST = "manifest.json"            # the run: case, variants, schedule of reps
DATASET_DIR = "dataset"               # the dataset's preload output and verification
PRELOAD_TXT = "preload.txt"
VERIFY_JSON = "verify.json"

# -- a rep directory (<variant>/<rep>/)
REP_JSON = "rep.json"                 # the rep's facts
BENCH_CSV = "bench.csv"               # redis-benchmark --csv
BENCH_JSON = "bench.json"             # memtier_benchmark --json-out-file
BENCH_TXT = "bench.txt"               # the load generator's text output (stderr)
BENCH_FILES = (BENCH_CSV, BENCH_JSON, BENCH_TXT)   # the measured load, in reading order
RDB_LOAD_JSON = "rdb_load.json"       # rdb-load cases: the load's timing
PAIRED_JSON = "paired.json"           # paired reps: the windows
PERF_FOLDED = "perf.folded"           # folded stacks of a profile rep
PERF_DATA = "perf.data"
PROFILE_PB = "profile.pb.gz"          # pprof (Parca, or converted)
TMA_CSV = "tma.csv"
TMA_JSON = "tma.json"
TMA_FILES = (TMA_CSV, TMA_JSON)       # a rep's TMA output, in reading order
SERVER_LOG = "server.log"
INFO_TXT = "info.txt"

# -- a run's in-cache control (a run directory of its own inside the run's: docs/statistics.md,
#    "Memory stalls without a PMU")
INCACHE_DIR = "incache"

# -- a sweep and an experiment directory
SWEEP_JSON = "sweep.json"
EXPERIMENT_JSON = "experiment.json"

# -- a report directory
REPORT_MD = "report.md"
# report.md's line after the part a PR comment posts (its lead: headline, tables, counts);
# an HTML comment, which GitHub does not show. The PR comment posts what is above it
# (collectors/pr/sources.py), or all of report.md with `stallscope pr comment --full`.
REPORT_LEAD_END = "<!-- stallscope: the PR comment ends here; --full posts the rest -->"
REPORT_HTML = "report.html"
RESULTS_JSON = "results.json"
CROSSOVER_SVG = "crossover.svg"


def folded_name(variant: str) -> str:
    """A variant's merged profile beside its report: `<variant>.folded`."""
    return f"{variant}.folded"
