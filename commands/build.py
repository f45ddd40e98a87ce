"""`stallscope build NAME=SPEC`: build one variant (or take it from the build
cache) and print its manifest record as JSON."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from collectors.command import run_command
from collectors.variants.builder import build_variant
from collectors.variants.spec import GRAMMAR, parse_variant

DESCRIPTION = """\
Build one variant (or take it from the build cache) and print it as JSON: the object
that goes into a run's manifest.json under "variants.<name>" (binaries, sha256, version,
frame pointers of the server and of its bundled jemalloc, symbols, callgraph mode).

Default build: make -j2 OPTIMIZATION=-O2 CFLAGS='-g -fno-omit-frame-pointer'
MALLOC=jemalloc BUILD_TLS=no USE_SYSTEMD=no BUILD_WITH_MODULES=no (nothing is downloaded
by make). Debian sources are unpacked with their debian/patches applied, then built with
upstream make (not dpkg-buildpackage).
"""

EPILOG = GRAMMAR + """
Cache: ${STALLSCOPE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/stallscope}/builds/<hash>/
(hash of source identity, patch contents and make flags).

Examples:
  stallscope build base=debsrc:redis
  stallscope build cand=debsrc:redis+patch=cases/patches/mset-bucket-prefetch.patch
  stallscope build v=debsrc:valkey@9.1 --cache /tmp/ss-cache
  stallscope build sys=bin:/usr/bin/redis-server
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="stallscope build", description=DESCRIPTION,
                                 epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("variant", metavar="NAME=SPEC", help="the variant to build (grammar below)")
    ap.add_argument("--cache", type=Path, default=None,
                    help="cache directory (default: $STALLSCOPE_CACHE or ~/.cache/stallscope)")
    args = ap.parse_args(argv)
    # A spec that does not parse is bad input (2); a build that fails ran (1): the
    # errors' own statuses (analysis/errors.py).
    return run_command("stallscope build", lambda: _build(args),
                       interrupted="(builds finished so far are cached)")


def _build(args: argparse.Namespace) -> int:
    spec = parse_variant(args.variant)
    bv = build_variant(spec, args.cache, log=lambda m: print(m, file=sys.stderr, flush=True))
    print(json.dumps(bv.to_json(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
