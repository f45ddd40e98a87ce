#!/usr/bin/env bash
# How tests/data/runs/io-threads-mset/ was recorded (by hand, before `python -m collectors
# run` existed), following docs/run-directory.md. Kept as provenance: every file in the run
# directory is the raw output of the commands below.
#
# usage: record.sh SRC_DIR OUT_RUN_DIR RUN_ID
#   SRC_DIR: a built Redis source tree (src/redis-server, src/redis-benchmark, src/redis-cli),
#            built with: make MALLOC=libc BUILD_TLS=no OPTIMIZATION=-O2 \
#                             CFLAGS="-g -fno-omit-frame-pointer"
# Variants: the same binary, base = io-threads 1, cand = io-threads 2 (io-threads-do-reads yes).
# Workload: MSET of 10 random keys (100 B values) out of 100,000, after a 100,000-key preload.
set -euo pipefail
SRC=$(cd "$1" && pwd); OUT=$2; RUN_ID=$3
HERE=$(cd "$(dirname "$0")" && pwd)
SERVER=$SRC/src/redis-server; BENCH=$SRC/src/redis-benchmark; CLI=$SRC/src/redis-cli
export PATH="$HOME/.cargo/bin:$PATH"
mkdir -p "$OUT"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
VAL=$(head -c 100 /dev/zero | tr '\0' 'v')
MSET=(MSET)
for i in $(seq 10); do MSET+=("key:__rand_int__" "$VAL"); done
BENCH_ARGS=(-r 100000 -n 40000 -c 20 -P 4 --csv)

start_server() {  # $1 = variant dir, $2 = io-threads
  PORT=$(free_port)
  local extra=()
  [ "$2" -gt 1 ] && extra=(--io-threads "$2" --io-threads-do-reads yes)
  taskset -c 0 "$SERVER" --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no \
    --daemonize no --logfile "$1/server.log" "${extra[@]}" &
  SPID=$!
  for _ in $(seq 100); do "$CLI" -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.05; done
  # Preload so MSET overwrites keys in a table of 100,000 (misses the caches more than an empty one).
  taskset -c 1 "$BENCH" -p "$PORT" -t set -r 100000 -n 200000 -d 100 -c 20 -P 16 -q >/dev/null
}
stop_server() { "$CLI" -p "$PORT" info all > "$1/info.txt"; kill "$SPID"; wait "$SPID" || true; }

rep() {  # variant io_threads rep kind
  local v=$1 io=$2 n=$3 kind=$4 d="$OUT/$1/$3"
  mkdir -p "$d"
  start_server "$d" "$io"
  local t0; t0=$(date +%s.%N)
  local cmd=(taskset -c 1 "$BENCH" -p "$PORT" "${BENCH_ARGS[@]}" "${MSET[@]}")
  if [ "$kind" = profile ]; then
    perf record -e cpu-clock -F 999 -g -p "$SPID" -o "$d/perf.data" -q &
    local ppid=$!; sleep 0.3
    "${cmd[@]}" > "$d/bench.csv" 2> "$d/bench.txt"
    kill -INT "$ppid"; wait "$ppid" || true
    perf script -i "$d/perf.data" 2>/dev/null | inferno-collapse-perf > "$d/perf.folded"
    perf script -i "$d/perf.data" -F tid,comm 2>/dev/null | awk '{print $2"\t"$1}' | sort -u > "$d/perf.threads.tsv"
    rm -f "$d/perf.data"
  else
    "${cmd[@]}" > "$d/bench.csv" 2> "$d/bench.txt"
  fi
  local t1; t1=$(date +%s.%N)
  stop_server "$d"
  python3 - "$d/rep.json" "$kind" "$t0" "$t1" "$SPID" "$io" "${cmd[*]}" <<'EOF'
import json, sys
p, kind, t0, t1, pid, io, cmd = sys.argv[1:]
json.dump({"kind": kind, "window": {"t0": float(t0), "t1": float(t1)}, "pid": int(pid),
           "cpus": {"server": [0], "client": [1]}, "io_threads": int(io),
           "commands": {"bench": cmd}}, open(p, "w"), indent=2)
EOF
  echo "$v $n $kind $(date -u +%FT%TZ)" >> "$OUT/schedule.log"
}

# Interleaved A B B A A B for throughput, then the same for profiles (separate reps).
rep base 1 1 throughput; rep cand 2 1 throughput; rep cand 2 2 throughput
rep base 1 2 throughput; rep base 1 3 throughput; rep cand 2 3 throughput
rep base 1 4 profile;    rep cand 2 4 profile;    rep cand 2 5 profile
rep base 1 5 profile;    rep base 1 6 profile;    rep cand 2 6 profile

# manifest.json from schedule.log and the host facts (then schedule.log is removed).
python3 "$HERE/make_manifest.py" "$OUT" "$SRC" "$RUN_ID"
