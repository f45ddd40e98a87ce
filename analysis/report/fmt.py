"""Numbers with their units, as the reports print them (plain text: the Markdown and HTML
renderers escape it their own way). Standard library only: the PR comment job renders its
lead with these under `python3 -S` (collectors/pr/lead_md.py), so the level and the
detectable size are worded here, equal to analysis.intervals.level_text and
analysis.stats.detectable_text (tests/test_pr_lead.py holds them so)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from analysis.levels import level_text

if TYPE_CHECKING:
    from analysis.compare.results import ChangeOut

POWER = 0.80        # of a detectable size: analysis.power.POWER

THREAD_LABEL = {"main": "main thread", "all": "all threads", "io-threads": "io-threads"}


def _minus(s: str) -> str:
    return s.replace("-", "−")       # the typographic minus, as in the seed PR comments


def fmt_pct(x: float | None, digits: int = 1) -> str:
    """A fraction as a signed percentage: 0.123 -> +12.3%."""
    return "n/a" if x is None else _minus(f"{x * 100:+.{digits}f}%")


def fmt_signed(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None else _minus(f"{x:+.{digits}f}")


def fmt_delta(v: float | None, unit: str = "pp") -> str:
    """A change with its sign and unit: '−10.8 pp', or '+0.012 MPKI' for a ratio (three
    significant digits); the TMA funnel's sentences and its Markdown table."""
    if v is None:
        return "–"
    if unit != "pp":
        s = f"{abs(v):.3g}"
        return ("−" if v < 0 else "+" if v > 0 else "±") + s + f" {unit}"
    s = f"{abs(v):.1f}"
    return ("−" if v < 0 and s != "0.0" else "+" if v > 0 and s != "0.0" else "±") + s + " pp"


def fmt_ns(x: float | None) -> str:
    """CPU time per operation, 3 significant digits, in ns, µs or ms (a reader takes
    "44.0 µs" in at a glance, "44012 ns" not)."""
    if x is None:
        return "n/a"
    a, unit, scale = abs(x), "ns", 1.0
    if a >= 1e6:
        unit, scale = "ms", 1e6
    elif a >= 1e3:
        unit, scale = "µs", 1e3
    v = x / scale
    digits = 0 if abs(v) >= 100 or v == 0 else (1 if abs(v) >= 10 else 2)
    return _minus(f"{v:.{digits}f} {unit}")


def share(x: float) -> str:
    """A share of samples (%), two decimals below 1%."""
    return f"{x:.2f}%" if abs(x) < 1 else f"{x:.1f}%"


def value(x: float, unit: str) -> str:
    if unit == "ops/s":
        return f"{x:,.0f} ops/s"
    if unit == "ms":
        return f"{x:.3f} ms"
    if unit == "ns/op":
        return fmt_ns(x)
    return f"{x:.4g} {unit}"


def signed_value(x: float | None, unit: str) -> str:
    """A change in a metric's own unit: +1,234 ops/s, −25.0 ns."""
    if x is None:
        return "n/a"
    return ("+" if x > 0 else "−" if x < 0 else "±") + value(abs(x), unit)


def level(x: float) -> str:
    """A confidence level as a table header prints it: 95%, 96.7%, 99.79% (never rounded
    up: 99.79% is not "100%"; analysis/levels.py)."""
    return level_text(x)


RULE_WORDS = {"bh": "Benjamini-Hochberg", "holm": "Holm", "bonferroni": "Bonferroni"}


def level_said(conf: float, asked: float, *, look: int | None = None, looks: int = 0,
               family: tuple[int, float, str] | None = None, rank: tuple[int, str] | None = None
               ) -> str:
    """The headline's "95% CI", and, where its level `conf` is not the one `asked`, why,
    plainly ("95.8% CI" printed bare read as a typo): `look`, the look of `looks` a run that
    decides was read at; `family`, (rows, level, rule) of the throughput and latency rows
    judged together; `rank`, (n, "pairs" | "reps a side") of an exact rank interval, whose
    level comes in steps."""
    why, base = [], asked
    if look:
        why.append(f"look {look} of {looks}: its looks share 5%, so its intervals hold 95% together")
    if family is not None and family[0] > 1 and family[1] > base + 1e-9:
        why.append(f"adjusted for the {family[0]} throughput and latency rows judged together "
                   f"by {RULE_WORDS.get(family[2], family[2])}")
        base = family[1]
    if rank is not None and conf > base + 1e-9:
        why.append(f"the nearest level at or above {level(base)} that an exact rank interval of "
                   f"{rank[0]} {rank[1]} can reach")
    return f"{level(conf)} CI" + (f" ({'; '.join(why)})" if why else "")


def rank_of(method: str, n: int) -> tuple[int, str] | None:
    """(n, unit) of a change made by an exact rank interval (its method's words), else None."""
    if method.startswith("Wilcoxon"):
        return n, "pairs"
    return (n, "reps a side") if method.startswith("Mann-Whitney") else None


# verdicts that say what they could not see
QUIET = ("no change", "unstable", "negligible", "undersampled")


def detectable(size: float | None, unit: str) -> str:
    """The smallest change a run could have established, as text: "−3.9%/+4.1%" (unit
    "rel": the size is the upward ratio; the same distance on the log scale downward is
    1 - 1/(1 + size), a little smaller), "±1.1%" where both print alike, "0.80 pp"; sizes
    past +100% read "more than ±100%" (a ratio that far says nothing)."""
    if size is None:
        return ""
    if unit == "pp":
        return f"{size:.2f} pp"
    if size > 1:
        return "more than ±100%"
    up, down = f"{size * 100:.1f}", f"{(1 - 1 / (1 + size)) * 100:.1f}"
    return f"±{up}%" if up == down else f"−{down}%/+{up}%"


def line_text(line: float, unit: str) -> str:
    """A waterline as text: "5%" or "1.00 pp"."""
    return f"{line:.2f} pp" if unit == "pp" else f"{line * 100:g}%"


def could_see(d: str) -> str:
    """What a quiet verdict could have seen, worded one way everywhere: "could see ±2.4%
    (80% power)", the smallest change its run would have established (not a bound on the
    change); "could see only more than ±100% (80% power)" past +100%."""
    only = "only " if d.startswith("more than") else ""
    return f"could see {only}{d} ({POWER:.0%} power)"


def target_mark(target: float | None, missed: bool | None, kept: float | None = None) -> str:
    """How a row of a run that decides ends its verdict cell: "; missed its ±5% target" where
    it missed (analysis/compare/row_targets.py), "; covers ~89%" where the run had too few
    reps for its intervals to keep their level (analysis/sequential.short_coverage: the
    measurement says why; short, as a PR comment has 4 KB); "" for every other row."""
    text = f"; missed its ±{target:.0%} target" if missed and target is not None else ""
    return text + (f"; covers ~{kept:.0%}" if kept is not None else "")


def quiet_verdict(verdict: str, size: float | None, unit: str, real: bool = False,
                  line: float | None = None) -> str:
    """"no change, could see −3.9%/+4.1% (80% power)", "unstable, could see ... (80%
    power)", "negligible, could see 0.80 pp (80% power)", "too few samples, could see ±12.0%
    (80% power)" (undersampled: a spread counting explains): a verdict that saw nothing,
    with the smallest change its run would have established (could_see); a minor verdict
    as "regression, below the 5% line" (`line`: the line it stays under). `real` (results
    written before the minor verdicts): a "no change" whose interval excludes no change,
    said as real and under the waterline."""
    if verdict.startswith("minor "):
        word = verdict.split(" ", 1)[1]
        return (f"{word}, below the {line_text(line, unit)} line" if line is not None
                else f"{word}, below the line")
    d = detectable(size, unit)
    if verdict not in QUIET or not d:
        return verdict
    word = {"undersampled": "too few samples",     # its spread is counting's: the samples limit it
            "no change": ("no change (real, under the waterline)" if real else
                          "no change seen" if d.startswith("more than") else "no change")}
    return f"{word.get(verdict, verdict)}, {could_see(d)}"


def rel_ci(c: ChangeOut) -> str:
    if c.rel_ci_low is None or c.rel_ci_high is None:
        return "[n/a]"
    return f"[{fmt_signed(c.rel_ci_low * 100)}, {fmt_signed(c.rel_ci_high * 100)}]"


def pp_ci(c: ChangeOut, digits: int = 1) -> str:
    if c.ci_low is None or c.ci_high is None:
        return "[n/a]"
    return f"[{fmt_signed(c.ci_low, digits)}, {fmt_signed(c.ci_high, digits)}]"


def at_level(ci: str, c: ChangeOut) -> str:
    """An interval cell, with its own level where it is not the table's (ChangeOut.level):
    "[−1.9, +0.5] pp at 99.64%"."""
    lv = getattr(c, "level", None)
    return ci if lv is None else f"{ci} at {level(lv)}"


def change_cells(c: ChangeOut, unit: str, digits: int = 1) -> tuple[str, str]:
    """(change, interval) of a metric with relative waterlines: the log-scale ratio and its
    interval, or the absolute change in the metric's unit when a value <= 0 leaves no ratio."""
    if c.rel is not None:
        return fmt_pct(c.rel, digits), f"{rel_ci(c)}%"
    if c.ci_low is None or c.ci_high is None:
        return signed_value(c.delta, unit), "[n/a]"
    return (signed_value(c.delta, unit),
            f"[{signed_value(c.ci_low, unit)}, {signed_value(c.ci_high, unit)}]")


def summary_change(change: float | None, unit: str, lo: float | None, hi: float | None,
                   digits: int = 1) -> tuple[str, str]:
    """(change, interval) of a summary value; unit "rel", "pp" or the metric's."""
    if unit == "rel":
        ci = "[n/a]" if lo is None or hi is None else \
            f"[{fmt_signed(lo * 100)}, {fmt_signed(hi * 100)}]%"
        return fmt_pct(change, digits), ci
    if unit == "pp":
        ci = "[n/a]" if lo is None or hi is None else f"[{fmt_signed(lo)}, {fmt_signed(hi)}] pp"
        return f"{fmt_signed(change, digits)} pp", ci
    ci = "[n/a]" if lo is None or hi is None else \
        f"[{signed_value(lo, unit)}, {signed_value(hi, unit)}]"
    return signed_value(change, unit), ci


def short_test(name: str, limit: int = 48) -> str:
    """Long custom-command test names (MSET with 10 keys and 100-byte values) fit a table
    cell: repeated arguments are counted, long ones cut."""
    words = name.split()
    if len(name) <= limit:
        return name
    head = words[0] if words else name
    args = words[1:]
    if args and len(set(args[0::2])) == 1 and len(args) % 2 == 0:
        return f"{head} ({len(args) // 2} × {args[0]} {_cut(args[1], 12)})"
    return _cut(name, limit)


def samples(n: float | None) -> str:
    """Samples behind a share, summed over the profile reps: "(2,824 samples)"."""
    return "" if n is None else f" ({n:,.0f} sample{'' if n == 1 else 's'})"


def fn_verdict(row: Any, kind: str) -> Any:
    """The Judgement of a FunctionRow's flat or cumulative cost; rows of older results
    without one get the statistical verdict."""
    j = getattr(row, f"{kind}_verdict", None)
    if j is not None:
        return j
    from analysis.compare.results import Judgement
    ch = row.flat_change if kind == "flat" else row.cum_change
    return Judgement(ch.verdict, ch.reason)


def verdict_notes(rows: list[Any], kinds: tuple[str, ...]) -> list[str]:
    """"name (kind): why" for every verdict the table cannot explain in a word: the
    materiality verdicts and dilution (plain text)."""
    out = []
    for r in rows:
        for k in kinds:
            j = fn_verdict(r, k)
            why = j.note or (j.reason if j.verdict in ("new in candidate", "gone",
                                                       "too few samples") else "")
            if why:
                out.append(f"{r.name} ({k}): {why}")
    return out


def row_name(row: Any, limit: int = 48) -> str:
    """A throughput or latency row's name: the case's label, else the test string cut."""
    return getattr(row, "label", "") or short_test(row.test, limit)


def _cut(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def known(v: object) -> object:
    """None in the environment means the host did not expose it (no cpufreq in a VM, a
    tool not installed): say that rather than print 'None'."""
    return "n/a" if v is None else v


def patches(items: list[Any] | None) -> str:
    out = []
    for p in items or []:
        if isinstance(p, dict):
            out.append(f"{p.get('file')} (sha256 {str(p.get('sha256') or '')[:12]})")
        else:
            out.append(str(p))
    return ", ".join(out) or "none"


def truncated_text(t: Any) -> str:
    """Whole stacks, said even when fine (plain text; markdown escapes it, HTML autoescapes):
    the worst rep's share of samples whose stack stops before the thread's entry, each
    variant's median, and how perf unwound them and why (docs/statistics.md)."""
    per = "; ".join(f"{v} {side.median:.2f}%" for v, side in t.shares.items())
    how = t.unwind or f"call graph {t.callgraph or 'n/a'}"
    skipped = getattr(t, "skipped", None)
    return (f"Truncated stacks: at most {t.worst:.2f}% of a rep's samples ({per}, median per "
            f"rep; {how}): under the {t.threshold:g}% at "
            "which cumulative shares would need a caveat."
            + (" " + skipped_text(skipped) if skipped is not None and not skipped.exceeds else ""))


def skipped_text(s: Any) -> str:
    """Stacks that skipped the caller of code without frame pointers (results.json
    profile.truncated.skipped), said even when fine: the worst rep's share, each variant's
    median, the frames where it happened, the samples whose call site could not be read."""
    if not s.available:
        return ("Skipped callers: not counted for these profiles (perf's folding counts them: "
                "runs recorded before it did, and pprof profiles, have no count).")
    per = "; ".join(f"{v} {side.median:.2f}%" for v, side in s.shares.items())
    where = (", at " + ", ".join(f"{k.replace(' -> ', ' → ')} {w:.1f}%" for k, w in s.sites.items())
             if s.sites else "")
    unread = (f"; {s.unknown:.2f}% of samples at a call site that could not be read"
              if s.unknown >= 0.1 else "")
    return (f"Skipped callers: at most {s.worst:.2f}% of a rep's samples ({per}, median per "
            f"rep{where}{unread}).")
