"""Parents the tool did not print, from children that sum to them.

AMD's pipeline utilization prints each level-2 node as an absolute share of all dispatch
slots, and a level-1 bucket's two children sum to it (perf's amdzen4/5 pipeline.json:
backend_bound_memory = backend_bound x ratio, backend_bound_cpu = backend_bound x (1 -
ratio)). `perf stat -M PipelineL2` alone prints no level-1 line, so backend_bound is the
sum of its children, marked derived and said in a warning. Intel's and Arm's deeper
levels are not shares of their parent's slots, so nothing is derived for them.
"""
from __future__ import annotations

from analysis.tma.model import FROM_INVALID, TmaResult, TmaValue


def derive_parents(result: TmaResult) -> None:
    cat = result.catalog
    if not cat.children_sum_to_parent:
        return
    present = {(v.name, v.scope, v.interval) for v in result.values}
    kids: dict[str, list[str]] = {}
    for node in cat.nodes.values():
        if node.parent and not node.stage2:
            kids.setdefault(node.parent, []).append(node.path)
    made: set[str] = set()
    for scope, interval in sorted({(v.scope, v.interval) for v in result.values},
                                  key=lambda k: (str(k[0]), k[1] or 0.0)):
        at = {v.name: v for v in result.values if v.scope == scope and v.interval == interval}
        for parent, children in kids.items():
            if (parent, scope, interval) in present or not all(c in at for c in children):
                continue
            vals = [at[c] for c in children]
            usable = all(v.value is not None and not v.implausible for v in vals)
            node = cat[parent]
            muxes = [v.multiplex for v in vals if v.multiplex is not None]
            result.values.append(TmaValue(
                name=parent, value=sum(v.value for v in vals) if usable else None,
                domain=node.domain, level=node.level, scope=scope, interval=interval,
                multiplex=min(muxes) if muxes else None, raw_name=parent,
                line=min(v.line for v in vals),
                implausible=None if usable else FROM_INVALID,
                derived=" + ".join(c.rsplit(".", 1)[-1] for c in children)))
            made.add(parent)
    if made:
        result.warnings.append(
            f"level 1 not printed (as with `perf stat -M PipelineL2` alone): {', '.join(sorted(made))} "
            "derived as the sum of their level-2 children, which are absolute shares of all slots "
            "(add PipelineL1 to print it)")
