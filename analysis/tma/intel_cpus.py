"""Which TMA model toplev runs on an Intel CPU: pmu-tools' own table, as data.

intel_cpus.tsv (beside this module) is toplev's `known_cpus`, written by
analysis/tma/catalog_build_intel.py from the pmu-tools release requirements.txt pins: one
row per toplev CPU key with the family-6 model numbers (`143,207`: Sapphire and Emerald
Rapids) or model/stepping pairs (`85/4`: Skylake-SP; `85/5`..`85/10`: Cascade Lake) it
runs that key's model on. toplev (tl_cpu.py) reads only family 6, takes the first row that
holds the model or the model/stepping, and runs `sprmax` instead of `spr` when the model
name says "Max". The key names the catalogue (catalogs/<key>.tsv) when there is one.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from analysis.errors import UserError

TABLE = Path(__file__).with_name("intel_cpus.tsv")
HEADER = ("key", "models")
FAMILY = 6        # the only Intel family toplev's table covers


class IntelCpuTableError(UserError):
    """intel_cpus.tsv cannot be read; the message names file:line."""


@lru_cache(maxsize=None)
def rows(path: Path = TABLE) -> tuple[tuple[str, frozenset[int], frozenset[tuple[int, int]]], ...]:
    """(key, models, model/stepping pairs) in toplev's order."""
    out, header = [], False
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if not header:
            if tuple(cols) != HEADER:
                raise IntelCpuTableError(f"{path}:{lineno}: expected the header 'key<TAB>models'")
            header = True
            continue
        if len(cols) != 2 or not cols[0]:
            raise IntelCpuTableError(f"{path}:{lineno}: expected 'key<TAB>models', got {line!r}")
        models, steppings = set(), set()
        for item in cols[1].split(","):
            try:
                if "/" in item:
                    m, s = item.split("/")
                    steppings.add((int(m), int(s)))
                else:
                    models.add(int(item))
            except ValueError:
                raise IntelCpuTableError(f"{path}:{lineno}: {item!r} is no model number or "
                                         "model/stepping") from None
        out.append((cols[0], frozenset(models), frozenset(steppings)))
    return tuple(out)


def toplev_key(family: int | None, model: int | None, stepping: int | None = None,
               model_name: str | None = None) -> str | None:
    """The CPU key toplev gives this CPU (`spr`, `icx`, `clx` ...), None when it has none
    (another family, a model toplev does not list)."""
    if family != FAMILY or model is None:
        return None
    for key, models, steppings in rows():
        if model in models or (model, stepping) in steppings:
            return "sprmax" if key == "spr" and "Max" in (model_name or "") else key
    return None
