"""The user docs (README.md, docs/*.md) say what is, in the project's words, and agree with
the code where they quote it:

- no process notes: what changed and why goes to CHANGELOG.md, dated ("this session", "the
  issue asked", "issue 39", "What changed in ...", "Before <date> the demo was ...");
- "seed" has one meaning, an upstream result (docs/architecture.md, Words): perf's cost per
  sample before a host has measured any is the starting cost, +layout=N's number the layout
  shuffle number, a random number generator's a random seed;
- a detectable size is what a run could see ("could see ±2.4% (80% power)"), never worded as
  a bound on the change ("no change larger than");
- the facts the docs cite are in the repository (no link outside it); docs/seeds.md holds
  the seeds' numbers the experiment files carry;
- `make bench` numbers each figure once, and the docs cite figures that exist, by the file
  that draws them;
- the README's funnel minimum is the funnel's.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _prose(path: Path) -> list[tuple[int, str]]:
    """(line number, line) of a Markdown file outside fenced code blocks."""
    out, fenced = [], False
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out.append((i, line))
    return out


def _hits(patterns: list[str], docs: list[Path] = USER_DOCS) -> list[str]:
    """Where any of the patterns occurs in the docs' prose (a pattern may span two lines)."""
    found = []
    for doc in docs:
        lines = _prose(doc)
        for k, (i, line) in enumerate(lines):
            pair = line + " " + (lines[k + 1][1].strip() if k + 1 < len(lines) else "")
            for pat in patterns:
                m = re.search(pat, pair, re.IGNORECASE)
                if m and m.start() < len(line):
                    found.append(f"{doc.relative_to(ROOT)}:{i}: {line.strip()}")
    return sorted(set(found))


PROCESS_NOTES = [
    r"\bthis session\b",
    r"\bthe issue(?:'s| asked| said)\b",
    r"\bissues? #?\d+\b",
    r"\bwhat changed in\b",
    r"^\s*before \d{4}-\d{2}-\d{2},? the \w+ was\b",
    r"\((?:named|called) \w+ until \d{4}-\d{2}-\d{2}\)",
]


def test_no_process_notes_in_the_user_docs():
    hits = _hits(PROCESS_NOTES)
    assert not hits, ("process notes belong in CHANGELOG.md (dated); the user docs say what is:\n"
                      + "\n".join(hits))


def test_the_changelog_is_dated_newest_first():
    dates = re.findall(r"^## (\d{4}-\d{2}-\d{2})", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert dates and dates == sorted(dates, reverse=True)


SEED_OTHER_MEANINGS = [
    r"\bseed of \d",                      # perf's starting cost
    r"\bthe seed's (?:rate|cost|bound)\b",
    r"\b(?:layout|link-order) seeds?\b",  # the layout shuffle number
    r"\bseeds 1\s*\.\.",
    r"\+layout=SEED\b",
    r"(?<![-\w])(?<!random )seeds? \d",    # a random number generator's, unless said so
]


def test_seed_means_an_upstream_result_only():
    hits = _hits(SEED_OTHER_MEANINGS)
    assert not hits, ("'seed' is an upstream result (docs/architecture.md, Words): say starting "
                      "cost, layout shuffle number or random seed:\n" + "\n".join(hits))


def test_a_detectable_size_is_what_a_run_could_see():
    hits = _hits([r"no change larger than", r"too few samples to see ±"])
    code = [f"{p.relative_to(ROOT)}" for p in (ROOT / "analysis").rglob("*.py")
            if "no change larger than" in p.read_text()]
    assert not hits and not code, "say 'could see ±X% (80% power)':\n" + "\n".join(hits + code)


def test_the_docs_link_nothing_outside_the_repository():
    hits = _hits([r"\.\./shared/", r"\]\(\.\./\.\./"])
    assert not hits, "\n".join(hits)


def test_docs_seeds_holds_every_experiments_seed_and_numbers():
    text = (ROOT / "docs" / "seeds.md").read_text()
    flat = " ".join(text.split())
    for f in sorted((ROOT / "cases" / "experiments").glob("*.yaml")):
        d = yaml.safe_load(f.read_text())
        assert f"stallscope experiment {d['name']}" in flat, f"docs/seeds.md lacks {d['name']}"
        if d["seed"].startswith(("redis/", "valkey")):
            number = d["seed"].split("#")[-1]
            assert f"#{number}" in text, f"docs/seeds.md lacks {d['seed']}"
        for part in d["parts"]:
            for row in part.get("seed_rows", []):
                for key in ("base", "cand"):
                    v = row[key]
                    forms = {f"{v:,}", f"{v:,.2f}", f"{v:.3f}", f"{v / 1e3:g}K", f"{v / 1e6:g}M"}
                    assert any(x in flat for x in forms), f"{f.name}: {row['setup']} {key} {v}"
                assert f"{row['gain'] * 100:.1f}%" in flat, f"{f.name}: {row['setup']} gain"


def _bench_figures() -> dict[str, Path]:
    """Figure number -> the bench file that draws it: bench/run.py's 1-3 (its docstring's
    numbered list), every other file's "`make bench` figure N:" docstring."""
    run = ROOT / "bench" / "run.py"
    figures: dict[str, Path] = {n: run for n in re.findall(r"^(\d+)\. ", run.read_text().split('"""')[1], re.M)}
    for f in sorted((ROOT / "bench").glob("*.py")):
        m = re.match(r'"""`make bench` figure (\d+[a-z]?):', f.read_text())
        if m:
            assert m.group(1) not in figures, f"figure {m.group(1)}: {figures.get(m.group(1))} and {f.name}"
            figures[m.group(1)] = f
    return figures


def test_each_bench_figure_has_one_number():
    """Two files never take one number (_bench_figures fails on it); a figure's parts may be
    files of their own (7, 7b, 7d)."""
    figures = _bench_figures()
    assert len(figures) >= 17


def test_the_docs_cite_bench_figures_by_the_file_that_draws_them():
    figures = _bench_figures()
    numbers = {re.match(r"\d+", n).group() for n in figures}
    bad = []
    for doc in [*USER_DOCS, *sorted((ROOT / "bench").glob("*.py"))]:
        text = " ".join(doc.read_text().split())
        for m in re.finditer(r"\bfigure (\d+)([a-z]?)\b", text):
            if m.group(1) not in numbers:
                bad.append(f"{doc.name}: figure {m.group(1)} does not exist")
                continue
            near = re.search(r"bench/(\w+)\.py", text[m.end():m.end() + 40])
            if near:
                drawn = {f.stem for n, f in figures.items() if re.match(r"\d+", n).group() == m.group(1)}
                if near.group(1) not in drawn and near.group(1) != "bisect_findings":
                    bad.append(f"{doc.name}: figure {m.group(1)} next to bench/{near.group(1)}.py "
                               f"(drawn by {sorted(drawn)})")
    assert not bad, "\n".join(bad)


def test_the_readme_funnel_minimum_is_the_funnels():
    from analysis.tma.funnel import MIN_RUNS
    readme = (ROOT / "README.md").read_text()
    said = re.findall(r"\((\d+) runs per side give intervals\)", readme)
    assert said == [str(MIN_RUNS)]


def test_the_readme_says_make_setup_installs_toplev():
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "clone pmu-tools" not in readme and "export TOPLEV" not in readme
    assert "**toplev**: `make setup` installs it" in readme
