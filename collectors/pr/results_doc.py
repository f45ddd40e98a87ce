"""results.json as the PR comment job reads it: a document the pull request's code wrote, so
every value is checked when it is read and every string is capped. `Doc` wraps one JSON
object; `num`, `text`, `flag`, `obj`, `objs` return the value of a key or raise
`MalformedResults`, whose message names the file, the key's path in the document
(`profile.focus[2].flat_change.ci_low`) and what was found there. A missing key reads as
absent (None, "", False, []), as `Results.from_json` reads an older document's missing
fields; a value of the wrong kind is an error, never a guess. Strings come out on one line,
their invisible characters shown, at most `NAME_CAP` characters (`clip`; notes `NOTE_CAP`);
lists at most `MAX_ITEMS` entries. `Change`, `Judgement` and `fn_verdict` are the few value
types of analysis/compare/results.py the lead needs, read the same way.
Standard library only (collectors/pr/lead_md.py renders the comment's lead from it)."""
from __future__ import annotations

import math
from typing import Any, NamedTuple, NoReturn

from analysis.errors import UserError
from collectors.pr.untrusted import NAME_CAP, clip

NOTE_CAP = 300          # characters of a sentence from results.json (a reason, a note)
LONG_CAP = 4096         # of a load generator's test name, before analysis.report.fmt.short_test shortens it
MAX_ITEMS = 20_000      # entries read of one list (a results.json of every top mover has a few thousand)


class MalformedResults(UserError):
    """A results.json that is not one (docs/results-json.md); exit status 2."""


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number" if math.isfinite(v) else "a number that is not finite"
    return {str: "a string", list: "a list", dict: "an object"}.get(type(v), type(v).__name__)


class Doc:
    """One JSON object of results.json, `where` its path in the document."""
    __slots__ = ("value", "where", "file")

    def __init__(self, value: dict, where: str, file: str):
        self.value, self.where, self.file = value, where, file

    def _at(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def fail(self, key: str, want: str, got: Any = None) -> NoReturn:
        raise MalformedResults(f"{self.file}: {self._at(key)}: {want}, not {_kind(got)} (docs/results-json.md)")

    def get(self, key: str) -> Any:
        return self.value.get(key)

    def num(self, key: str) -> float | None:
        v = self.value.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            self.fail(key, "a number", v)
        return v

    def count(self, key: str) -> int:
        v = self.num(key)
        if v is None:
            return 0
        if v != int(v) or v < 0:
            self.fail(key, "a count (a whole number, 0 or more)", v)
        return int(v)

    def text(self, key: str, cap: int = NAME_CAP, default: str = "") -> str:
        v = self.value.get(key)
        if v is None:
            return default
        if not isinstance(v, str):
            self.fail(key, "a string", v)
        return clip(v, cap)

    def texts(self, key: str, cap: int = NAME_CAP) -> list[str]:
        v = self._list(key)
        for i, x in enumerate(v):
            if not isinstance(x, str):
                self.fail(f"{key}[{i}]", "a string", x)
        return [clip(x, cap) for x in v]

    def flag(self, key: str) -> bool:
        v = self.value.get(key)
        if v is None:
            return False
        if not isinstance(v, bool):
            self.fail(key, "true or false", v)
        return v

    def obj(self, key: str) -> "Doc | None":
        v = self.value.get(key)
        if v is None:
            return None
        if not isinstance(v, dict):
            self.fail(key, "an object", v)
        return Doc(v, self._at(key), self.file)

    def _list(self, key: str) -> list:
        v = self.value.get(key)
        if v is None:
            return []
        if not isinstance(v, list):
            self.fail(key, "a list", v)
        return v[:MAX_ITEMS]

    def objs(self, key: str) -> "list[Doc]":
        out = []
        for i, v in enumerate(self._list(key)):
            if not isinstance(v, dict):
                self.fail(f"{key}[{i}]", "an object", v)
            out.append(Doc(v, f"{self._at(key)}[{i}]", self.file))
        return out

    def pair(self, key: str) -> tuple[float, float] | None:
        """A [low, high] interval (the funnel's `ci_pp`), or None."""
        v = self.value.get(key)
        if v is None:
            return None
        if not (isinstance(v, list) and len(v) == 2):
            self.fail(key, "a list of two numbers", v)
        d = Doc({"low": v[0], "high": v[1]}, self._at(key), self.file)
        low, high = d.num("low"), d.num("high")
        return None if low is None or high is None else (low, high)


def document(value: Any, file: str) -> Doc:
    """The top of a results.json: an object naming its two variants."""
    if not isinstance(value, dict):
        raise MalformedResults(f"{file}: not a results.json object but {_kind(value)} (docs/results-json.md)")
    doc = Doc(value, "", file)
    for key in ("base", "cand"):
        if not doc.text(key):
            doc.fail(key, "the name of a variant", doc.get(key))
    return doc


class Change(NamedTuple):
    """ChangeOut (analysis/compare/values.py): the fields the lead prints."""
    delta: float | None
    rel: float | None
    ci_low: float | None
    ci_high: float | None
    rel_ci_low: float | None
    rel_ci_high: float | None
    confidence: float | None
    verdict: str
    unit: str
    detectable: float | None
    line: float | None
    level: float | None

    @property
    def clears_zero(self) -> bool:
        lo, hi = ((self.rel_ci_low, self.rel_ci_high) if self.rel is not None and self.unit != "pp"
                  else (self.ci_low, self.ci_high))
        return lo is not None and hi is not None and (lo > 0 or hi < 0)


def change(d: Doc | None) -> Change | None:
    if d is None:
        return None
    nums = [d.num(k) for k in ("delta", "rel", "ci_low", "ci_high", "rel_ci_low", "rel_ci_high", "confidence")]
    return Change(*nums, d.text("verdict"), d.text("unit"), d.num("detectable"), d.num("line"), d.num("level"))


class Judgement(NamedTuple):
    """A function's flat or cumulative verdict (analysis/compare/results.py Judgement)."""
    verdict: str
    detectable: float | None = None
    detectable_unit: str = ""
    line: float | None = None
    target: float | None = None
    target_missed: bool = False
    level_kept: float | None = None


def fn_verdict(row: Doc, kind: str) -> Judgement:
    """A function row's `flat_verdict` or `cum_verdict`; the statistical verdict of its
    change for rows written before them (analysis.report.fmt.fn_verdict)."""
    j = row.obj(f"{kind}_verdict")
    if j is not None:
        return Judgement(j.text("verdict"), j.num("detectable"), j.text("detectable_unit"), j.num("line"),
                         j.num("target"), j.flag("target_missed"), j.num("level_kept"))
    c = row.obj(f"{kind}_change")
    return Judgement(c.text("verdict") if c is not None else "")


def median(d: Doc | None) -> float | None:
    """A side's median (Side, FunnelSide), None when the side or its median is absent."""
    return None if d is None else d.num("median")


class Run(NamedTuple):
    """The parts of one results.json the lead reads."""
    base: str
    cand: str
    confidence: float
    summary: list[Doc]
    throughput: list[Doc]
    paired: list[Doc]
    latency: list[Doc]
    fdr: list[Doc]
    profile: Doc
    tma: Doc
    stalls: Doc
    measurement: Doc | None = None


def read(doc: Doc) -> Run:
    def part(key: str) -> Doc:
        return doc.obj(key) or Doc({}, key, doc.file)
    conf = part("settings").num("confidence")
    return Run(doc.text("base"), doc.text("cand"), 0.95 if conf is None else conf, doc.objs("summary"),
               doc.objs("throughput"), doc.objs("paired"), doc.objs("latency"), doc.objs("fdr"),
               part("profile"), part("tma"), part("stalls"), doc.obj("measurement"))
