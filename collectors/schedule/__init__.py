"""Scheduled profiling: a schedule file of jobs (cases x variants, cron, runner labels),
run when due through the runner and compare, recorded into the history store
(analysis.history), alerts delivered; systemd units and a GitHub Actions workflow that
run it. docs/schedule.md documents the file and the commands."""
