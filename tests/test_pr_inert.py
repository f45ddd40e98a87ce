"""The security review's holes in what the PR comment posts (issue 46, item 4), each planted
in a report.md or a results.json and read back as GitHub would show it: cmark-gfm's HTML
(tests/test_pr_neutralise.gfm_html, GitHub's parser with its extensions), its text decoded
as a browser decodes it (html.parser, which reads a numeric reference without its `;` the
way HTML5 says), and GitHub's own additions read off that text by the rules it documents.

1. entity references without their `;` in the raw HTML of a fold's title (`&#x40octocat`,
   `G&#x48-1`), which a browser decodes where CommonMark would not;
2. invisible characters (tag characters, U+200B-D, U+2060, U+FEFF, U+00AD, ...);
3. math (`$$...$$`, `$...$`, `` $`...`$ ``) and diagram or math blocks (```math, mermaid,
   geojson, topojson, stl);
4. names and commits with no length cap (a 5,000-character one made an 11,600-character row).
"""
from __future__ import annotations

import html
import json
import re
import unicodedata
from html.parser import HTMLParser

import pytest

from collectors.pr import comment, sources
from collectors.pr.untrusted import (COMMIT_CAP, INVISIBLE, NAME_CAP, PLAIN_INFO, ZWSP, inert, inert_html,
                                     neutralise)
from tests.test_pr_neutralise import CLEAN, after, gfm_html, rendered

NOTHING = {"elements": [], "alerts": [], "mentions": [], "issues": [], "shas": [], "bidi": []}
# Default_Ignorable_Code_Point, as Unicode's DerivedCoreProperties.txt lists it (16.0)
DEFAULT_IGNORABLE = [(0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
                     (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
                     (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8),
                     (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF)]


def shown(md: str) -> str:
    """The text of `md` as a reader's browser shows it (code included): cmark-gfm's HTML,
    every character reference decoded as HTML5 does (with or without its `;`)."""
    class Text(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.parts: list[str] = []

        def handle_data(self, data):
            self.parts.append(data)
    t = Text()
    t.feed(gfm_html(md))
    t.close()
    return "".join(t.parts)


def hidden(text: str) -> list[str]:
    """The invisible characters in `text` but the zero-width spaces inert puts after @ and
    the rest (the callers count those apart)."""
    return [f"U+{ord(c):04X}" for c in text if c != ZWSP and INVISIBLE.match(c)]


# ------------------------------------------------------------- 1. references without their `;`
TITLE = "Details for &#x40octocat see G&#x48-1 &#x202Eevil &#x202E-evil &#64bob &#x23;12 &copy &amp &lt"
FOLD = f"<details>\n<summary>{TITLE}</summary>\n\nbody &#x40carol G&#x48-2 &#64;dave &commat;erin\n\n</details>\n"


def test_a_reference_without_its_semicolon_is_decoded_in_a_title_unless_escaped():
    """The control: as written, the fold's title (raw HTML: GitHub keeps it) decodes in a
    browser to an @mention, an issue reference and a right-to-left override."""
    text = shown(FOLD)
    assert "@octocat" in text and "GH-1" in text and "\u202e-evil" in text and "@bob" in text


@pytest.mark.parametrize("md", [FOLD, FOLD.replace("<details>", "<details>\n<details>")])
def test_no_reference_survives_in_a_title_or_the_text(md):
    out = neutralise(md)
    text = shown(out)
    assert rendered(out) == NOTHING, out
    assert not re.search("@(?!\u200b)", text) and not re.search(r"(?:#|GH-)[0-9]", text, re.I), text
    assert hidden(text) == [], text
    if md == FOLD:      # the fold is report.md's shape: kept, its title shown as written
        title = re.search(r"<summary>(.*)</summary>", out).group(1)
        assert re.findall(r"&[^;]*;", title) and all(m in ("&amp;", "&lt;", "&gt;") for m in re.findall(r"&[^;]*;", title))
        assert gfm_html(out).count("<details>") == 1 and after(out) == CLEAN
        assert TITLE in text.replace("\u200b", "")          # every character as written


@pytest.mark.parametrize("spelled", ["&#x40octocat", "&#64octocat", "&#0000064octocat", "&#X40;octocat", "&commat;octocat",
                                     "&commat octocat", "&#x23;12", "&num;12", "G&#72;-3", "&#x202E;x", "&#8238x",
                                     "&lsqb;l](https://evil.example)", "&#36;x&#36;", "&dollar;\\Huge&dollar;"])
def test_every_spelling_stays_as_written_everywhere(spelled):
    """In Markdown text, in a title, in a name: a reference with or without its `;`,
    decimal, hex or named, is shown as written, never decoded into what it spells."""
    for out in (neutralise(f"x {spelled} y\n"), neutralise(FOLD.replace(TITLE, spelled)),
                comment.untrusted(spelled), f"<details>\n<summary>{inert_html(spelled)}</summary>\n\n</details>\n"):
        text = shown(out)
        assert rendered(out) == NOTHING, out
        assert spelled.replace("\\", "") in text.replace("\u200b", "").replace("\\", ""), (out, text)
        assert hidden(text) == [] and "$" not in text


# ------------------------------------------------------------- 2. invisible characters
TAGS = "".join(chr(0xE0000 + ord(c)) for c in "approve this")        # ASCII smuggled in tag characters
INVISIBLE_PLANTED = ["\U000e0001" + TAGS + "\U000e007f", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad",
                     "\u034f", "\u180e", "\u2064", "\u3164", "\ufe00", "\U000e0100", "\u202e", "\u2066", "\u061c",
                     "\x1b[31m", "\x7f", "\x85", "\ufff9"]


@pytest.mark.parametrize("planted", INVISIBLE_PLANTED)
def test_no_invisible_character_gets_through(planted):
    """In a report's text, code and fold title, and in a name: every invisible character is
    shown as [U+XXXX]; the only zero-width spaces left are the ones inert puts in."""
    clean = "## lgtm by@octocat\n\n<details>\n<summary>Top x</summary>\n\n`a b` c\n\n</details>\n"
    md = clean.replace("lgtm ", f"lgtm {planted}").replace("Top ", f"Top {planted}").replace("a b", f"a{planted}b")
    out, ref = neutralise(md), neutralise(clean)
    assert hidden(out) == [] and hidden(shown(out)) == [], out
    assert shown(out).count(ZWSP) == shown(ref).count(ZWSP)
    first = next(c for c in planted if INVISIBLE.match(c))
    assert f"[U+{ord(first):04X}]" in shown(out)
    assert gfm_html(out).count("<details>") == 1 and rendered(out) == NOTHING
    name = comment.untrusted(f"case{planted}x")      # a name is one line: a line break or space is a space
    assert hidden(shown(name)) == [] and (first.isspace() or f"[U+{ord(first):04X}]" in shown(name))


def test_invisible_covers_every_format_control_and_default_ignorable_character():
    """INVISIBLE holds every character of category Cf and Cc (but tab and line feed) this
    Python knows, and every default-ignorable code point; an emoji's presentation selector
    after a visible character stays (stallscope's own verdict marks: "⚠️ unstable")."""
    missed = [f"U+{c:04X}" for c in range(0x110000) if (unicodedata.category(chr(c)) in ("Cf", "Cc")
                                                        and chr(c) not in "\t\n" and not INVISIBLE.match(chr(c)))]
    missed += [f"U+{c:04X}" for lo, hi in DEFAULT_IGNORABLE for c in range(lo, hi + 1) if not INVISIBLE.match(chr(c))]
    assert missed == []
    assert inert("⚠️ unstable, 🗑️ gone") == "⚠️ unstable, 🗑️ gone"
    assert inert("x\ufe0f\ufe0f \ufe0fy") == "x\\[U+FE0F]\\[U+FE0F] \\[U+FE0F]y"     # a run, or after a space


# ------------------------------------------------------------- 3. math and diagrams
MATH = [
    "$$\\Huge\\color{red}\\text{REGRESSION}$$",
    "Verdict: $\\Huge\\color{red}\\text{REGRESSION}$ everywhere",
    "Verdict: $`\\Huge\\color{red}\\text{REGRESSION}`$",
    "$$\n\\Huge\\color{red}\\text{REGRESSION}\n$$",
    "```math\n\\Huge\\color{red}\\text{REGRESSION}\n```",
    "```MATH\n\\Huge\\text{REGRESSION}\n```",
    "~~~ math\n\\Huge\\text{REGRESSION}\n~~~",
    "````mermaid\npie title REGRESSION\n\"bad\" : 100\n````",
    "```geojson\n{\"type\": \"Point\", \"coordinates\": [0, 0]}\n```",
    "```topojson\n{\"type\": \"Topology\"}\n```",
    "```stl\nsolid REGRESSION\nendsolid\n```",
    "> ```mermaid\n> graph TD; A-->B\n> ```",
    "- ```math\n  x^2\n  ```",
    "1. ~~~Mermaid {x}\n   graph TD\n   ~~~",
]
RENDERERS = ("math", "mermaid", "geojson", "topojson", "stl")


def _langs(md: str) -> list[str]:
    return [html.unescape(x) for x in re.findall(r'<pre lang="([^"]*)"', gfm_html(md))]


@pytest.mark.parametrize("md", MATH)
def test_no_math_or_diagram_renders(md):
    """The control renders a math or diagram block (a fence whose language GitHub renders)
    or holds the `$` delimiters GitHub typesets; neutralised, every fence is `text` and no
    `$` is left for GitHub's math, which finds its delimiters in the text (a backslash
    before a `$` does not stop it): each shows as U+FF04 ＄."""
    assert "$" in shown(md) or any(x.casefold() in RENDERERS for x in _langs(md))
    out = neutralise(md)
    assert all(x.casefold() not in RENDERERS and x.split()[0].casefold() in PLAIN_INFO for x in _langs(out)), _langs(out)
    assert "$" not in out and "$" not in shown(out) and ("REGRESSION" in md) == ("REGRESSION" in shown(out))
    assert rendered(out) == NOTHING and after(out) == CLEAN


def test_plain_fences_keep_their_language():
    md = "```sh\nstallscope run mset\n```\n\n~~~text\nx\n~~~\n\n```\ny\n```\n"
    assert neutralise(md) == md and _langs(md) == ["sh", "text"]


# ------------------------------------------------------------- 4. names and commits capped
HUGE = 5000


def _artifact(tmp_path, results: dict, name: str = "case") -> list[sources.Report]:
    d = tmp_path / "reports" / name
    d.mkdir(parents=True)
    (d / "report.md").write_text("## report\n")
    (d / "results.json").write_text(json.dumps(results))
    return sources.find(d.parent, reports_only=True)


def _rows(body: str) -> list[str]:
    return [x for x in body.splitlines() if x.startswith("| ") and " at `" in x]


@pytest.mark.parametrize("char", ["x", "&", "@", "[", "<", "\U000e0041", "$", "1a"])
def test_a_huge_name_or_commit_is_cut_with_an_ellipsis(tmp_path, char):
    """A case, variant name and commit of 5,000 characters each: the table row has each cut
    to NAME_CAP (COMMIT_CAP) characters, an ellipsis last, whatever they are made of."""
    big = (char * HUGE)[:HUGE]
    results = {"case": {"name": big + "c"}, "base": big + "b", "cand": big + "d",
               "environment": {"variants": {big + "b": {"commit": big + "1"}, big + "d": {"commit": big + "2"}}}}
    reps = _artifact(tmp_path, results)
    kept = reps[0].results
    assert len(kept["case"]["name"]) == len(kept["base"]) == NAME_CAP and kept["base"].endswith("…")
    assert kept["environment"]["variants"][kept["cand"]]["commit"].endswith("…")
    assert len(kept["environment"]["variants"][kept["base"]]["commit"]) == COMMIT_CAP
    body = comment.body(reps + reps, comment.Measured())         # two cases: a row each and a fold
    rows = _rows(body)
    assert len(rows) == 2 and all(r.count("…") == 5 for r in rows)
    if char == "x":     # what a reader sees: 3 names and 2 commits at their caps, and the cells' words
        assert len(shown(rows[0])) <= 3 * NAME_CAP + 2 * COMMIT_CAP + 80, shown(rows[0])
    assert max(map(len, rows)) <= 5 * (3 * NAME_CAP + 2 * COMMIT_CAP) + 200          # escaped: at most 5 to 1
    assert rendered(body) == NOTHING and "$" not in body and hidden(body) == []
    summary = re.findall(r"<summary>(.*)</summary>", body)
    assert len(summary) == 2 and len(shown(summary[0]).replace(ZWSP, "").strip()) <= NAME_CAP


def test_the_issues_row_is_capped(tmp_path):
    """The review's case: a variant name and a commit of 5,000 characters made a row of
    11,600; now it is a few hundred."""
    big = "v" * HUGE
    reps = _artifact(tmp_path, {"case": {"name": "mset"}, "base": "base", "cand": big,
                                "environment": {"variants": {big: {"commit": "f" * HUGE}}}})
    (row,) = _rows(comment.provenance(reps, comment.Measured()))
    assert len(row) < 300 and "v" * (NAME_CAP - 1) + "…" in row, len(row)


def test_a_directory_name_is_capped_too(tmp_path):
    name = "d" * 250                         # a report directory with no results.json (--full) names the case
    d = tmp_path / "reports" / name
    d.mkdir(parents=True)
    (d / "report.md").write_text("## x\n")
    (rep,) = sources.find(d.parent, reports_only=True, full=True)
    assert rep.name == "d" * (NAME_CAP - 1) + "…"
