"""`stallscope doctor`: which collectors work on this machine (the checks are
collectors/doctor.py)."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from collectors import doctor
from collectors.command import run_command
from collectors.profilers.parca.client import TOKEN_ENV


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="stallscope doctor",
        # No abbreviations: `--parca-token SECRET` must not pass as --parca-token-file.
        allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="List every stallscope collector with available / NOT available and why, "
                    "on this machine (real checks: perf really samples 0.1 s).",
        epilog="examples:\n  stallscope doctor\n  stallscope doctor --json > doctor.json\n"
               "  stallscope doctor --parca-url http://127.0.0.1:7070 --strict")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ap.add_argument("--strict", action="store_true", help="exit 1 if any collector is not available")
    ap.add_argument("--parca-url", help="also check this Parca server (default $STALLSCOPE_PARCA_URL)")
    ap.add_argument("--parca-token-file", metavar="PATH",
                    help=f"file holding the bearer token (default ${TOKEN_ENV}; never on the command line)")
    a = ap.parse_args(argv)
    return run_command("stallscope doctor", lambda: _doctor(a))


def _doctor(a: argparse.Namespace) -> int:
    checks = doctor.run_checks(a.parca_url, a.parca_token_file)
    if a.json:
        print(json.dumps([asdict(c) for c in checks], indent=2))
    else:
        print(doctor.render(checks))
    return 1 if a.strict and not all(c.available for c in checks) else 0


if __name__ == "__main__":
    sys.exit(main())
