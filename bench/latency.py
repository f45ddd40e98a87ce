"""`make bench` figure 13: this host's DRAM and L3 load-to-use latency, and what measuring it costs.

collectors/host/latency.py's pointer chase (docs/memory-latency.md) over buffers sized from
this host's caches: the median ns per dependent load over the reps of each buffer, with its
distribution-free interval, the DRAM - L3 difference a report divides an out-of-cache cost
by, and the probe's wall time (compiling the probe the first time, then every run).

    .venv/bin/python bench/latency.py [--page 4k|thp] [--llc MIB]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from collectors.host import latency, machine  # noqa: E402

MiB = 1 << 20


def figure(page: str, llc_bytes: int | None) -> None:
    m = latency.measure(llc_bytes, page)
    conf = f"{m.confidence:.1%}"
    print(f"== 13. memory latency: a dependent-load pointer chase, {m.page} pages, CPU {m.cpu} "
          f"({m.cpu_model})")
    print(f"   DRAM  {m.dram_ns:7.1f} ns  [{m.dram_low:.1f}, {m.dram_high:.1f}] {conf}  over "
          f"{m.dram_bytes / MiB:.0f} MiB, {len(m.dram_values)} reps of {m.loads:,} loads")
    print(f"   L3    {m.llc_ns:7.1f} ns  [{m.llc_low:.1f}, {m.llc_high:.1f}] {conf}  over "
          f"{m.llc_bytes / MiB:.0f} MiB, {len(m.llc_values)} reps")
    if m.llc_rule_ns is not None:
        print(f"   (LLC/4 = {m.llc_rule_bytes / MiB:.0f} MiB measured {m.llc_rule_ns:.1f} ns: "
              f"not served by the L3 here)")
    print(f"   DRAM - L3 = {m.miss_ns():.1f} ns a dependent miss (a report's out-of-cache cost "
          f"per op / this = at least that many DRAM round trips)")
    print(f"   probe wall time {m.wall_s:.1f} s (LLC {(m.llc_source or 0) / MiB:.0f} MiB "
          f"{'as reported' if llc_bytes == machine.cache_sizes()['l3_bytes'] else 'as given'})")
    for note in m.notes:
        print(f"   note: {note}")


def main() -> int:
    ap = argparse.ArgumentParser(prog="bench/latency.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--page", choices=("4k", "thp"), default="4k",
                    help="page size of the buffers (default: %(default)s, as Redis runs)")
    ap.add_argument("--llc", type=float, metavar="MIB",
                    help="the LLC size to size the buffers from (default: this host's L3)")
    a = ap.parse_args()
    llc = round(a.llc * MiB) if a.llc else machine.cache_sizes()["l3_bytes"]
    figure(a.page, llc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
