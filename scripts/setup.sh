#!/usr/bin/env bash
# One-command setup for stallscope (called by `make setup`). Idempotent: every step checks
# first and does nothing when already done, so a second run takes seconds.
#
# Installs: Debian packages (toolchain to build Redis/Valkey from source, dpkg-dev for
# `apt-get source`, linux-perf, Chromium for the HTML report test), inferno via cargo
# (flame graphs and folded stacks), and a Python virtual environment in .venv with the
# pinned requirements (among them pmu-tools: toplev, found there by `stallscope doctor`).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

log() { printf '\033[1msetup:\033[0m %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || die "not root and no sudo: run 'make setup' as root or install sudo"
  SUDO="sudo"
fi

# --- Debian packages --------------------------------------------------------------
apt_pkgs=(build-essential ccache dpkg-dev git pkg-config linux-perf procps util-linux
          python3-venv chromium curl ca-certificates postgresql-15)
CARGO_BIN=${CARGO_HOME:-$HOME/.cargo}/bin
export PATH="$CARGO_BIN:$PATH"
# A Rust toolchain only when none is on the machine already (rustup or Debian's).
need_rust=0
command -v cargo >/dev/null || need_rust=1
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] || [ $need_rust = 1 ]; then
  $SUDO apt-get update -qq
  if [ $need_rust = 1 ]; then
    # inferno needs rustc >= 1.85 (RUST_MIN below): bookworm's `cargo` is 1.63, its
    # `cargo-web` (the toolchain Debian keeps current to build the browsers) is new enough.
    if apt-cache show cargo-web >/dev/null 2>&1; then missing+=(cargo-web); else missing+=(cargo); fi
  fi
  log "installing Debian packages: ${missing[*]}"
  # sudo resets the environment: pass DEBIAN_FRONTEND through env, or debconf may prompt.
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  log "Debian packages present"
fi

# --- inferno (inferno-collapse-perf, inferno-flamegraph, inferno-diff-folded) -----------
INFERNO_VERSION=0.12.8
# --locked builds inferno's Cargo.lock: its clap 4.6 / indexmap 2.14 declare rust-version 1.85.
RUST_MIN=1.85
# inferno's binaries have no --version; cargo's install ledger says which one is there.
if command -v inferno-collapse-perf >/dev/null && \
   grep -qs "\"inferno $INFERNO_VERSION " "${CARGO_HOME:-$HOME/.cargo}/.crates.toml"; then
  log "inferno $INFERNO_VERSION present"
else
  rustc_v=$(rustc --version 2>/dev/null | awk '{print $2}')
  if [ -z "$rustc_v" ] || [ "$(printf '%s\n%s\n' "$RUST_MIN" "$rustc_v" | sort -V | head -1)" != "$RUST_MIN" ]; then
    die "inferno $INFERNO_VERSION needs rustc >= $RUST_MIN, found '${rustc_v:-none}': on Debian 12 replace 'cargo' with 'cargo-web' (apt-get install cargo-web), or install a current toolchain with rustup"
  fi
  log "building inferno $INFERNO_VERSION with cargo (a few minutes on 2 cores)"
  cargo install --locked --quiet --version "$INFERNO_VERSION" inferno
fi

# --- actionlint (checks the GitHub Actions workflow `stallscope schedule github` writes) -------
ACTIONLINT_VERSION=1.7.12
GOBIN_DIR=${GOBIN:-${GOPATH:-$HOME/go}/bin}
export PATH="$GOBIN_DIR:/usr/local/go/bin:$PATH"
if command -v actionlint >/dev/null && [ "$(actionlint -version 2>/dev/null | head -1)" = "v$ACTIONLINT_VERSION" ]; then
  log "actionlint $ACTIONLINT_VERSION present"
else
  if ! command -v go >/dev/null; then
    dpkg-query -W -f='${Status}' golang-go 2>/dev/null | grep -q "ok installed" || {
      $SUDO apt-get update -qq
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends golang-go; }
  fi
  log "building actionlint $ACTIONLINT_VERSION with go (about 15 s)"
  go install "github.com/rhysd/actionlint/cmd/actionlint@v$ACTIONLINT_VERSION"
fi

# zizmor (the GitHub Actions static analyser the tests run on every generated workflow, beside
# actionlint) is a Python package with its binary inside: pinned in requirements.txt and
# installed into .venv/bin below, where tests/zizmor.py finds it.

# --- Python virtual environment ------------------------------------------------------
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  log "creating .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want=$(cat requirements.txt requirements-nodeps.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || [ ! -x .venv/bin/stallscope ]; then
  log "installing Python requirements and the stallscope command into .venv"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements.txt
  .venv/bin/python -m pip install -q --no-deps -r requirements-nodeps.txt
  # Editable: .venv/bin/stallscope runs this checkout. No build isolation: the pinned
  # setuptools from requirements.txt builds it, nothing is fetched unpinned.
  # (setuptools warns that an editable install is editable; PYTHONWARNINGS keeps it quiet.)
  PYTHONWARNINGS=ignore .venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .
  echo "$want" > "$stamp"
else
  log "Python requirements and the stallscope command up to date"
fi

log "done. Next: 'make demo' (main job) or 'make test'."
