"""Collectors: everything that starts a process (builds, servers, load generators,
perf, toplev, Parca queries). Each collector writes the tool's raw output into the run
directory before anything parses it (see docs/run-directory.md)."""
