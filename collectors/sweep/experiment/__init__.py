"""`stallscope experiment`: one seed experiment (cases/experiments/NAME.yaml), each part a
sweep (docs/experiments.md).

- `file`      one experiment file read and checked: `Experiment`, its `Part`s
- `cli`       the command
- `parts`     an experiment's parts as sweeps: options, plans, the loop
- `fanout`    `--emit-matrix` / `--point` / `--merge`: an experiment over many runners
- `workflow`  `stallscope experiment github`: the GitHub Actions workflow that does that

The experiment file's API (`file`) is re-exported here.
"""
from collectors.sweep.experiment.file import (EXPERIMENTS_DIR, Experiment, Part, experiment_files,
                                              load_experiment)

__all__ = ["EXPERIMENTS_DIR", "Experiment", "Part", "experiment_files", "load_experiment"]
