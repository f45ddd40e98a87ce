"""History of scheduled (and hand-made) runs: the store, what is extracted from each run's
results.json, change points over every series, marks (docs/history.md)."""
