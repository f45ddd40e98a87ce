"""The command line's side of the options: an option declared as data (analysis/inputs/
option_specs.py) made into an argparse argument, and the arguments several commands share.
The library declares and checks options; only this package knows argparse."""
from __future__ import annotations

import argparse
from typing import Any, Callable

from analysis.inputs.option_specs import Option
from collectors.collector import RunFlags


def argparse_type(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """A parser's ValueError as argparse's error (its message, not 'invalid value')."""
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    convert.__name__ = parse.__name__
    return convert


def add_option(option: Option, parser: Any, command: str, **kw: Any) -> argparse.Action:
    """The option's argument on `command`'s parser (kw: choices, a default of its own)."""
    if command not in option.commands:
        raise ValueError(f"{option.flag} is not an option of {command} (declared: {option.commands})")
    args: dict[str, Any] = {"dest": option.name, "default": option.default, "metavar": option.metavar,
                            "help": option.helps.get(command, option.help)}
    if option.choices:
        args["choices"] = option.choices          # argparse says which words it takes
    elif option.parse is not str:
        args["type"] = argparse_type(option.parse) if option.parse not in (int, float) else option.parse
    args.update(kw)
    return parser.add_argument(option.flag, **args)


def add_run_flags(parser: argparse.ArgumentParser, flags: RunFlags, defaults: bool = True) -> None:
    """A run plugin's flags (collectors/collector.py RunFlag) as one group of `stallscope run`
    (defaults=False: none has a default, argparse's SUPPRESS)."""
    g = parser.add_argument_group(flags.title, flags.description)
    for f in flags.flags:
        args: dict[str, Any] = {"help": f.help,
                                "default": f.default_value() if defaults else argparse.SUPPRESS}
        if f.action:
            args["action"] = f.action
        if f.parse is not None:
            args["type"] = f.parse
        if f.choices is not None:
            args["choices"] = f.choices
        if f.metavar is not None:
            args["metavar"] = f.metavar
        g.add_argument(f.flag, **args)


def add_fanout_arguments(p: argparse.ArgumentParser, what: str, point_id: str, entry: str) -> None:
    """--emit-matrix, --point and --merge, worded for `what` (sweep or experiment): one set of
    flags for both commands. `point_id` is how a point is named, `entry` a matrix row."""
    p.add_argument("--emit-matrix", action="store_true",
                   help="print the points as a GitHub Actions matrix (JSON on stdout: "
                        f'{{"include": [{entry}]}}) and exit; nothing is built or run')
    p.add_argument("--point", metavar=point_id,
                   help="run only this point (as --emit-matrix names it; both variants on this "
                        f"machine) into its own {what} directory, for --merge; renders no report")
    p.add_argument("--merge", nargs="+", metavar="DIR",
                   help=f"assemble the {what} from point directories run anywhere (--point), or "
                        "directories holding them, and report it; refuses points of another plan, "
                        "flags points from different host models, lists missing points as not run")
