"""`stallscope bisect`: the commits of a range (commits.py), the comparisons that decide each
step, run through the run API (driver.py), and the command (commands/bisect.py). docs/bisect.md."""
