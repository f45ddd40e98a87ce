"""Load generators: redis-benchmark / valkey-benchmark (and memtier_benchmark when installed).

The raw output is written to the rep directory first (bench.csv = the tool's stdout,
bench.txt = its stderr), then parsed. redis-benchmark has no duration flag, so
`calibrate()` finds the request count -n that makes a run last about the wanted seconds.
memtier_benchmark runs for --test-time and writes bench.json itself (--json-out-file);
its stdout goes to bench.txt, its stderr to bench.stderr (see collectors/load/memtier.py).
"""
from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from analysis.errors import Failed
from analysis.inputs.bench import ThroughputError, parse_redis_benchmark_csv_text
from analysis.inputs.case import WorkloadSpec
from analysis.inputs.manifest import Calibration
from analysis.inputs.repfacts import BenchSummary
from collectors.host import procs

HOST = "127.0.0.1"


class BenchError(Failed):
    """The load generator failed or printed nothing parseable; names the raw file."""


# The summary of a measured run is part of rep.json: one type for both sides.
BenchResult = BenchSummary


def redis_benchmark_argv(bench_bin: str, port: int, w: WorkloadSpec, requests: int,
                         cluster: bool = False) -> list[str]:
    argv = [bench_bin, "-h", HOST, "-p", str(port), "-c", str(w.clients), "-P", str(w.pipeline),
            "-n", str(int(requests))]
    if w.keyspace:
        argv += ["-r", str(w.keyspace)]
    if w.threads and w.threads > 1:
        argv += ["--threads", str(w.threads)]
    if cluster:
        argv += ["--cluster"]
    # --csv prints one summary row per test and no progress lines.
    argv += ["--csv"]
    if not w.command:
        raise BenchError("case workload has no command words (workload.command)")
    return argv + [str(x) for x in w.command]


def start_redis_benchmark(argv: Sequence[str], cpus: Sequence[int] | None) -> "BenchProcess":
    """Start the load generator in the background (the profiler attaches meanwhile)."""
    return BenchProcess(list(argv), procs.spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                 cpus=cpus), time.monotonic(), time.time())


@dataclass
class BenchProcess:
    argv: list[str]
    proc: subprocess.Popen
    t0_mono: float
    t0_epoch: float                # wall-clock start (epoch s), for rep.json's window
    t1_epoch: float = 0.0

    def wait(self, timeout_s: float) -> tuple[bytes, bytes, float]:
        """Wait for the load generator (its whole process group goes afterwards) and stamp
        the window's end. Returns (stdout, stderr, wall seconds)."""
        p = self.proc
        try:
            out, err = p.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            procs.kill_group(p, 1.0)
            p.communicate()   # reap it and close its pipes
            raise BenchError(f"{self.argv[0]} did not finish within {timeout_s:.0f} s") from None
        finally:
            procs.kill_group(p, 1.0)
        self.t1_epoch = time.time()
        return out, err, time.monotonic() - self.t0_mono

    def finish(self, out_dir: Path | None, timeout_s: float, stem: str = "bench") -> BenchResult:
        """Wait, write raw outputs to out_dir/<stem>.csv (stdout) and <stem>.txt (stderr), parse."""
        out, err, wall = self.wait(timeout_s)
        text, etext = out.decode(errors="replace"), err.decode(errors="replace")
        csv_path = f"{stem}.csv"
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
            (out_dir / f"{stem}.csv").write_text(text)
            (out_dir / f"{stem}.txt").write_text(etext)
            csv_path = str(out_dir / f"{stem}.csv")
        if self.proc.returncode != 0:
            raise BenchError(f"{self.argv[0]} exited with status {self.proc.returncode}: "
                             f"{etext.strip()[-500:]}")
        try:
            row = parse_redis_benchmark_csv_text(text, csv_path)[-1]
        except ThroughputError as e:
            raise BenchError(str(e)) from None
        n = int(self.argv[self.argv.index("-n") + 1])
        lat = {f"{k}_latency_ms": v for k, v in row.latency_ms.items()}
        return BenchResult(test=row.test, rps=row.ops_per_sec, **lat, wall_s=round(wall, 6),
                           requests=n)


def run_redis_benchmark(argv: Sequence[str], out_dir: Path | None, cpus: Sequence[int] | None,
                        timeout_s: float, stem: str = "bench") -> BenchResult:
    """Run one redis-benchmark to completion; raw outputs as in BenchProcess.finish."""
    return start_redis_benchmark(argv, cpus).finish(out_dir, timeout_s, stem)


def calibrate(bench_bin: str, port: int, w: WorkloadSpec, target_s: float,
              cpus: Sequence[int] | None, cluster: bool = False,
              min_probe_s: float = 0.5) -> Calibration:
    """pyperf-style: grow -n until a probe lasts >= min_probe_s, then scale to target_s."""
    n = max(1000, w.clients * 20)
    while True:
        argv = redis_benchmark_argv(bench_bin, port, w, n, cluster)
        r = run_redis_benchmark(argv, None, cpus, timeout_s=120)
        if r.wall_s >= min_probe_s or n >= 10**9:
            break
        # Aim a little past the threshold so usually one more probe suffices.
        n = int(n * min(10.0, max(2.0, 1.5 * min_probe_s / max(r.wall_s, 1e-3))))
    # rps from the tool excludes connection setup; wall time includes it: use wall time.
    rate = n / r.wall_s
    # A second probe at the rate found: the first one often runs on a server that is still
    # warming up (a freshly restored keyspace, pipelined clients ramping up) and can be
    # several times slower. Too low a rate makes every rep end early (a profile rep with
    # half its windows empty), too high only makes reps a little longer: keep the faster.
    n2 = max(n, int(rate * max(1.0, min_probe_s)))
    r2 = run_redis_benchmark(redis_benchmark_argv(bench_bin, port, w, n2, cluster), None, cpus, timeout_s=120)
    if n2 / r2.wall_s > rate:
        n, r, rate = n2, r2, n2 / r2.wall_s
    return Calibration(requests=max(w.clients, int(rate * target_s)), target_s=target_s,
                       probe_requests=n, probe_wall_s=round(r.wall_s, 4), probe_rps=r.rps)
