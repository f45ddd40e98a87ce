"""memtier_benchmark as a rep's load generator (workload.tool: memtier, or --load-generator).

The runner asks `choose()` once per run which tool drives the load; the answer is the
manifest's `load_generator` entry. memtier runs when it is installed (PATH, or
MEMTIER=/path) and the case can be said in memtier's terms; otherwise redis-benchmark of
the variant's own build runs the same command words, and the entry (and a line on stderr)
says why.

Key names are the one real obstacle. The dataset names key i `prefix + "%012d" % i`
(DatasetSpec.key_name, what redis-benchmark makes of `__rand_int__`); memtier names a key
`key-prefix + "%llu" % n`, unpadded (obj_gen.cpp generate_key). They agree only where
every n has the same number of digits d: then memtier's prefix is `prefix + "0" * (12 - d)`.
So memtier draws from [10^(d-1), keyspace-1] (all of [0, keyspace) when keyspace <= 10):
every key it sends exists, but the lowest keys are never touched. The entry's `key_range`
says how many of the keyspace's keys memtier reaches.

Raw outputs: bench.json (memtier --json-out-file), bench.txt (stdout: memtier's summary
table), bench.stderr (progress lines). analysis.inputs.bench.load_rep reads bench.json.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass, asdict
from pathlib import Path
from typing import Any, Mapping, Sequence

from analysis.errors import UserError
from analysis.inputs.case import Case
from analysis.inputs.manifest import LoadGenerator
from collectors.host import procs, versions
from collectors.load.redis_benchmark import HOST, BenchError, BenchProcess, BenchResult

ENV = "MEMTIER"
CHOICES = ("auto", "redis-benchmark", "memtier")
INSTALL_HINT = "install it from its release or build it from source, or set MEMTIER=/path"
KEY_DIGITS = 12          # DatasetSpec.key_name's zero padding


class MemtierError(UserError):
    """memtier was asked for explicitly (MEMTIER=) and cannot be used: the run stops."""


class MappingError(UserError, ValueError):
    """The case cannot be expressed as memtier arguments: the runner falls back."""


def find_memtier(env: Mapping[str, str] | None = None) -> str | None:
    """MEMTIER=/path if set (must be an executable file), else memtier_benchmark on PATH."""
    env = os.environ if env is None else env
    path = env.get(ENV)
    if path:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.abspath(path)
        why = "does not exist" if not os.path.exists(path) else "is not an executable file"
        raise MemtierError(f"{ENV}={path}: {why}; point {ENV} at the memtier_benchmark binary, "
                           f"or unset it to look for memtier_benchmark on PATH")
    return shutil.which("memtier_benchmark", path=env.get("PATH"))


@dataclass
class KeyRange:
    prefix: str              # memtier --key-prefix
    minimum: int             # --key-minimum
    maximum: int             # --key-maximum
    covered: int             # keys memtier can send
    keyspace: int            # keys the workload's range holds (redis-benchmark -r)

    @property
    def exact(self) -> bool:
        return self.covered == self.keyspace

    def note(self) -> str | None:
        if self.exact:
            return None
        return (f"memtier names keys without zero padding: it draws from keys {self.minimum}.."
                f"{self.maximum} ({self.covered} of the {self.keyspace} keys, "
                f"{100.0 * self.covered / self.keyspace:.0f}%), the ones whose "
                f"{KEY_DIGITS}-digit names share the prefix {self.prefix!r}; keys 0.."
                f"{self.minimum - 1} are preloaded but not touched")

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "exact": self.exact}


def key_range(key_prefix: str, keyspace: int) -> KeyRange:
    """The memtier key range whose names are dataset key names (see the module doc)."""
    if keyspace < 1:
        raise MappingError("the command uses __rand_int__ but workload.keyspace is 0")
    if keyspace > 10 ** KEY_DIGITS:
        raise MappingError(f"workload.keyspace {keyspace} needs more than {KEY_DIGITS} digits")
    d = len(str(keyspace - 1))
    lo = 0 if d == 1 else 10 ** (d - 1)
    return KeyRange(prefix=key_prefix + "0" * (KEY_DIGITS - d), minimum=lo, maximum=keyspace - 1,
                    covered=keyspace - lo, keyspace=keyspace)


@dataclass
class Plan:
    """A case in memtier's terms."""
    command: str                  # --command
    data_size: int | None         # --data-size, when the command has __data__
    keys: KeyRange | None         # None: the command names no random key
    clients_per_thread: int       # -c (memtier's is per thread)
    threads: int                  # -t

    def to_json(self) -> dict[str, Any]:
        return {"command": self.command if len(self.command) <= 200 else self.command[:197] + "...",
                "data_size": self.data_size, "clients_per_thread": self.clients_per_thread,
                "threads": self.threads, "key_range": self.keys.to_json() if self.keys else None}


def plan(case: Case) -> Plan:
    """Translate the resolved case; MappingError says what has no memtier equivalent."""
    w, ds = case.workload, case.dataset
    if not w.command:
        raise MappingError("the case has no command words (workload.command)")
    key_word = f"{ds.key_prefix}__rand_int__"
    value = "x" * ds.value_size if ds.value_size > 0 else None
    words, has_key, has_data = [], False, False
    for word in map(str, w.command):
        if word == key_word:
            words.append("__key__")      # memtier draws a fresh key for every __key__
            has_key = True
        elif "__rand_int__" in word:
            raise MappingError(f"command word {word!r}: memtier replaces only a whole __key__ word "
                               f"(prefix from --key-prefix), so only {key_word!r} maps")
        elif value is not None and word == value:
            # cases.py expanded __data__ to value_size bytes of 'x'; memtier's __data__ without
            # --random-data is the same bytes (obj_gen.cpp fill_value_buffer), and keeps the
            # --command short for 1000-byte values x 50 keys.
            words.append("__data__")
            has_data = True
        elif not word or any(c.isspace() or c in "\"'" for c in word):
            raise MappingError(f"command word {word!r}: memtier splits --command on spaces")
        else:
            words.append(word)
    threads = max(1, w.threads)
    if w.clients % threads:
        raise MappingError(f"workload.clients {w.clients} is not a multiple of workload.threads {threads} "
                           "(memtier's -c counts connections per thread)")
    keys = key_range(ds.key_prefix, w.keyspace) if has_key else None
    return Plan(command=" ".join(words), data_size=ds.value_size if has_data else None, keys=keys,
                clients_per_thread=w.clients // threads, threads=threads)


def memtier_argv(memtier_bin: str, port: int, p: Plan, pipeline: int, test_time_s: float,
                 json_out: Path, cluster: bool = False) -> list[str]:
    argv = [memtier_bin, "--server", HOST, "--port", str(port), "--protocol", "redis",
            "--clients", str(p.clients_per_thread), "--threads", str(p.threads),
            "--pipeline", str(max(1, pipeline)),
            # memtier has a duration flag: no calibration run, unlike redis-benchmark -n
            "--test-time", str(max(1, int(round(test_time_s)))),
            "--hide-histogram", "--json-out-file", str(json_out),
            f"--command={p.command}"]
    if p.keys is not None:
        # R = uniform random, as redis-benchmark -r. Without --distinct-client-seed every
        # connection draws the same key sequence (same seed), unlike redis-benchmark.
        argv += [f"--key-prefix={p.keys.prefix}", f"--key-minimum={p.keys.minimum}",
                 f"--key-maximum={p.keys.maximum}", "--command-key-pattern=R", "--distinct-client-seed"]
    if p.data_size is not None:
        argv += [f"--data-size={p.data_size}"]
    if cluster:
        argv += ["--cluster-mode"]
    return argv


def choose(case: Case, mode: str, bench_paths: Mapping[str, str | None], paired: bool = False,
           env: Mapping[str, str] | None = None) -> tuple[LoadGenerator, str | None]:
    """The manifest's load_generator entry and the memtier binary (None: redis-benchmark).

    mode: auto (the case's workload.tool), redis-benchmark or memtier. Raises MemtierError
    only for a MEMTIER= that points nowhere; everything else falls back to redis-benchmark
    with a reason."""
    if mode not in CHOICES:
        raise ValueError(f"load generator {mode!r} is not one of {', '.join(CHOICES)}")
    if case.workload.tool == "rdb-load":
        return LoadGenerator(reason="rdb-load case: no load generator"), None
    requested = mode if mode != "auto" else ("memtier" if case.workload.tool == "memtier"
                                             else "redis-benchmark")
    rb = LoadGenerator(requested, "redis-benchmark", dict(bench_paths))
    if requested == "redis-benchmark":
        return rb, None
    how = "--load-generator memtier" if mode == "memtier" else "workload.tool: memtier"
    reason = None
    try:
        p = plan(case)
    except MappingError as e:
        p, reason = None, f"the case has no memtier equivalent: {e}"
    if reason is None and paired:
        reason = "--paired drives redis-benchmark between CONFIG SET windows (collectors/runner/paired.py)"
    binary = find_memtier(env)    # MemtierError (bad MEMTIER=) propagates: the user asked for it
    if reason is None and binary is None:
        reason = f"memtier_benchmark not on PATH ({INSTALL_HINT})"
    if reason is not None:
        rb.reason, rb.asked_by = reason, how
        return rb, None
    entry = LoadGenerator.from_json({"requested": "memtier", "used": "memtier", "path": binary,
                                     "asked_by": how, "version": versions.version_line(binary),
                                     **p.to_json()}, "load_generator")
    entry.note = p.keys.note() if p.keys else None
    return entry, binary


def describe(entry: LoadGenerator) -> str | None:
    """The stderr line for a fallback or a partial key range (None: nothing to say)."""
    if entry.requested == "memtier" and entry.used != "memtier":
        return (f"load generator: memtier requested ({entry.asked_by}), using redis-benchmark "
                f"instead: {entry.reason}")
    if entry.used == "memtier" and entry.note:
        return f"load generator: memtier_benchmark ({entry.path}); {entry.note}"
    return None


def start(argv: Sequence[str], cpus: Sequence[int] | None) -> "MemtierProcess":
    """Start memtier in the background (the profiler attaches meanwhile)."""
    json_out = Path(argv[list(argv).index("--json-out-file") + 1])
    return MemtierProcess(list(argv),
                          procs.spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cpus=cpus),
                          time.monotonic(), time.time(), json_out=json_out)


@dataclass
class MemtierProcess(BenchProcess):
    json_out: Path = Path("bench.json")

    def finish(self, out_dir: Path, timeout_s: float, stem: str = "bench") -> BenchResult:
        """Wait; stdout -> <stem>.txt, stderr -> <stem>.stderr; parse <stem>.json."""
        from analysis.inputs.bench import ThroughputError, parse_memtier_json
        out, err, wall = self.wait(timeout_s)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"{stem}.txt").write_text(out.decode(errors="replace"))
        etext = err.decode(errors="replace")
        (out_dir / f"{stem}.stderr").write_text(etext)
        if self.proc.returncode != 0:
            raise BenchError(f"{self.argv[0]} exited with status {self.proc.returncode}: "
                             f"{etext.strip()[-500:]}")
        if not self.json_out.is_file():
            raise BenchError(f"{self.argv[0]} exited 0 but wrote no {self.json_out} "
                             f"(stdout in {out_dir / (stem + '.txt')})")
        try:
            rows = parse_memtier_json(self.json_out)
        except ThroughputError as e:
            raise BenchError(str(e)) from None
        if not rows:
            raise BenchError(f"{self.json_out}: no \"Ops/sec\" row under \"ALL STATS\"")
        t = rows[0]
        lat = t.latency_ms
        # memtier runs for --test-time: no request count (None, not 0: analysis caps the
        # operations of a profile window at bench.requests when it is a number).
        return BenchResult(test=t.test, rps=t.ops_per_sec, avg_latency_ms=lat.get("avg"),
                           min_latency_ms=lat.get("min"), p50_latency_ms=lat.get("p50"),
                           p95_latency_ms=lat.get("p95"), p99_latency_ms=lat.get("p99"),
                           max_latency_ms=lat.get("max"), wall_s=round(wall, 6), requests=None)
