"""Reading a saved TMA output: detect which tool and format wrote it, parse it with the
matching parser, and apply the checks every format shares (analysis.tma.model.finish).
"""
from __future__ import annotations

import re
from pathlib import Path

from analysis.tma import perf_stat as tma_perf
from analysis.tma import toplev as tma_toplev
from analysis.tma.model import FORMATS, TmaParseError, TmaResult, finish


def detect_format(text: str, source: str = "<stdin>") -> str:
    """Which tool/format produced `text` (one of FORMATS). Raises TmaParseError."""
    lines = text.splitlines()
    if tma_perf.looks_like_perf_list(lines):
        raise TmaParseError(source, None, "this is `perf list` output, not `perf stat`: it "
                            "lists metric names but holds no measurement")
    body = [l for l in lines if l.strip() and not l.lstrip().startswith("#")]
    if any(l.lstrip().startswith("{") for l in body):
        return "perf-json"
    if tma_toplev.looks_like_csv(lines):
        return "toplev-csv"
    if tma_perf.looks_like_csv(body):
        return "perf-csv"
    if tma_perf.looks_like_std(lines):
        return "perf"
    if tma_toplev.looks_like_human(lines):
        return "toplev"
    raise TmaParseError(source, None, "unrecognised format: expected toplev output (human or "
                        "-x, CSV) or perf stat output with tma_* metrics (standard, -x, or -j); "
                        "pass fmt= / --format to force one")


def parse_output(stdout: str, stderr: str = "", rc: int = 0, source: str = "<stdin>",
                 fmt: str | None = None) -> TmaResult:
    """Parse what a collector captured from toplev or perf stat.

    perf stat writes its counters to stderr unless -o is given, so both streams are read;
    a non-zero rc or no-PMU evidence raises NoPmuError / TmaParseError with the reason.
    """
    text = stdout if stdout.strip() else stderr
    if not stdout.strip() and not stderr.strip():
        raise TmaParseError(source, None, f"empty output (exit code {rc}): the tool printed nothing")
    if not re.search(r"tma_|_Bound|Retiring|Bad_Speculation", text):
        tma_perf.check_no_pmu(stdout, stderr, rc, source)
        if rc not in (0, None):
            last = next((l.strip() for l in reversed((stderr or stdout).splitlines()) if l.strip()), "")
            raise TmaParseError(source, None, f"the tool failed (exit code {rc}): {last}")
    if fmt is None:
        fmt = detect_format(text, source)
    if fmt not in FORMATS:
        raise TmaParseError(source, None, f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "toplev":
        result = tma_toplev.parse_human(text, source)
    elif fmt == "toplev-csv":
        result = tma_toplev.parse_csv(text, source)
    else:
        result = tma_perf.parse(text, source, fmt)
    if not result.values:
        # perf printed counters but no TMA metric: the no-PMU fallback, or a wrong -M.
        tma_perf.check_no_pmu(stdout, stderr, rc, source)
        raise TmaParseError(source, None, "no TMA node found in this output (expected toplev "
                            "nodes or perf tma_* metrics, e.g. `perf stat -M TopdownL1`)")
    if rc not in (0, None):
        result.warnings.append(f"the tool exited with code {rc}")
    return finish(result)


def _read_rc(path: Path) -> int:
    text = path.read_text(errors="replace").strip()
    m = re.fullmatch(r"(?:rc\s*=\s*)?(-?\d+)", text)
    if not m:
        raise TmaParseError(str(path), 1, f"exit-code file should hold 'rc=N' or 'N', found {text[:40]!r}")
    return int(m.group(1))


def parse_file(path: str | Path, fmt: str | None = None) -> TmaResult:
    """Parse one saved output. For X.stdout / X.out / tma.csv, sibling X.stderr and X.rc
    (as collectors write them) are read too."""
    p = Path(path)
    if not p.is_file():
        raise TmaParseError(str(p), None, "no such file")
    if p.suffix in (".rc", ".stderr"):
        stem = p.with_suffix("")
        for ext in (".stdout", ".out"):
            if stem.with_suffix(ext).is_file():
                return parse_file(stem.with_suffix(ext), fmt)
        if p.suffix == ".rc":
            raise TmaParseError(str(p), None, "an exit-code file alone holds no measurement; "
                                "pass the .stdout/.stderr file beside it")
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise TmaParseError(str(p), None, f"cannot read: {e.strerror}") from None
    stem = p.with_suffix("")
    stderr = ""
    rc = 0
    if p.suffix != ".stderr" and stem.with_suffix(".stderr").is_file():
        stderr = stem.with_suffix(".stderr").read_text(errors="replace")
    if stem.with_suffix(".rc").is_file():
        rc = _read_rc(stem.with_suffix(".rc"))
    if p.suffix == ".stderr":
        return parse_output("", text, rc, str(p), fmt)
    return parse_output(text, stderr, rc, str(p), fmt)
