"""Parca profiles of profile reps: the collector and the run plugin (`run --profile parca`).

Per rep the collector records the wall-clock window (t0, t1) and the labels in
parca.json, and afterwards asks Parca for the merged profile of that window
(collectors.profilers.parca.client) into profile.pb.gz. parca-agent itself runs as a
service the user operates; stallscope does not start it.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from analysis.inputs.collector_facts import ParcaFacts
from analysis.inputs.host import HostFacts
from analysis.inputs.manifest import Profiling
from collectors.collector import ManifestSections, RepContext, RunFlag, RunFlags, RunSettings
from collectors.host.preflight import Finding, Preflight
from collectors.profilers.parca.client import (DEFAULT_TYPE, DEFAULT_URL_ENV, TOKEN_ENV, ParcaClient,
                                               ParcaError, pprof_bytes, pprof_sample_count, rfc3339,
                                               selector)


# --------------------------------------------------------------------------------------
# Per-rep collector.

class ParcaProfileCollector:
    """Record the window and labels of each rep; afterwards fetch its merged profile.

    parca-agent ships samples in batches (about every 10 s), so `collect` waits until
    `settle_s` after the window's end before asking; a runner can instead call `collect`
    for all reps at the end of the run.
    """

    def __init__(self, client: ParcaClient, comm: str = "redis-server",
                 labels: dict[str, str] | None = None, profile_type: str = DEFAULT_TYPE,
                 settle_s: float = 15.0):
        self.client, self.comm, self.profile_type = client, comm, profile_type
        self.labels = dict(labels or {})
        self.settle_s = settle_s

    def preflight(self) -> Preflight:
        pf = Preflight("parca")
        try:
            types = self.client.profile_types()
        except ParcaError as e:
            pf.findings.append(Finding("parca", False, str(e),
                                       "start the Parca server and parca-agent (docs/tma-collection.md)",
                                       blocking=True))
            return pf
        want = self.profile_type
        pf.findings.append(Finding("parca", want in types,
                                   f"Parca at {self.client.url} has profile types: {', '.join(types) or 'none'}",
                                   None if want in types else f"is parca-agent sending {want} to this server?",
                                   blocking=want not in types))
        return pf

    def query_for(self, ctx: RepContext) -> str:
        # Only labels the agent attaches (comm, its external labels) can select profiles;
        # the rep's own labels are recorded in parca.json, not queried.
        labels = {"comm": self.comm} if self.comm else {}
        labels.update(self.labels)
        return selector(labels, self.profile_type)

    def _meta_path(self, ctx: RepContext) -> Path:
        return Path(ctx.rep_dir) / "parca.json"

    def start(self, ctx: RepContext) -> None:
        Path(ctx.rep_dir).mkdir(parents=True, exist_ok=True)
        self._write(ctx, {"t0": time.time(), "t1": None, "query": self.query_for(ctx),
                          "labels": dict(getattr(ctx, "labels", None) or {}), "url": self.client.url,
                          "status": "recording"})

    def stop(self, ctx: RepContext) -> ParcaFacts:
        meta = self._read(ctx)
        meta.update(t1=time.time(), status="pending")
        self._write(ctx, meta)
        return ParcaFacts(status="pending", reason="profile is fetched from Parca after the rep")

    def collect(self, ctx: RepContext, wait: bool = True) -> ParcaFacts:
        """Fetch profile.pb.gz for the recorded window; its facts for rep.json."""
        meta = self._read(ctx)
        if meta.get("t0") is None or meta.get("t1") is None:
            return ParcaFacts(status="failed", reason=f"{self._meta_path(ctx)}: window not recorded "
                                                      "(start/stop not called)")
        if wait:
            delay = meta["t1"] + self.settle_s - time.time()
            if delay > 0:
                time.sleep(delay)
        try:
            resp = self.client.query(meta["query"], meta["t0"], meta["t1"], "pprof")
            data = pprof_bytes(resp)
        except ParcaError as e:
            meta.update(status="unavailable", reason=str(e))
            self._write(ctx, meta)
            return ParcaFacts(status="unavailable", reason=str(e))
        (Path(ctx.rep_dir) / "profile.pb.gz").write_bytes(data)
        meta.update(status="ok", reason=None, window=[rfc3339(meta["t0"]), rfc3339(meta["t1"])],
                    samples=pprof_sample_count(data), bytes=len(data))
        self._write(ctx, meta)
        return ParcaFacts(status="ok", file="profile.pb.gz", samples=meta["samples"])

    def _read(self, ctx: RepContext) -> dict[str, Any]:
        p = self._meta_path(ctx)
        return json.loads(p.read_text()) if p.exists() else {}

    def _write(self, ctx: RepContext, meta: dict[str, Any]) -> None:
        self._meta_path(ctx).write_text(json.dumps(meta, indent=2) + "\n")


class ParcaRepCollector(ParcaProfileCollector):
    """The runner's RepCollector: stop() also fetches the profile (after settle_s)."""
    name = "parca"

    def stop(self, ctx: RepContext) -> ParcaFacts:
        super().stop(ctx)
        return self.collect(ctx, wait=True)


# --------------------------------------------------------------------------------------
# Runner plugin hooks (collectors.runner.plugins.PLUGIN_MODULES). The token is never a run flag:
# the manifest keeps the command line and options, so it comes from the environment or
# a file named on the command line.

PROFILERS = ("parca",)


RUN_FLAGS = RunFlags(
    "Parca profiles (--profile parca)",
    "profile reps record their window; the merged CPU profile of that window is fetched "
    "from Parca (parca-agent must run as a service) into <variant>/<rep>/profile.pb.gz",
    (RunFlag("--parca-url", f"Parca base URL (default ${DEFAULT_URL_ENV})"),
     RunFlag("--parca-token-file", f"file holding the bearer token (default ${TOKEN_ENV}; never stored in the run)",
             metavar="PATH"),
     RunFlag("--parca-comm", "process name to select (comm label; default redis-server, '' for none)",
             default="redis-server"),
     RunFlag("--parca-label", "label the agent attaches (its --metadata-external-labels), repeatable",
             action="append", metavar="K=V"),
     RunFlag("--parca-settle", "wait after a window before querying, for the agent to ship (default 15)",
             default=15.0, parse=float, metavar="SECONDS")))


def client_from_options(options: RunSettings) -> ParcaClient:
    return ParcaClient.from_env(options.extra.get("parca_url"), options.extra.get("parca_token_file"))


def rep_collectors(options: RunSettings, kind: str) -> list[ParcaRepCollector]:
    if options.profile != "parca" or kind != "profile":
        return []
    extra = options.extra
    labels = {}
    for kv in extra.get("parca_label") or []:
        k, sep, v = kv.partition("=")
        if not sep or not k:
            raise ParcaError(f"--parca-label {kv!r}: expected KEY=VALUE")
        labels[k] = v
    return [ParcaRepCollector(client_from_options(options), comm=extra.get("parca_comm", "redis-server"),
                              labels=labels, settle_s=float(extra.get("parca_settle", 15.0)))]


def manifest_sections(options: RunSettings, host: HostFacts) -> ManifestSections:
    if options.profile != "parca":
        return ManifestSections()
    # The "profiling" block is the runner's; say where profiles come from without the token.
    # Reading the token file here (before any build) stops a run whose file is unreadable.
    extra = options.extra
    client = client_from_options(options)
    return ManifestSections(profiling=Profiling(
        profiler="parca", mode="separate", parca_url=client.url,
        comm=extra.get("parca_comm", "redis-server"), labels=list(extra.get("parca_label") or []),
        note="merged CPU profile per profile rep, from Parca's query API"))
