"""`make bench` figure 9: the PR comment's fitting of an untrusted report.md.

The comment job reads report.md from an artifact the pull request's code wrote, so its size
and shape are the PR author's choice (up to the 4 MiB the job reads: collectors/pr/sources.py).
Before issue 26, shorten() searched the whole text again for every <details> block it left
out: 1,000 / 2,000 / 4,000 blocks took 0.9 / 5.7 / 26 s. This measures, on this machine:

- shorten: report.md of N folded blocks (each a small table, titles of one length) cut to
  60,000 characters (about what one case gets in a 65,536-character comment), so nearly
  every block is left out;
- neutralise: the same text made inert (no raw HTML, no @mention), as the job does first;
- hostile: 4 MiB of lines that open a <details> and never close it, neutralised then cut.

Each figure is the median of --repeat runs, in milliseconds, with the text's size. The
test (tests/test_pr_comment.py::test_shorten_does_linear_work) holds the property (work
linear in the text), not a time.

  .venv/bin/python bench/pr_shorten.py
  .venv/bin/python bench/pr_shorten.py --blocks 1000 2000 4000 8000 16000 --repeat 5
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from collectors.pr.fitting import shorten  # noqa: E402
from collectors.pr.untrusted import MIB, neutralise  # noqa: E402

LIMIT = 60_000


def report(blocks: int) -> str:
    head = "## stallscope: mset-50keys\n\n**Summary:** throughput +3.1% ✅ improvement\n\n"
    body = "".join(f"<details>\n<summary>Top movers {i:06d}</summary>\n\n| Function | base | cand |\n|---|---|---|\n"
                   + "| dictFind | 29.3% | 5.7% |\n" * (1 + i % 9) + "\n</details>\n\n" for i in range(blocks))
    return head + body + "### Environment\n\n- CPU: AMD EPYC, 2 CPUs\n"


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blocks", type=int, nargs="+", default=[1000, 2000, 4000, 8000, 16000])
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args(argv)
    print(f"== 9. PR comment: shorten() of an untrusted report.md to {LIMIT:,} characters "
          f"(median of {a.repeat}; before issue 26: 1,000/2,000/4,000 blocks 0.9/5.7/26 s)")
    print(f"   {'blocks':>7} {'report.md':>10} {'shorten':>11} {'neutralise':>11} {'ms per 1,000 blocks':>20}")
    for n in a.blocks:
        text = report(n)
        safe = neutralise(text)
        t_cut = median_ms(lambda: shorten(safe, LIMIT), a.repeat)
        t_neu = median_ms(lambda: neutralise(text), a.repeat)
        print(f"   {n:>7,} {len(text) / 1024:>8,.0f} KB {t_cut:>8.1f} ms {t_neu:>8.1f} ms {t_cut / n * 1000:>17.1f} ms")
    hostile = "<details>\n" * (4 * MIB // len("<details>\n"))
    t = median_ms(lambda: shorten(neutralise(hostile), LIMIT), a.repeat)
    print(f"   hostile: {len(hostile) / MIB:.0f} MiB of unclosed <details> lines, neutralised and cut: {t:,.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
