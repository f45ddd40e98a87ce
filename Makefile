# stallscope front door. `make help` lists the targets.
SHELL := /bin/bash
PY    := .venv/bin/python
SS    := .venv/bin/stallscope
export PATH := $(HOME)/.cargo/bin:$(PATH)
export PYTHONPATH := $(CURDIR)

# Defaults for the parametrised targets (override on the command line).
CASE  ?= mset-50keys
BASE  ?=
CAND  ?=
# REPS empty: a run that decides (its reps planned for its targets, docs/statistics.md)
REPS  ?=
PROFILE_REPS ?=
SIZE  ?= default
RUN   ?=

.PHONY: help setup test test-fast demo demo-small compare run funnel report doctor bench clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

setup: ## install everything (apt, inferno via cargo, Python venv); idempotent
	@bash scripts/setup.sh

test: ## run the whole test suite (real servers, real perf, fixture replays)
	$(PY) -m pytest

test-fast: ## the fast lane: unit tests only (not slow, not heavy: no builds, no real load, no long simulations), about a minute
	$(PY) -m pytest -m "not slow and not heavy"

demo: ## main job: Redis (Debian source) vs the same + cases/patches MSET prefetch -> reports/demo/
	$(SS) demo --out reports/demo

demo-small: ## the demo at CI size (a few minutes) -> reports/demo-small/
	$(SS) demo --size small --out reports/demo-small

# Quoted: a variant spec or run directory may contain spaces (e.g. +patch=my fix.patch).
RUN_ARGS = "$(CASE)" --variant "base=$(BASE)" --variant "cand=$(CAND)" --size "$(SIZE)" \
           $(if $(REPS),--reps "$(REPS)") $(if $(PROFILE_REPS),--profile-reps "$(PROFILE_REPS)")
need_variants = @test -n "$(BASE)" -a -n "$(CAND)" || { echo "make $@: set BASE=... and CAND=... (variant specs, e.g. BASE=debsrc:redis CAND=debsrc:redis+patch=my.patch)" >&2; exit 2; }

compare: ## run CASE for BASE vs CAND (variant specs) and report: make compare CASE=mget-100keys BASE=debsrc:redis CAND=...
	$(need_variants)
	$(SS) run $(RUN_ARGS) --report

run: ## collect only: make run CASE=... BASE=... CAND=... (writes runs/<run-id>/)
	$(need_variants)
	$(SS) run $(RUN_ARGS)

report: ## (re)build reports from a run directory: make report RUN=runs/<run-id>
	@test -n "$(RUN)" || { echo "make report: set RUN=runs/<run-id>" >&2; exit 2; }
	$(SS) compare "$(RUN)"

funnel: ## TMA funnel from toplev/perf outputs: make funnel BASE="a1 a2 a3" CAND="b1 b2 b3"
	$(SS) funnel $(BASE) --vs $(CAND)

doctor: ## which collectors work on this machine, and why not
	$(SS) doctor

bench: ## figures: analysis time, ingestion rate, profiler overhead, precision per minute of each method, history store and detector, stopping rules, false verdicts per table (and beside a known cost), the top movers' error rate and power, one method per row, intervals from 2 runs a side, power at the printed size, PR comment fitting of an untrusted report, bisection error rates, code layout spread, the sampling rate's cost bound, the reps of a run that decides, this host's DRAM and L3 latency, a run that stops when answered and the fewest reps that keep its intervals' level, the spread between runs that a run's interval leaves out
	$(PY) bench/run.py
	$(PY) bench/precision.py
	$(PY) bench/history.py
	$(PY) bench/stopping.py
	$(PY) bench/on_skew.py
	$(PY) bench/fdr.py
	$(PY) bench/fdr.py --known-cost
	$(PY) bench/movers.py
	$(PY) bench/mover_df.py
	$(PY) bench/undersampled.py
	$(PY) bench/small_n.py
	$(PY) bench/fdr_method.py
	$(PY) bench/power.py
	$(PY) bench/pr_shorten.py
	$(PY) bench/bisection.py
	$(PY) bench/layouts.py
	$(PY) bench/sample_cost.py
	$(PY) bench/perf_tilt.py
	$(PY) bench/targets.py
	$(PY) bench/latency.py
	$(PY) bench/sequential.py
	$(PY) bench/sequential.py --short
	$(PY) bench/run_spread.py

clean: ## remove runs/ and rendered reports (keeps the build cache in ~/.cache/stallscope)
	rm -rf runs reports/*/
