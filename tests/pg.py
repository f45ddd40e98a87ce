"""A real PostgreSQL server for the tests: Debian's postgresql-15 binaries, a temporary
data directory, 127.0.0.1 on a free port, trust authentication, stopped at the end.
PostgreSQL refuses to run as root: as root, initdb and the server run as `postgres`."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator

PG_BIN = Path(os.environ.get("STALLSCOPE_PG_BIN", "/usr/lib/postgresql/15/bin"))


def _as_postgres(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server(tmp: Path) -> Iterator[str]:
    """Yields a postgresql:// URL of a fresh database; the server is gone afterwards."""
    if not (PG_BIN / "postgres").exists():
        raise RuntimeError(f"PostgreSQL server binaries not found in {PG_BIN}: "
                           "apt-get install postgresql (make setup installs it)")
    data = tmp / "pgdata"
    data.mkdir(parents=True)
    tmp.chmod(0o755)
    if os.geteuid() == 0:
        shutil.chown(tmp, "postgres")
        shutil.chown(data, "postgres")
    user = "postgres" if os.geteuid() == 0 else os.environ.get("USER", "postgres")
    subprocess.run(_as_postgres([str(PG_BIN / "initdb"), "-D", str(data), "-U", user, "-A", "trust",
                                 "--no-sync"]), check=True, capture_output=True)
    port = _free_port()
    log = tmp / "postgres.log"
    proc = subprocess.Popen(_as_postgres([str(PG_BIN / "postgres"), "-D", str(data), "-p", str(port),
                                          "-h", "127.0.0.1", "-k", str(tmp), "-c", "fsync=off"]),
                            stdout=subprocess.DEVNULL, stderr=open(log, "wb"), start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while subprocess.run([str(PG_BIN / "pg_isready"), "-h", "127.0.0.1", "-p", str(port)],
                             capture_output=True).returncode != 0:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)
        subprocess.run([str(PG_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", user,
                        "stallscope"], check=True, capture_output=True)
        yield f"postgresql://{user}@127.0.0.1:{port}/stallscope"
    finally:
        proc.terminate()          # "smart" shutdown after clients leave; then fast
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
