"""`stallscope experiment`: one seed experiment (cases/experiments/NAME.yaml), each part a
sweep (docs/experiments.md). The commands are commands/experiment.py (with
experiment_fanout.py: `--emit-matrix` / `--point` / `--merge` over many runners, and
experiment_github.py).

- `file`      one experiment file read and checked: `Experiment`, its `Part`s
- `parts`     an experiment's parts as sweeps: options, plans, the loop
- `workflow`  the GitHub Actions workflow `stallscope experiment github` writes

The experiment file's API (`file`) is re-exported here.
"""
from collectors.sweep.experiment.file import (EXPERIMENTS_DIR, Experiment, Part, experiment_files,
                                              load_experiment)

__all__ = ["EXPERIMENTS_DIR", "Experiment", "Part", "experiment_files", "load_experiment"]
