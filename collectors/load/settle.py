"""Waiting for a restored keyspace to finish rehashing (Server.settle), for one server
or several at once: the rep must measure a settled dictionary, not the rehash a restored
RDB leaves behind."""
from __future__ import annotations

import time
from typing import Any

import redis

from analysis.errors import Failed
from analysis.inputs.repfacts import Settle

REHASHING = "mem_overhead_db_hashtable_rehashing"
SETTLE_HZ = 500


class SettleTimeout(Failed, RuntimeError):
    """A server still rehashing after the time allowed."""


def settle_together(ports: dict[str, int], host: str = "127.0.0.1", timeout_s: float = 300.0
                    ) -> dict[str, Settle]:
    """Wait for several servers at once: each one's cron rehashes in its own process, so
    two servers loaded side by side settle in the time of the slower one, not one after
    the other. Returns each server's settle facts, by the names given."""
    clients = {n: redis.Redis(host=host, port=p, socket_timeout=30) for n, p in ports.items()}
    out: dict[str, Settle] = {}
    raised: dict[str, Any] = {}
    t0 = time.monotonic()
    try:
        for n, c in clients.items():
            mem = c.info("memory")
            if REHASHING not in mem:
                out[n] = Settle(None, note=f"server does not report {REHASHING}; not waited for")
            elif int(mem[REHASHING]) == 0:
                out[n] = Settle(0.0)
            else:
                raised[n] = c.config_get("hz").get("hz")
                c.config_set("hz", SETTLE_HZ)
        waiting = set(raised)
        while waiting:
            for n in sorted(waiting):
                if int(clients[n].info("memory")[REHASHING]) == 0:
                    out[n] = Settle(round(time.monotonic() - t0, 3), SETTLE_HZ)
                    waiting.discard(n)
            if waiting and time.monotonic() - t0 > timeout_s:
                n = sorted(waiting)[0]
                raise SettleTimeout(f"server on port {ports[n]} still rehashing its keyspace "
                                    f"after {timeout_s:.0f} s (INFO memory {REHASHING} > 0)")
            if waiting:
                time.sleep(0.1)
    finally:
        for n, hz in raised.items():
            try:
                clients[n].config_set("hz", hz)
            except redis.RedisError:
                pass        # the server is gone: its stop() will say so
        for c in clients.values():
            c.close()
    return out
