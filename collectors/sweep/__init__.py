"""`stallscope sweep` and `stallscope experiment`: one case over the cartesian product of
axes, each point an ordinary run directory (docs/sweeps.md, docs/experiments.md)."""
