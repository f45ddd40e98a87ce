"""report.md neutralised (collectors/pr/untrusted.py), checked by a reader of its own.

`blocks(md)` below is a small CommonMark block reader written from the spec (CommonMark and
GitHub Flavored Markdown 0.29, "Appendix: A parsing strategy"), independent of collectors/pr:
lines end at \\n, \\r\\n or \\r; block quotes and list items are containers, matched line
by line, with lazy paragraph continuation; fenced code (a backtick fence's info string holds
no backtick; a closing fence is only its run and spaces or tabs), indented code, HTML blocks
of the seven kinds with their end conditions, paragraphs, GFM tables (header and delimiter
row with as many cells), blank lines. For each line it says whether
GitHub reads it as code, HTML or text, and inside how many containers. `tags` counts the
<details> elements that are opened and closed as HTML (in HTML blocks and as inline HTML in
text). It does not need to render anything else: what matters is whether a report can
leave GitHub inside a fence, a list, a quote or a <details> after its last line.

The reader's answers for READER_CASES were checked against cmark-gfm 0.29.0.gfm.13 (the
parser GitHub's Markdown is built on, raw HTML kept) when this file was written, and so were
its answers for 80,000 seeded random documents of the kinds of lines below (they differed on
one, a table whose header row is itself a delimiter row); the expectations are written here,
so those tests need nothing installed.

What a neutralised report renders is checked with cmark-gfm itself (PyPI cmarkgfm, pinned in
requirements.txt): a report salted with links, images, footnotes, alerts, autolinks, issue and
commit references, mentions and bidi controls, each also spelled with entity references,
renders none of them; GitHub's own additions after parsing (references, mentions, alerts),
which cmark-gfm does not model, are read off its HTML by the rules GitHub documents."""
from __future__ import annotations

import html
import random
import re

import pytest

from collectors.pr.fitting import cut, shorten
from collectors.pr.untrusted import neutralise

SENTINEL = "SENTINEL-after-the-report"
_TYPE6 = ("address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|"
          "dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h[1-6]|head|header|hr|"
          "html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|"
          "section|summary|table|tbody|td|tfoot|th|thead|title|tr|track|ul")
_HTML_START = [
    (1, re.compile(r"<(?:script|pre|style|textarea)(?:[ \t>]|$)", re.I),
     re.compile(r"</(?:script|pre|style|textarea)>", re.I)),
    (2, re.compile(r"<!--"), re.compile(r"-->")),
    (3, re.compile(r"<\?"), re.compile(r"\?>")),
    (4, re.compile(r"<![A-Za-z]"), re.compile(r">")),
    (5, re.compile(r"<!\[CDATA\["), re.compile(r"\]\]>")),
    (6, re.compile(rf"</?(?:{_TYPE6})(?:[ \t>]|/>|$)", re.I), None),
    (7, re.compile(r"(?:<[A-Za-z][A-Za-z0-9-]*"
                   r"(?:\s+[A-Za-z_:][\w.:-]*(?:\s*=\s*(?:[^\s\"'=<>`]+|'[^']*'|\"[^\"]*\"))?)*"
                   r"\s*/?>|</[A-Za-z][A-Za-z0-9-]*\s*>)[ \t]*$"), None),
]
_BULLET = re.compile(r"([-+*])(?=[ \t]|$)|(\d{1,9})([.)])(?=[ \t]|$)")
_BREAK = re.compile(r"(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_FENCE = re.compile(r"(`{3,}|~{3,})(.*)$")
_DELIMITER = re.compile(r"\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")


def _cells(row: str) -> int:
    row = row.strip(" \t")
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return len(re.split(r"(?<!\\)\|", row))


def _lines(md: str) -> list[str]:
    return re.split(r"\r\n|\r|\n", md)


def _indent(s: str, col: int = 0) -> tuple[int, str]:
    """(columns of leading spaces and tabs, the rest), tabs to the next multiple of 4."""
    start = col
    i = 0
    while i < len(s) and s[i] in " \t":
        col = col + 4 - col % 4 if s[i] == "\t" else col + 1
        i += 1
    return col - start, s[i:]


def _strip(s: str, n: int) -> str:
    """`s` without its first `n` columns of indentation (a tab split into spaces)."""
    col, i = 0, 0
    while col < n and i < len(s) and s[i] in " \t":
        w = 4 - col % 4 if s[i] == "\t" else 1
        if col + w > n:
            return " " * (col + w - n) + s[i + 1:]
        col += w
        i += 1
    return s[i:]


def _html_kind(rest: str, para: bool) -> tuple[int, re.Pattern | None] | None:
    for kind, start, end in _HTML_START:
        if start.match(rest) and not (kind == 7 and para):
            return kind, end
    return None


def _closes_fence(rest: str, fence: tuple[str, int]) -> bool:
    ind, body = _indent(rest)
    m = re.match(r"(`+|~+)[ \t]*$", body)
    return ind < 4 and bool(m) and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1]


def _container(rest: str, para: bool) -> tuple[list | None, str] | None:
    """A block quote or list item that starts `rest`: (None | [content column, empty so
    far], the rest after its marker), or None. `para`: the line would otherwise go on a
    paragraph (an empty item, or an ordered one not numbered 1, cannot interrupt it)."""
    ind, body = _indent(rest)
    if ind >= 4:
        return None
    if body.startswith(">"):
        after_ = body[1:]
        return None, (_strip(after_, 1) if after_[:1] in (" ", "\t") else after_)
    m = _BULLET.match(body)
    if not m or _BREAK.match(body):
        return None
    after_ = body[m.end():]
    empty = not after_.strip(" \t")
    if para and (empty or (m.group(2) and m.group(2) != "1")):
        return None
    w, _ = _indent(after_, ind + m.end())
    if empty or w > 4:
        return [ind + m.end() + 1, empty], _strip(after_, 1)
    return [ind + m.end() + w, False], _strip(after_, w)


def _leaf(rest: str, tip: tuple, lazy: bool, para: bool, row: bool) -> tuple[str, tuple]:
    """The leaf block `rest` starts or continues: (kind of the line, the open leaf after it).
    `lazy`: a paragraph is open (no indented code then); `para`: this line is in that
    paragraph's container (a type 7 HTML block and a setext underline need that; as cmark
    decides it); `row`: in an open table's container."""
    ind, body = _indent(rest)
    if not body:
        return "blank", ("none",)
    if ind >= 4:
        return ("text", ("para", body)) if lazy else ("code", ("icode",))
    if (f := _FENCE.match(body)) and not (f.group(1)[0] == "`" and "`" in f.group(2)):
        return "code", ("fence", (f.group(1)[0], len(f.group(1))))
    if h := _html_kind(body, para):
        kind, end = h
        return "html", (("none",) if end is not None and end.search(body) else ("html", kind, end))
    if para and _DELIMITER.match(body) and "|" in body + tip[1] and _cells(body) == _cells(tip[1]):
        return "text", ("table",)                       # GFM: the paragraph's last line was its header
    if para and re.fullmatch(r"=+[ \t]*|-+[ \t]*", body):
        return "text", ("none",)                        # a setext heading's underline
    if _BREAK.match(body) or re.match(r"#{1,6}(?:[ \t]|$)", body):
        return "text", ("none",)
    if row:
        return "text", tip                              # a row: a table ends at a blank line or a block
    return "text", ("para", body)


def blocks(md: str) -> list[tuple[str, int, str]]:
    """(kind, containers open, line) of each line: kind code | html | text | blank."""
    conts: list = []                   # None: a block quote; [content column, empty so far]: a list item
    tip: tuple = ("none",)             # the open leaf: none | para | table | fence | html | icode
    out = []
    for line in _lines(md):
        rest, matched = line, 0
        for c in conts:                                  # the open containers this line continues
            ind, body = _indent(rest)
            if c is None and ind < 4 and body.startswith(">"):
                rest = body[1:]
                rest = _strip(rest, 1) if rest[:1] in (" ", "\t") else rest
            elif c is not None and not rest.strip(" \t") and not c[1]:
                rest = ""
            elif c is not None and rest.strip(" \t") and ind >= c[0]:
                rest, c[1] = _strip(rest, c[0]), False
            else:                           # (an item begins with at most one blank line)
                break
            matched += 1
        every = matched == len(conts)
        if every and tip[0] == "fence":
            out.append(("code", len(conts), line))
            tip = ("none",) if _closes_fence(rest, tip[1]) else tip
            continue
        if every and tip[0] == "html":
            blank = not rest.strip(" \t")
            out.append(("blank" if blank and tip[1] >= 6 else "html", len(conts), line))
            if (tip[2] is not None and tip[2].search(rest)) or (tip[2] is None and blank):
                tip = ("none",)
            continue
        lazy, new = tip[0] == "para", []
        while (c := _container(rest, lazy and every and not new)) is not None:
            new.append(c[0])
            rest = c[1]
        kind, leaf = _leaf(rest, tip, lazy and not new, lazy and every and not new,
                           tip[0] == "table" and every and not new)
        if not new and not every and lazy and kind == "text" and leaf[0] == "para":
            out.append(("text", len(conts), line))      # a lazy continuation line: nothing closes
            tip = leaf
            continue
        conts = conts[:matched] + new
        tip = leaf
        out.append((kind, len(conts), line))
    return out


def tags(md: str) -> tuple[int, int]:
    """(<details> open after the last line, the fewest open at any point) as GitHub reads md."""
    depth = least = 0
    for kind, _, line in blocks(md):
        if kind in ("html", "text"):
            for t in re.finditer(r"<(/?)details(?:\s[^<>]*)?>", line, re.I):
                depth += -1 if t.group(1) else 1
                least = min(least, depth)
    return depth, least


def after(md: str) -> tuple[str, int, tuple[int, int]]:
    """How GitHub reads a paragraph that follows `md` after a blank line (as the next case's
    report or the closing line follows it in the comment): (kind, containers open, <details>
    open, fewest open). Where a report leaves nothing open: ("text", 0, (0, 0))."""
    doc = md + "\n\n" + SENTINEL + "\n"
    kinds = blocks(doc)
    (kind, conts, _), = [k for k in kinds if k[2] == SENTINEL]
    return kind, conts, tags(doc)


CLEAN = ("text", 0, (0, 0))

# ------------------------------------------------------------- the reader, as cmark-gfm reads these
READER_CASES = [
    # (markdown, what the sentinel after it is) -- recorded from cmark-gfm
    ("plain\n", CLEAN),
    ("```\ncode\n", ("code", 0, (0, 0))),
    ("``` a`b\n```\n", ("code", 0, (0, 0))),                       # the first is no fence: the second opens
    ("```\ncode\n```\u00a0\n", ("code", 0, (0, 0))),               # not a closing fence
    ("```\ncode\n  ```  \n", CLEAN),
    ("- a\n\n   ```\n   x\n```\nwhat\n", ("code", 0, (0, 0))),     # the list's fence ends with it
    ("- a\n\n    ```\n", CLEAN),
    ("> ```\n> x\n", CLEAN),
    ("<details>\n<summary>s</summary>\n\nx\n", ("text", 0, (1, 0))),
    ("<details>\n<summary>s</summary>\n\nx\n\n</details>\n", CLEAN),
    ("<details>\n```\n</details>\n", ("text", 0, (0, 0))),          # one HTML block: no fence in it
    ("<details>\n<summary>Click</summary>\n\n```\n</details>\n```\n", ("text", 0, (1, 0))),
    ("a\r```\rcode\r", ("code", 0, (0, 0))),
    ("\tx\n", CLEAN),
    ("<!--\n\nhidden\n", ("html", 0, (0, 0))),
    ("1. a\n\n   b\n", CLEAN),
    ("a <details> b\n", ("text", 0, (1, 0))),                       # inline HTML opens it too
    ("&lt;details>\n", CLEAN),
    ("| a | b |\n|---|---|\n| 1 | 2 |\n```\ncode\n", ("code", 0, (0, 0))),   # a fence ends a table
    ("| a | b |\n|---|---|\n<a href=x>\n```\n", CLEAN),       # a table is no paragraph: an HTML block
    ("a\n<a href=x>\n```\n", ("code", 0, (0, 0))),             # a paragraph goes on: the fence opens
    ("- a\n===\n<a href=x>\n<!--\n", CLEAN),                    # cmark: a lazy line's container is the list's
    ("- \n\n  ```\n", ("code", 0, (0, 0))),                      # an item begins with at most one blank line
]


@pytest.mark.parametrize("md, expected", READER_CASES)
def test_the_reader_reads_as_cmark_gfm_does(md, expected):
    assert after(md) == expected


# ------------------------------------------------------------- report.md neutralised
FOLD = "<details>\n<summary>Top movers</summary>\n\n| a | b |\n\n</details>\n"
HOSTILE = [
    "<details>\n<summary>Click</summary>\n\n```\n</details>\n```\n",      # the close is code: never closed
    "<details>\n```\n</details>\n",                                       # one HTML block, then a fence
    "<details>\r<summary>x</summary>\r\rfoo\n```\n</details>\n```\n",     # bare CR ends lines on GitHub
    "<details>\r\n<summary>x</summary>\r\n\r\ny\r\n\r\n</details>\r\n",
    "<details>\n<summary>never closed</summary>\n\nthe rest of the comment\n",
    "</details>\n```\n\n```\n" + FOLD,                                     # lines an HTML block swallows
    FOLD.replace("\n\n</details>", "\n</details>") + "```\n",             # no blank line before the close
    FOLD.replace("</details>\n", "</details>\n```\n"),                    # nor after it
    "``` a`b\n```\n" + FOLD,                                              # no fence: a backtick in its info
    "```\ncode\n```\u00a0\n" + FOLD + "```\n",                            # no closing fence: a no-break space
    "- a\n\n   ```\n   x\n```\n" + FOLD + "```\n",                        # the list's fence ends with the list
    "> ```\n" + FOLD,
    "<details>\n<details>\n<summary>s</summary>\n\nx\n\n</details>\n</details>\n",
    "  <details>\n<summary>s</summary>\n\nx\n\n</details>\n",
    "<DETAILS>\n<summary>s</summary>\n\nx\n\n</details>\n",
    "<details open>\n<summary>s</summary>\n\nx\n\n</details>\n",
    "x\n<details>\n<summary>s</summary>\n\nx\n\n</details>\n",               # no blank line before it
    "text <details> inline\n",
    "~~~\n" + FOLD + "~~~~\n",
    "    ```\n" + FOLD,
    "\t```\n" + FOLD,
]


def _html_lines(md: str) -> list[str]:
    """Lines with a `<` that GitHub may read as HTML, other than report.md's exact fold lines."""
    fold = re.compile(r"<details>|</details>|<summary>[^<]*</summary>")
    return [x for x in _lines(md) if "<" in x and not fold.fullmatch(x)]


@pytest.mark.parametrize("md", HOSTILE)
def test_no_report_leaves_a_fence_a_container_or_a_fold_open(md):
    out = neutralise(md)
    assert after(out) == CLEAN, out
    assert _html_lines(out) == [], out


def test_a_fold_of_report_mds_shape_stays_and_nothing_else_does():
    assert neutralise(FOLD) == FOLD and neutralise("## x\n\n" + FOLD + "\n" + FOLD) == "## x\n\n" + FOLD + "\n" + FOLD
    out = neutralise("<details>\n<summary>Click <b>me</b></summary>\n\nnever closed\n")
    assert "<summary>" not in out and "<details>" not in out      # the summary of a fold that is not one
    assert out.startswith("&lt;details>\n&lt;summary>Click &lt;b>me&lt;/b>&lt;/summary>\n")
    assert neutralise("a\rb\r\nc\n") == "a\nb\nc\n"


_PIECES = ["x", "", "```", "``` a`b", "~~~", "````", "  ```", "    ```", "```\u00a0", "- a", "1. a", "> q", "> ```",
           "- ```", "<details>", "</details>", "<summary>s</summary>", "<summary>s", "\tcode", "---", "<!--",
           "<div>", "| a | b |", "|---|---|", "   - b", "@alice", "<img src=x>", "\r", "</summary>", "- ", "  x",
           "\u2028```", "\x85", "``` \t", "+ ```", "> - ```", "<details open>"]


def test_random_reports_come_out_closed():
    """Seeded random reports from the pieces above (folds, fences, containers, HTML), each
    neutralised, then cut and shortened anywhere (collectors/pr/fitting.py): nothing is left
    open after it and no HTML but whole folds."""
    rnd = random.Random(26)
    for _ in range(2000):
        md = "\n".join(rnd.choice(_PIECES) for _ in range(rnd.randint(1, 12)))
        if rnd.random() < 0.3:
            md = FOLD + "\n" + md + "\n" + FOLD
        out = neutralise(md)
        assert _html_lines(out) == [], repr(md)
        for text in (out, cut(out, rnd.randint(0, len(out))), shorten(out, rnd.randint(60, len(out) + 60))):
            assert after(text) == CLEAN, (repr(md), text)


# ------------------------------------------------------------- @mentions
MENTIONS = [
    "@alice", "thanks _team_@octocat", "__x__@octo-org/admins", "*@bob*", "`@carol`", "@&#111;ctocat",
    "&#64;&#111;ctocat", "&#x40;dave", "&#X0040;erin", "&#0064;frank", "&commat;grace", "&COMMAT;heidi",
    "a@b.example", "(@ivan)", "@@judy", "&#64;", "ping\r@mallory", "[@x](https://github.com/x)",
]


def _decoded(md: str) -> str:
    """Text as GitHub shows it: each entity reference (with its ';', as CommonMark reads
    them) decoded once; GitHub finds mentions in that text."""
    return re.sub(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});",
                  lambda m: html.unescape(m.group(0)), md)


@pytest.mark.parametrize("md", MENTIONS)
def test_no_at_sign_is_followed_by_a_name(md):
    """Every @ GitHub would show is followed by a zero-width space, whatever comes before it
    (emphasis, a letter) and however it is written (a numeric or named reference)."""
    out = _decoded(neutralise(md))
    assert not re.search("@(?!\u200b)", out), out


# ------------------------------------------------------------- links, images, alerts, footnotes, references
# A report salted with everything GitHub would make act beyond text: GFM's links, images,
# footnotes, reference definitions, autolinks and extended autolinks (cmark-gfm renders
# these), and what GitHub adds after parsing (docs.github.com, "Autolinked references and
# URLs", "Basic writing and formatting syntax: Alerts"): issue references, commit SHAs,
# @mentions, alerts; bidi controls (U+202E reverses what a reader sees); and each of these
# spelled with entity references, which CommonMark decodes into text before GitHub looks.
SALTED = (
    "## stallscope: mset-50keys\n\n"
    "![pixel](https://evil.example/track.png) and [merge me](https://evil.example/)\n\n"
    "> [!CAUTION]\n> Do not merge: regressions everywhere.\n\n"
    "Throughput +3%[^1] (see o/r#2, #12, GH-3, org/repo@a5c3785ed8d6a35868bc169f07e40e889087fd2e, "
    "a5c3785ed8d6a35868bc169f07e40e889087fd2e).\n\n"
    "[^1]: measured on \u202egnp.exe\u202c a quiet host\n\n"
    "Visit https://evil.example/x, www.evil.example, mail ops@evil.example, <https://evil.example/y>, "
    "[ref link][r] and [r].\n\n[r]: https://evil.example/ref\n\n"
    "- [x] approved by @maintainer\n\n"
    "| a | b |\n|---|---|\n| [cell](https://evil.example/c) | ![i](https://evil.example/i.png) |\n\n"
    "Spelled otherwise: &#91;e1](https://evil.example/) &lsqb;e2](https&colon;//evil.example/) "
    "&#x202E;rtl &#35;13 &num;14 gh&#45;15 &#64;bob\n\n"
    "> &#91;!WARNING]\n> entity alert\n"
)
ALERT_TYPES = ("NOTE", "TIP", "IMPORTANT", "WARNING", "CAUTION")
BIDI_CHARS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def gfm_html(md: str) -> str:
    """`md` as github.com's Markdown would render it before its own filters: cmark-gfm (the
    parser GitHub's Markdown is built on; PyPI cmarkgfm, requirements.txt) with GitHub's
    extensions (table, autolink, strikethrough, tagfilter, tasklist) and footnotes, raw
    HTML kept (GitHub sanitises it afterwards; kept, any tag that got through shows)."""
    try:
        import cmarkgfm
        from cmarkgfm.cmark import Options
    except ImportError:
        pytest.fail("cmarkgfm not installed: `make setup` (requirements.txt) installs it")
    return cmarkgfm.github_flavored_markdown_to_html(md, options=Options.CMARK_OPT_FOOTNOTES | Options.CMARK_OPT_UNSAFE)


def rendered(md: str) -> dict:
    """What the rendered HTML holds that acts: elements (a, img, input, sup, section), and
    the text GitHub's filters read after parsing (outside code), by the documented rules."""
    from html.parser import HTMLParser

    class Reader(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.tags: list[str] = []
            self.text: list[str] = []
            self.code = 0
            self.quote_starts: list[str] = []
            self._quote_para = False

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)
            self.code += tag in ("code", "pre")
            if tag == "blockquote":
                self._quote_para = True

        def handle_endtag(self, tag):
            self.code -= tag in ("code", "pre")

        def handle_data(self, data):
            if self._quote_para and data.strip():
                self.quote_starts.append(data.strip().split("\n")[0])
                self._quote_para = False
            if not self.code:
                self.text.append(data)

    r = Reader()
    page = gfm_html(md)
    r.feed(page)
    text = "".join(r.text)
    return {
        "elements": sorted({t for t in r.tags if t in ("a", "img", "input", "sup", "section", "script", "iframe")}),
        "alerts": [q for q in r.quote_starts if re.match(rf"\[!(?:{'|'.join(ALERT_TYPES)})\]", q, re.I)],
        "mentions": re.findall(r"@[A-Za-z0-9]", text),
        "issues": re.findall(r"(?:#|GH-)[0-9]+", text, re.I),
        "shas": re.findall(r"(?<![0-9A-Za-z])[0-9a-f]{7,40}(?![0-9A-Za-z])", text),
        "bidi": BIDI_CHARS.findall(page),
    }


def test_the_salted_report_acts_as_it_would_without_neutralising():
    """The control: un-neutralised, the salted report renders every one of them, so the
    reader below can see them."""
    got = rendered(SALTED)
    assert got["elements"] == ["a", "img", "input", "section", "sup"]
    assert got["alerts"] == ["[!CAUTION]", "[!WARNING]"]
    assert {"@m", "@b"} <= set(got["mentions"]) and {"#2", "#12", "GH-3", "#13", "#14", "gh-15"} <= set(got["issues"])
    assert "a5c3785ed8d6a35868bc169f07e40e889087fd2e" in got["shas"] and got["bidi"]


def test_a_salted_report_renders_nothing_that_acts():
    """Neutralised, no link, image, footnote, task-list box, alert, mention, issue or commit
    reference and no bidi control is left, read off cmark-gfm's HTML and GitHub's rules."""
    out = neutralise(SALTED)
    got = rendered(out)
    assert got == {"elements": [], "alerts": [], "mentions": [], "issues": [], "shas": [], "bidi": []}, out
    # and it is still there to read, as text
    page = gfm_html(out)
    assert "[merge me](https:" in html.unescape(re.sub(r"<[^>]+>", "", page)).replace("\u200b", "")
    assert "[U+202E]gnp.exe[U+202C]" in out.replace("\\[", "[")


@pytest.mark.parametrize("piece", [line for line in SALTED.split("\n") if line.strip()])
def test_each_salted_line_alone_renders_nothing_that_acts(piece):
    got = rendered(neutralise(piece))
    assert got == {"elements": [], "alerts": [], "mentions": [], "issues": [], "shas": [], "bidi": []}, piece


def test_a_real_report_keeps_its_tables_folds_and_intervals():
    """What neutralising costs a real report.md (the recorded demo run): nothing a reader
    sees. Every table and fold renders as before, and an interval's [ is still a [."""
    from analysis.compare.engine import analyse
    from analysis.compare.options import CompareOptions
    from analysis.inputs.rundir import load_run
    from analysis.report import markdown as report_md
    from tests.conftest import REPO
    md = report_md.render(analyse(load_run(REPO / "tests" / "data" / "runs" / "mset-demo-paired"), CompareOptions()))
    before, after_ = gfm_html(md), gfm_html(neutralise(md))
    assert before.count("<table>") > 5 and before.count("<details>") > 2
    for tag in ("<table>", "<tr>", "<td>", "<details>", "<summary>", "<code>", "<pre", "<h2>", "<h3>"):
        assert after_.count(tag) == before.count(tag), tag

    def text(page: str) -> str:
        return html.unescape(re.sub(r"<[^>]+>", "", page)).replace("\u200b", "")
    assert "+32.0% [+22.2, +42.6]%" in text(after_) and text(after_).count("[") == text(before).count("[")
