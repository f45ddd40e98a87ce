"""Write manifest.json for a run directory recorded by record.sh (provenance, not a tool).

usage: python make_manifest.py RUN_DIR SRC_DIR RUN_ID

Reads schedule.log (written by record.sh as each rep finished) and the host facts from
/proc and /sys at recording time, so the manifest describes the machine that recorded it.
"""
from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import sys
from pathlib import Path


def sh(*cmd: str) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def main() -> None:
    run, src, run_id = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    server = src / "src" / "redis-server"
    sha = hashlib.sha256(server.read_bytes()).hexdigest()
    version = sh(str(server), "--version").split("v=")[1].split()[0]
    lscpu = dict(line.split(":", 1) for line in sh("lscpu").splitlines() if ":" in line)
    lscpu = {k.strip(): v.strip() for k, v in lscpu.items()}
    thp = read("/sys/kernel/mm/transparent_hugepage/enabled") or ""
    thp = thp.split("[")[1].split("]")[0] if "[" in thp else thp
    vulns = Path("/sys/devices/system/cpu/vulnerabilities")
    mitig = "; ".join(f"{p.name}: {p.read_text().strip()}" for p in sorted(vulns.iterdir())
                      if "Mitigation" in p.read_text()) if vulns.is_dir() else None
    val = "v" * 100
    mset = ["MSET"] + ["key:__rand_int__", val] * 10
    common = {"spec": f"binary:{server}", "kind": "binary",
              "source": "redis 5:7.0.15-1~deb12u10 (Debian source, suite bookworm), built locally",
              "patches": [],
              "make_flags": ["MALLOC=libc", "BUILD_TLS=no", "OPTIMIZATION=-O2",
                             "CFLAGS=-g -fno-omit-frame-pointer"],
              "server_bin": str(server), "benchmark_bin": str(src / "src" / "redis-benchmark"),
              "cli_bin": str(src / "src" / "redis-cli"), "binary_sha256": sha,
              "version": version, "commit": "7.0.15-1~deb12u10", "frame_pointers": True,
              "symbols": True, "callgraph": "fp"}
    variants = {
        "base": {"name": "base", **common, "config": {"io-threads": "1"}},
        "cand": {"name": "cand", **common,
                 "config": {"io-threads": "2", "io-threads-do-reads": "yes"}},
    }
    schedule = []
    for line in (run / "schedule.log").read_text().splitlines():
        v, rep, kind, when = line.split()
        schedule.append({"variant": v, "rep": int(rep), "kind": kind, "status": "ok",
                         "reason": None, "started": None, "finished": when,
                         "dir": f"{v}/{rep}"})
    manifest = {
        "schema": 1, "run_id": run_id, "created": schedule[0]["finished"],
        "command": ["bash", "tests/data/runs/record.sh", str(src), str(run)],
        "case": {
            "name": "mset-10keys-io-threads",
            "description": "MSET of 10 random keys (100 B values) over a 100,000-key table; "
                           "io-threads 1 vs 2 on one server CPU",
            "server": {"config": {}, "io_threads": 1, "cluster": False, "persistence": False},
            "dataset": {"kind": "strings", "keys": 100000, "value_size": 100, "fields": 0,
                        "members": 0, "key_prefix": "key:", "expect_encoding": None},
            "workload": {"tool": "redis-benchmark", "command": mset, "keyspace": 100000,
                         "clients": 20, "pipeline": 4, "threads": 1, "requests": 40000,
                         "duration_s": 0.0, "warmup_s": 0.0},
            "focus": ["dictFind", "lookupKey", "dictSdsKeyCompare", "msetGenericCommand"],
            "size": "small", "source": "tests/data/runs/record.sh", "notes": [],
        },
        "size": "small",
        "variants": variants,
        "host": {
            "cpu_model": lscpu.get("Model name"), "cores": int(lscpu.get("CPU(s)", "0")),
            "threads_per_core": int(lscpu.get("Thread(s) per core", "1")),
            "l3_bytes": 32 * 1024 * 1024, "kernel": platform.release(),
            "governor": read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            "thp": thp, "smt": read("/sys/devices/system/cpu/smt/control"),
            "mitigations": mitig,
            "perf_event_paranoid": int(read("/proc/sys/kernel/perf_event_paranoid") or -1),
            "nmi_watchdog": int(read("/proc/sys/kernel/nmi_watchdog") or 0),
            "compiler": sh("gcc", "--version").splitlines()[0],
            "virtualization": lscpu.get("Hypervisor vendor"), "pmu": False,
        },
        "tools": {"perf": sh("perf", "--version").replace("perf version ", ""),
                  "inferno": "0.12.8",  # inferno-collapse-perf has no --version; cargo install --version 0.12.8
                  "python": platform.python_version(),
                  "redis-benchmark": version},
        "placement": {"server_cpus": [0], "client_cpus": [1],
                      "note": "server (all its threads) pinned to CPU 0, redis-benchmark to CPU 1 "
                              "with taskset; the io-thread shares CPU 0 with the main thread"},
        "profiling": {"profiler": "perf", "mode": "separate", "frequency_hz": 999,
                      "event": "cpu-clock",
                      "note": "throughput reps are unprofiled; profile reps ran the same load "
                              "under perf record -e cpu-clock -F 999 -g -p PID"},
        "tma": {"backend": "off", "status": "unavailable",
                "reason": "no hardware PMU on this host (KVM guest; perf stat -e cycles: "
                          "<not supported>)"},
        "paired": None,
        "schedule": schedule,
    }
    (run / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    (run / "schedule.log").unlink()


if __name__ == "__main__":
    main()
