"""Bisection of a commit range to the commit that changed throughput: the sequential rule each
step is decided by (rule.py), the search and its state (search.py), the report (report.py).
docs/bisect.md."""
