"""Reading a saved TMA output: the registry of input formats.

Each format is one module with one `Format` (name, detect, parse, cpu_model); this
module detects which one wrote a text, picks the catalogue of the CPU model the text
names (analysis.tma.catalog), parses, and applies the checks every format shares:
no-PMU evidence, implausible values, names outside the catalogue.
"""
from __future__ import annotations

import re
from pathlib import Path

from analysis.tma.catalog import Catalog, CatalogError, for_cpu, guess, legacy_current, load, models
from analysis.tma.derive import derive_parents
from analysis.tma.formats.format import Format
from analysis.tma.formats.nopmu import check as check_no_pmu
from analysis.tma.formats.perf_csv import FORMAT as PERF_CSV
from analysis.tma.formats.perf_json import FORMAT as PERF_JSON
from analysis.tma.formats.perf_std import FORMAT as PERF_STD
from analysis.tma.formats.perf_topdown import FORMAT as PERF_TOPDOWN
from analysis.tma.formats.toplev_csv import FORMAT as TOPLEV_CSV
from analysis.tma.formats.toplev_human import FORMAT as TOPLEV_HUMAN
from analysis.tma.formats.topdown_tool_csv import FORMAT as TOPDOWN_TOOL_CSV
from analysis.tma.formats.topdown_tool_table import FORMAT as TOPDOWN_TOOL_TABLE
from analysis.tma.formats.topdown_tool_text import FORMAT as TOPDOWN_TOOL_TEXT
from analysis.tma.model import TmaParseError, TmaResult, check_plausible, check_stale

# Detection order, most specific first: any JSON object line is perf -j; a toplev CSV
# row (a "% Domain" unit column) is told apart before perf's CSV rows, which would match
# on their commas alone; perf --topdown's column header ("%  tma_x %  tma_y" with no
# value before the "%") before perf's standard output, whose banner it shares;
# perf's standard output ("Performance counter stats", "% tma_x")
# before toplev's human table, whose test (a line "Node  % Domain  value") is the loosest.
# Arm topdown-tool: its box-drawing tables and its CSV header are unlike anything else, so
# they come first; its older text output (dot-leader lines, "Stage 1 (Topdown metrics)")
# refuses perf/toplev banners and comes before perf's standard output, whose loose test
# ("perf stat" anywhere) a topdown-tool message could meet.
DETECTION_ORDER: tuple[Format, ...] = (TOPDOWN_TOOL_TABLE, TOPDOWN_TOOL_CSV, PERF_JSON,
                                      TOPLEV_CSV, PERF_CSV, PERF_TOPDOWN, TOPDOWN_TOOL_TEXT,
                                      PERF_STD, TOPLEV_HUMAN)
REGISTRY: dict[str, Format] = {f.name: f for f in DETECTION_ORDER}
# The names fmt= / --format accept, toplev first (the order --help shows).
FORMATS = tuple(f.name for f in (TOPLEV_HUMAN, TOPLEV_CSV, PERF_STD, PERF_CSV, PERF_JSON,
                                 PERF_TOPDOWN, TOPDOWN_TOOL_TEXT, TOPDOWN_TOOL_TABLE,
                                 TOPDOWN_TOOL_CSV))

# `perf list` names the tma_* metrics too, but holds no measurement.
_PERF_LIST = re.compile(r"\[(?:Software|Tool|Kernel PMU|Hardware) event\]|List of pre-defined events")
# Intel's, AMD's and Arm's top-down words (perf's names, topdown-tool's titles).
_TMA_WORDS = re.compile(r"tma_|_Bound|Retiring|Bad_Speculation|frontend_bound|backend_bound|"
                        r"retiring|bad_speculation|Frontend Bound|Backend Bound|Stalled Cycles|"
                        r"stalled_cycles|MPKI|_mpki")
_NOT_COUNTED = re.compile(r"<not counted>")
_NMI_HINT = re.compile(r"Try disabling the NMI watchdog")


def detect_format(text: str, source: str = "<stdin>") -> str:
    """Which tool/format produced `text` (one of FORMATS). Raises TmaParseError."""
    lines = text.splitlines()
    if any(_PERF_LIST.search(l) for l in lines[:200]):
        raise TmaParseError(source, None, "this is `perf list` output, not `perf stat`: it "
                            "lists metric names but holds no measurement")
    for fmt in DETECTION_ORDER:
        if fmt.detect(lines):
            return fmt.name
    raise TmaParseError(source, None, "unrecognised format: expected toplev output (human or "
                        "-x, CSV), perf stat output with top-down metrics (Intel tma_*, AMD "
                        "PipelineL1/L2, Arm TopdownL1; standard, -x, -j or --topdown) or Arm "
                        "topdown-tool output; to force one pass --format NAME (fmt=NAME), "
                        f"NAME one of {', '.join(FORMATS)}")


def _catalog(fmt: Format, text: str, chosen: str | Catalog | None, source: str
             ) -> tuple[Catalog, str | None]:
    """The catalogue asked for, else the one of the CPU model the output names, else the
    one whose names the output prints (analysis.tma.catalog.guess), else the default;
    with a note when it was guessed."""
    if isinstance(chosen, Catalog):
        return chosen, None
    try:
        if chosen:
            return load(chosen), None
        tag = fmt.cpu_model(text.splitlines())
        if tag and any(k.strip() in models() for k in tag.lower().split("/")):
            return for_cpu(tag), None
        return guess(text)
    except CatalogError as e:
        raise TmaParseError(source, None, str(e)) from None


def _place_legacy(result: TmaResult) -> None:
    """Older names (toplev 3.x Retiring.Base ...) onto the current tree, said once."""
    cat, moved = result.catalog, {}
    for v in result.values:
        if v.known or not v.in_tree:
            continue
        new = legacy_current(v.name)
        node = cat.get(new) if new else None
        if node is None:
            continue
        moved[v.name] = new
        v.name, v.known, v.level = new, True, node.level
        v.domain = v.domain or node.domain
    if moved:
        result.warnings.append("older TMA names placed in the current tree: " + ", ".join(
            f"{old} → {new}" for old, new in sorted(moved.items())))


def _check(result: TmaResult) -> TmaResult:
    """What every format shares: older names placed, plausibility flags, unknown-name
    warnings and each interval value's start."""
    _place_legacy(result)
    for v in result.values:
        if (stale := check_stale(v)) and not v.implausible:
            v.implausible, v.value = stale, None
    derive_parents(result)
    for v in result.values:
        v.implausible = v.implausible or check_plausible(v)
        if v.implausible and not v.derived:   # a derived value's cause is its child's warning
            result.warnings.append(f"line {v.line}: {v.implausible}")
    unknown = sorted({v.raw_name for v in result.values if not v.known})
    if unknown:
        result.warnings.append(
            "names not in the TMA catalogue (kept, not placed in the tree): " + ", ".join(unknown))
    result.set_starts()
    return result


def parse_output(stdout: str, stderr: str = "", rc: int | None = 0, source: str = "<stdin>",
                 fmt: str | None = None, catalog: str | Catalog | None = None) -> TmaResult:
    """Parse what a collector captured from toplev or perf stat.

    perf stat writes its counters to stderr unless -o is given, so both streams are read;
    a non-zero rc or no-PMU evidence raises NoPmuError / TmaParseError with the reason.
    catalog: a CPU model ("spr") or Catalog to place the names in; default: the model the
    output names (toplev's version line), else analysis.tma.catalog.DEFAULT_MODEL.
    """
    text = stdout if stdout.strip() else stderr
    if not stdout.strip() and not stderr.strip():
        raise TmaParseError(source, None, f"empty output (exit code {rc}): the tool printed nothing")
    if not _TMA_WORDS.search(text):
        check_no_pmu(stdout, stderr, rc, source)
        if rc not in (0, None):
            last = next((l.strip() for l in reversed((stderr or stdout).splitlines()) if l.strip()), "")
            raise TmaParseError(source, None, f"the tool failed (exit code {rc}): {last}")
    if fmt is None:
        fmt = detect_format(text, source)
    if fmt not in REGISTRY:
        raise TmaParseError(source, None, f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    parser = REGISTRY[fmt]
    cat, cat_note = _catalog(parser, text, catalog, source)
    result = parser.parse(text, source, cat)
    result.catalog_note = cat_note
    if not result.values:
        # perf printed counters but no TMA metric: the no-PMU fallback, or a wrong -M.
        check_no_pmu(stdout, stderr, rc, source)
        both = stdout + "\n" + stderr
        if _NOT_COUNTED.search(both):
            hint = (" perf's hint: the NMI watchdog holds a counter; run `echo 0 > "
                    "/proc/sys/kernel/nmi_watchdog` (as root) for the measurement and set it "
                    "back to 1 afterwards" if _NMI_HINT.search(both) else "")
            raise TmaParseError(source, None, "perf counted none of the events of any metric "
                                "group ('<not counted>' for every event), so no top-down value "
                                "exists: the process was idle in the window, or the groups "
                                "could not be scheduled." + hint)
        raise TmaParseError(source, None, "no top-down node found in this output (expected "
                            "toplev nodes, perf tma_* metrics (`perf stat -M TopdownL1`), AMD "
                            "pipeline utilization (`-M PipelineL1,PipelineL2`) or Arm top-down "
                            "(`-M TopdownL1`, topdown-tool)")
    if not any(v.in_tree for v in result.values):
        raise TmaParseError(source, None, "no name in this output is a node of the "
                            f"{result.catalog.model} top-down tree (found: "
                            f"{', '.join(sorted({v.raw_name for v in result.values})[:8])}); the "
                            "output is cut short, or pass --catalog for the CPU model it came from")
    if rc not in (0, None):
        result.warnings.append(f"the tool exited with code {rc}")
    return _check(result)


def _read_rc(path: Path) -> int:
    text = path.read_text(errors="replace").strip()
    m = re.fullmatch(r"(?:rc\s*=\s*)?(-?\d+)", text)
    if not m:
        raise TmaParseError(str(path), 1, f"exit-code file should hold 'rc=N' or 'N', found {text[:40]!r}")
    return int(m.group(1))


def parse_file(path: str | Path, fmt: str | None = None,
               catalog: str | Catalog | None = None) -> TmaResult:
    """Parse one saved output. For X.stdout / X.out / tma.csv, sibling X.stderr and X.rc
    (as collectors write them) are read too."""
    p = Path(path)
    if not p.is_file():
        raise TmaParseError(str(p), None, "no such file")
    stem = p.with_suffix("")
    if p.suffix in (".rc", ".stderr"):
        for ext in (".stdout", ".out"):
            if stem.with_suffix(ext).is_file():
                return parse_file(stem.with_suffix(ext), fmt, catalog)
        if p.suffix == ".rc":
            raise TmaParseError(str(p), None, "an exit-code file alone holds no measurement; "
                                "pass the .stdout/.stderr file beside it")
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise TmaParseError(str(p), None, f"cannot read: {e.strerror}") from None
    rc = _read_rc(stem.with_suffix(".rc")) if stem.with_suffix(".rc").is_file() else 0
    if p.suffix == ".stderr":
        return parse_output("", text, rc, str(p), fmt, catalog)
    err = stem.with_suffix(".stderr")
    stderr = err.read_text(errors="replace") if err.is_file() else ""
    return parse_output(text, stderr, rc, str(p), fmt, catalog)
