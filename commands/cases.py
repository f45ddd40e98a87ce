"""`stallscope cases`: list cases, show one resolved, or import a
redis-benchmarks-specification suite file as a case."""
from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

import yaml

from analysis.inputs.case import Case
from analysis.inputs.option_specs import LLC, SIZE, SIZE_WORDS, SIZES
from collectors.command import run_command
from collectors.workload.cases import case_files, load_case, load_doc, sizes_of, variants_of
from collectors.workload.overrides import parse_sets
from collectors.workload.suite import import_suite, write_case_yaml
from commands.options import add_option

HELP = """\
List cases, show one resolved (size knob and matrix applied), or import a
redis-benchmarks-specification test-suite file as a case.

examples:
  stallscope cases list
  stallscope cases show mset-50keys --size small
  stallscope cases show 'mset-50keys@value=100,keys=1M' --json
  stallscope cases show get-iothreads --size small --set workload.pipeline=16
  stallscope cases import memtier_benchmark-5Mkeys-string-mget-100B-100keys.yml -o cases/mget-suite.yaml

A case name may carry matrix values after '@' (axis=value, comma separated); axes not
given keep the file's base values. Sizes (docs/cases.md, "Sizes from the host's cache"):
""" + textwrap.fill(SIZE_WORDS + "; every case has tiny, small and default.", 88) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="stallscope cases", description=HELP,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p_list = sub.add_parser("list", help="every case name (matrix variants included) with its description")
    p_list.add_argument("--names", action="store_true", help="names only, one per line")
    p_show = sub.add_parser("show", help="one case, resolved, as YAML (or --json)")
    p_show.add_argument("name", help="case name, name@axis=value,..., or a path to a .yaml file")
    add_option(SIZE, p_show, "cases show")
    add_option(LLC, p_show, "cases show")
    p_show.add_argument("--json", action="store_true", help="print JSON instead of YAML")
    p_show.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="override a field after the size, as `stallscope run --set` does (repeat)")
    p_imp = sub.add_parser(
        "import", help="translate a redis-benchmarks-specification suite file into a case",
        description="Translate a redis-benchmarks-specification test-suite file into a case. Keys keep the "
                    "suite's prefix with the number zero-padded to 12 digits (what redis-benchmark can spell); "
                    "literal keys in commands become the dataset's names; a memtier mix (--ratio S:G, several "
                    "--command) becomes matrix axis op, one variant per command. Every difference is a note. "
                    "Refused (exit status 2, with the reason): keys the dataset cannot hold, key pattern Z, "
                    "transactions. See docs/cases.md.")
    p_imp.add_argument("suite", help="a test-suite .yml file (memtier_benchmark arguments)")
    p_imp.add_argument("-o", "--output", help="write the case YAML here (default: print it)")
    args = ap.parse_args(argv)
    return run_command("stallscope cases", lambda: _cases(args))


def _cases(args: argparse.Namespace) -> int:
    if args.cmd == "list":
        for path in case_files().values():
            doc = load_doc(path)
            for name in variants_of(doc):
                print(name if args.names else f"{name:<44} {doc.data.get('description', '')[:70]}")
    elif args.cmd == "show":
        sets = parse_sets(args.set)
        case = load_case(args.name, args.size, sets, llc=args.llc_bytes)
        sizes = {s: load_case(args.name, s, sets, llc=args.llc_bytes) for s in sizes_of(args.name)}
        d = case.to_json()
        if args.json:
            d["sizes"] = {s: {"keys": c.dataset.keys, **c.working_set.to_json()} for s, c in sizes.items()}
            print(json.dumps(d, indent=2))
        else:
            d["workload"]["command"] = _abbreviate(d["workload"]["command"])
            print("\n".join(f"# {line}" for line in size_lines(sizes, args.size)))
            print(yaml.safe_dump(d, sort_keys=False, width=100), end="")
    else:
        res = import_suite(Path(args.suite))
        text = write_case_yaml(res)
        if args.output:
            Path(args.output).write_text(text)
            load_case(args.output, "small")  # what we wrote must load
            print(f"wrote {args.output} (case {res.case['name']})")
        else:
            print(text)
        for note in res.notes:
            print(f"note: {note}", file=sys.stderr)
    return 0


def size_lines(sizes: dict[str, Case], shown: str) -> list[str]:
    """Each size's dataset in keys and against the last-level cache, the one shown marked:
    'small     2.9M keys ≈ 260 MiB = 1× L3 of 260 MiB (at least 2× L3)'."""
    order = sorted(sizes, key=lambda s: (SIZES.index(s) if s in SIZES else len(SIZES), s))
    out = ["sizes (the dataset against the last-level cache; --size picks one, --llc another cache):"]
    for s in order:
        c = sizes[s]
        ws = c.working_set
        what = f"{ws.describe(c.dataset.keys)} ({ws.why()})" if c.dataset.kind != "none" else "no dataset"
        out.append(f"{'*' if s == shown else ' '} {s:<8} {what}")
    return out


def _abbreviate(words: list[str]) -> str:
    """One readable line: long values shortened, a repeated tail folded, e.g.
    'MSET (key:__rand_int__ <100 B value>) x50'. Use --json for the exact words."""
    short = [w if len(w) <= 40 else f"<{len(w)} B value>" for w in words]
    head, tail = short[:1], short[1:]
    for unit in range(1, 5):
        n = len(tail) // unit if unit <= len(tail) else 0
        if n > 1 and len(tail) % unit == 0 and tail == tail[:unit] * n:
            return " ".join(head + ["(" + " ".join(tail[:unit]) + f") x{n}"])
    return " ".join(short)
