"""10,000 mutations of the real recorded top-down outputs (Intel toplev/perf, AMD Zen
pipeline utilization, Arm perf and topdown-tool): every one parses to a result or raises
TmaParseError naming the source, none crashes with another exception, none hangs.

The mutations are the damage real files suffer: a line cut short or lost, a line twice,
lines swapped, a character dropped or changed, a digit changed, a locale's separators,
a box-drawing or tab character, garbage in a number. Seeded, so a failure reproduces
(the message gives the seed, the mutation and the file).
"""
from __future__ import annotations

import random
import signal

import pytest

from analysis.tma.formats import FORMATS, parse_output
from analysis.tma.model import TmaParseError, TmaResult
from tests.conftest import FIXTURES

MUTATIONS = 10_000
SEED = 17
# One parse of these small files takes milliseconds; seconds mean a loop that never ends.
HANG_S = 5

NOISE = list("0123456789.,%#|│┃━─()<>-+e ;:\t\"'") + ["\u202f", "nan", "inf", "<not counted>", "..."]


def _sources() -> list[tuple[str, str]]:
    tma = FIXTURES / "tma"
    files = [p for d in ("amd", "arm", "perf", "toplev") for p in sorted((tma / d).rglob("*"))
             if p.is_file() and p.suffix in (".txt", ".csv", ".json", ".jsonl", ".stdout", ".out")]
    return [(p.name, p.read_text(errors="replace")) for p in files]


def _mutate(rng: random.Random, text: str) -> tuple[str, str]:
    lines = text.splitlines(keepends=True) or [""]
    kind = rng.choice(("cut", "drop", "dup", "swap", "char", "digit", "insert", "locale", "truncate"))
    i = rng.randrange(len(lines))
    line = lines[i]
    if kind == "cut" and line:
        lines[i] = line[:rng.randrange(len(line))] + "\n"
    elif kind == "drop":
        del lines[i]
    elif kind == "dup":
        lines.insert(i, line)
    elif kind == "swap":
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "char" and line:
        k = rng.randrange(len(line))
        lines[i] = line[:k] + line[k + 1:]
    elif kind == "digit":
        digits = [k for k, c in enumerate(line) if c.isdigit()]
        if digits:
            k = rng.choice(digits)
            lines[i] = line[:k] + rng.choice("0123456789,.x-") + line[k + 1:]
    elif kind == "insert":
        k = rng.randrange(len(line) + 1)
        lines[i] = line[:k] + rng.choice(NOISE) + line[k:]
    elif kind == "locale":
        lines[i] = line.replace(".", ",") if rng.random() < 0.5 else line.replace(",", rng.choice(". \u202f"))
    elif kind == "truncate":
        return kind, "".join(lines)[:rng.randrange(len(text) + 1)]
    return kind, "".join(lines)


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang()


@pytest.mark.heavy
def test_ten_thousand_mutations_parse_or_error(fixtures_dir):
    sources = _sources()
    assert len(sources) >= 90
    assert {n for n, _ in sources} >= {"amd_epyc9254_rusttcp_epoll-et.txt",
                                       "arm_neoverse_v2_topdowntool_readme_cpu_4.txt",
                                       "arm_neoverse_v2_topdowntool_readme_cpu_7.txt"}
    rng = random.Random(SEED)
    outcomes = {"parsed": 0, "error": 0}
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for n in range(MUTATIONS):
            name, text = rng.choice(sources)
            kind, bad = _mutate(rng, text)
            # Mostly auto-detection; sometimes a forced format reads what is not its own.
            fmt = rng.choice(FORMATS) if rng.random() < 0.1 else None
            signal.alarm(HANG_S)
            try:
                res = parse_output(bad, "", 0, source=f"m{n}", fmt=fmt)
                assert isinstance(res, TmaResult)
                for v in res.values:
                    assert v.value is None or v.value == v.value   # no NaN reaches a value
                res.tree()
                outcomes["parsed"] += 1
            except TmaParseError as e:
                assert str(e).startswith(f"m{n}"), (n, name, kind, str(e))
                outcomes["error"] += 1
            except _Hang:
                pytest.fail(f"mutation {n} (seed {SEED}, {kind} of {name}, format {fmt}) ran over {HANG_S} s")
            except Exception as e:   # noqa: BLE001 - the point: any other exception is a bug
                pytest.fail(f"mutation {n} (seed {SEED}, {kind} of {name}, format {fmt}) raised "
                            f"{type(e).__name__}: {e}")
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, old)
    # Both outcomes happen: the mutations are not all harmless, nor all fatal.
    assert outcomes["parsed"] > 1000 and outcomes["error"] > 1000, outcomes
