"""What analysis reads: the run directory (the one contract with collectors) and the raw
outputs of the tools the collectors ran.

- `records`  typed records that keep the fields they do not know (forward compatible)
- `case`     the workload model as recorded in manifest.json ("case")
- `manifest` manifest.json: the run, its variants, the rep schedule, typed sections
- `repfacts` rep.json: what one rep ran and saw (window, requests, perf event and rate)
- `rundir`   reading and writing a run directory (atomic manifest, schema migration)
- `yaml_lines` the one YAML reader: values with the line each came from (file:line errors)
- `bench`    load-generator outputs: redis-benchmark CSV/text, memtier JSON
"""
