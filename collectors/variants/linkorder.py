"""Code layout as a variable: the server's objects linked in an order shuffled by a seed.

Link order alone moves where every function lands, hence which hot loops straddle a cache
line or share an I-TLB page with what; Mytkowicz et al. (ASPLOS'09) measured several
percent from it. A build with `+layout=SEED` links the same objects in another order, so a
run over a few seeds (`stallscope run --layouts N`) shows whether a change outlives that.

How: src/Makefile gets three lines just above the server's link rule, which re-order the
rule's object variable (REDIS_SERVER_OBJ in Redis, ENGINE_SERVER_OBJ in Valkey) with make's
own $(filter): the objects the Makefile lists, in the seed's order, then any it adds under
conditions this parser does not follow, in their own order. Make evaluates them after every
`+=` above the rule, so the rule's prerequisites ($^, which Redis links) and the variable
(which Valkey links) both carry the new order; the compile commands are unchanged, so
ccache serves every object and a layout costs a relink.
"""
from __future__ import annotations

import random
import re
from pathlib import Path

from analysis.errors import UserError

# `$(REDIS_SERVER_NAME): $(REDIS_SERVER_OBJ) ...` or `$(SERVER_NAME): $(ENGINE_SERVER_OBJ) ...`
_RULE = re.compile(r"^\$\((\w*SERVER_NAME)\)\s*:\s*\$\((\w+_OBJ)\)", re.M)
_ASSIGN = re.compile(r"^\s*(\w+)\s*(\+=|:=|\?=|=)\s*(.*)$")
_REF = re.compile(r"^\$\((\w+)\)$")
MARK = "# stallscope +layout"


class LayoutError(UserError):
    """A source whose src/Makefile has no server link rule stallscope can re-order (+layout=)."""


def _logical_lines(text: str) -> list[str]:
    """The Makefile's lines with backslash continuations joined."""
    return re.sub(r"\\\n", " ", text).splitlines()


def _assignments(text: str) -> dict[str, list[str]]:
    """Every variable's words as assigned anywhere in the file (`=`, `:=` and `+=` alike,
    conditions not followed): enough to learn which objects a variable can hold."""
    out: dict[str, list[str]] = {}
    for line in _logical_lines(text):
        m = _ASSIGN.match(line)
        if m and not line.startswith("\t"):
            words = m.group(3).split("#", 1)[0].split()
            out.setdefault(m.group(1), []).extend(words)
    return out


def link_objects(makefile: str) -> tuple[str, list[str]]:
    """(the variable the server links, its objects in the Makefile's order). BuildError
    when the Makefile has no server link rule of the known shape."""
    rule = _RULE.search(makefile)
    if rule is None:
        raise LayoutError("+layout: src/Makefile has no `$(...SERVER_NAME): $(..._OBJ)` link rule "
                         "(Redis and Valkey have one); this source cannot be re-linked in "
                         "another order")
    var = rule.group(2)
    found = _assignments(makefile)
    objects: list[str] = []

    def add(words: list[str], depth: int) -> None:
        for w in words:
            ref = _REF.match(w)
            if ref and depth < 3:
                add(found.get(ref.group(1), []), depth + 1)
            elif w.endswith(".o") and "$" not in w and w not in objects:
                objects.append(w)
    add(found.get(var, []), 0)
    if len(objects) < 2:
        raise LayoutError(f"+layout: src/Makefile's {var} lists {len(objects)} object(s); "
                         f"nothing to re-order")
    return var, objects


def shuffled(objects: list[str], seed: int) -> list[str]:
    """The objects in the seed's order: the same seed, the same order, on any machine
    (random.Random's shuffle of a seeded integer state is stable across Python versions)."""
    out = list(objects)
    random.Random(seed).shuffle(out)
    return out


def layout_lines(var: str, order: list[str], seed: int) -> str:
    """The Makefile lines that re-order `var` (inserted above the link rule)."""
    return (f"{MARK}={seed}: the server's objects linked in a shuffled order (docs/variants.md)\n"
            f"STALLSCOPE_LAYOUT_ORDER := {' '.join(order)}\n"
            f"{var} := $(filter $({var}),$(STALLSCOPE_LAYOUT_ORDER)) "
            f"$(filter-out $(STALLSCOPE_LAYOUT_ORDER),$({var}))\n")


def apply_layout(tree: Path, seed: int) -> dict:
    """Re-order the link of the server in `tree` (a source tree, src/Makefile edited in
    place); returns the record kept in build.json: seed, variable and the order."""
    mk = tree / "src" / "Makefile"
    try:
        text = mk.read_text()
    except OSError as e:
        raise LayoutError(f"+layout: cannot read {mk}: {e.strerror}") from None
    var, objects = link_objects(text)
    order = shuffled(objects, seed)
    at = _RULE.search(text).start()          # link_objects found it
    mk.write_text(text[:at] + layout_lines(var, order, seed) + text[at:])
    return {"seed": seed, "variable": var, "objects": len(order), "order": order}
