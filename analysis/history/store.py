"""The history store: runs, their metric points and in-run changes, change points and
marks, in SQLite (a file, nothing to set up) or PostgreSQL (many runners), through one
SQLAlchemy Core code path. Ingest is idempotent: a run is keyed by its run id, creation
time and job, so ingesting it again returns the stored row and adds nothing.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from analysis.clock import now_iso
from analysis.errors import UserError
from analysis.history.extract import Identity, extract
from analysis.history.schema import migrate, tables

DEFAULT_PATH = "history.sqlite"
RUN_MARKS = ("good", "bad", "")
CHANGE_MARKS = ("acknowledged", "expected", "false-positive")
RUN_CHUNK = 5000       # run ids per query (bind parameters stay far below the drivers' limits)


class HistoryError(UserError):
    """Bad input to the store (a path without results, an unknown run or mark)."""


@dataclass
class StoredRun:
    id: int
    job: str
    run_id: str
    started_at: str
    commits: dict[str, str]           # role ("base"/"cand") and variant name -> commit
    variants: dict[str, Any]
    host: str = ""
    case: str = ""
    size: str = ""
    base: str = ""
    cand: str = ""
    report: str = ""
    mark: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    verdicts: dict[str, str] = field(default_factory=dict)   # series -> in-run verdict

    def commit(self, role: str = "cand") -> str:
        return self.commits.get(role) or self.commits.get(getattr(self, role, ""), "") or ""


@dataclass
class Incoming:
    """One run to store: its results.json and what the caller knows beside it."""
    results: dict
    job: str | None = None                 # default: the case name and its --set overrides
    commits: dict[str, str] | None = None
    report_url: str = ""
    meta: dict | None = None
    source: str = ""                       # the file it was read from, for errors


def url_of(where: str | os.PathLike | None) -> str:
    """None -> $STALLSCOPE_HISTORY or ./history.sqlite; a path -> sqlite; URLs as given
    (postgresql://... uses psycopg 3)."""
    where = str(where or os.environ.get("STALLSCOPE_HISTORY") or DEFAULT_PATH)
    if where.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + where.split("://", 1)[1]
    if "://" in where:
        return where
    return f"sqlite:///{Path(where).expanduser().resolve()}"


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    # WAL: readers (trend pages) do not block the writer; NORMAL sync is durable across a
    # crash of stallscope (not of the OS) and makes ingest ~10x faster than FULL.
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def _copy(conn: sa.Connection, table: sa.Table, rows: list[dict]) -> None:
    """PostgreSQL: rows into `table` by COPY, in the connection's transaction. An INSERT of
    many rows goes through psycopg one statement per row (executemany) or, as multi-row
    VALUES, through a parse of each long statement; COPY streams them: 3-4x faster. Only
    for rows nobody else can hold (the points of runs this transaction inserted)."""
    cols = [c for c in table.c if c.name != "id"]
    as_json = [isinstance(c.type, sa.JSON) for c in cols]
    names = ", ".join(conn.dialect.identifier_preparer.quote(c.name) for c in cols)
    with conn.connection.driver_connection.cursor() as cur:
        with cur.copy(f"COPY {table.name} ({names}) FROM STDIN") as cp:
            for row in rows:
                cp.write_row([json.dumps(row[c.name]) if j and row[c.name] is not None else row[c.name]
                              for c, j in zip(cols, as_json)])


def default_job(who: Identity) -> str:
    """The case name, and the run's --set overrides when it has any: the points of a sweep
    (dataset.keys=1M, =10M ...) are separate series, not one series over time."""
    sets = [str(o) for o in who.case.overrides]
    name = who.case.name or "adhoc"
    return f"{name} [{', '.join(sets)}]" if sets else name


class HistoryStore:
    def __init__(self, engine: sa.Engine):
        self.engine = engine
        self.t = tables(sa.MetaData())
        self.migrations = migrate(engine)

    @classmethod
    def open(cls, url: str | os.PathLike | None = None) -> "HistoryStore":
        u = url_of(url)
        try:
            engine = sa.create_engine(u, future=True, pool_pre_ping=True)
            if engine.dialect.name == "sqlite":
                sa.event.listen(engine, "connect", _sqlite_pragmas)
            return cls(engine)
        except sa.exc.OperationalError as e:
            raise HistoryError(f"cannot open the history store {sa.engine.make_url(u).render_as_string(hide_password=True)}: "
                               f"{str(e.orig).strip().splitlines()[0] if e.orig else e}") from None

    # --- ingest -------------------------------------------------------------------------
    def ingest_results(self, results: dict, *, job: str | None = None,
                       commits: dict[str, str] | None = None, report_url: str = "",
                       meta: dict | None = None, source: str = "") -> StoredRun:
        return self.ingest_batch([Incoming(results, job, commits, report_url, meta, source)])[0]

    def ingest_batch(self, incoming: list[Incoming]) -> list[StoredRun]:
        """Store many runs in one transaction (one multi-row insert per table): a run
        already stored, or stored by another writer meanwhile, adds nothing; the stored
        runs in the order given."""
        prepared = [self._prepare(x) for x in incoming]
        fresh: dict[str, tuple] = {}
        for row, points, changes in prepared:        # the same run twice: the first counts
            fresh.setdefault(row["run_key"], (row, points, changes))
        with self.engine.begin() as conn:
            ids = self._insert_runs(conn, [fresh[k][0] for k in sorted(fresh)])
            pts = [dict(run=rid, **p.__dict__) for k, rid in ids.items() for p in fresh[k][1]]
            chs = [dict(run=rid, **c.__dict__) for k, rid in ids.items() for c in fresh[k][2]]
            for table, rows in ((self.t["points"], pts), (self.t["changes"], chs)):
                if rows and conn.dialect.name == "postgresql":
                    _copy(conn, table, rows)
                elif rows:
                    conn.execute(table.insert(), rows)   # sqlite3's executemany: one statement, in C
        by_key = self._runs_by_key(list(fresh))
        return [by_key[row["run_key"]] for row, _, _ in prepared]

    def _prepare(self, x: Incoming) -> tuple[dict, list, list]:
        """The run's row, its points and its in-run changes."""
        results = x.results
        where = x.source or f"results.json of run {results.get('run_id')}"
        who = Identity.of(results, where)
        job = x.job or default_job(who)
        env = results.get("environment") or {}
        base, cand = who.base, who.cand
        all_commits = {**who.commits(), **(x.commits or {})}
        for role, name in (("base", base), ("cand", cand)):
            if name in all_commits and role not in all_commits:
                all_commits[role] = all_commits[name]
        row = dict(run_key=f"{job}|{who.run_id}|{who.created}", job=job,
                   run_id=who.run_id, started_at=who.created or now_iso(),
                   host=(x.meta or {}).get("host") or os.uname().nodename,
                   case_name=who.case.name, size=who.case.size, base=base, cand=cand,
                   commits=all_commits, variants=env.get("variants") or {},
                   environment={k: env.get(k) for k in ("host", "tools", "placement", "profiling")},
                   report=x.report_url or "", meta=x.meta or {}, ingested_at=now_iso())
        points, changes = extract(results, where)
        return row, points, changes

    def _insert_runs(self, conn: sa.Connection, rows: list[dict]) -> dict[str, int]:
        """Insert the runs not stored yet (rows sorted by run_key: two writers lock the
        keys they share in the same order, so they wait for each other, never deadlock);
        run_key -> id of those this transaction inserted. INSERT ... ON CONFLICT DO
        NOTHING: a run another writer stores meanwhile is skipped, with its points."""
        if not rows:
            return {}
        runs = self.t["runs"]
        if conn.dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        stmt = insert(runs).on_conflict_do_nothing(index_elements=["run_key"]).returning(runs.c.run_key, runs.c.id)
        return {k: i for k, i in conn.execute(stmt, rows)}

    def _runs_by_key(self, keys: list[str]) -> dict[str, StoredRun]:
        runs, ch = self.t["runs"], self.t["changes"]
        out: dict[str, StoredRun] = {}
        with self.engine.connect() as conn:
            for i in range(0, len(keys), 500):
                found = conn.execute(sa.select(runs).where(runs.c.run_key.in_(keys[i:i + 500]))).all()
                verdicts: dict[int, dict[str, str]] = {r.id: {} for r in found}
                for c in conn.execute(sa.select(ch.c.run, ch.c.series, ch.c.verdict)
                                      .where(ch.c.run.in_(list(verdicts)))):
                    verdicts[c.run][c.series] = c.verdict
                out.update((r.run_key, self._stored(r, verdicts[r.id])) for r in found)
        return out

    # --- queries ------------------------------------------------------------------------
    def _stored(self, r: Any, verdicts: dict[str, str] | None = None) -> StoredRun:
        return StoredRun(id=r.id, job=r.job, run_id=r.run_id, started_at=r.started_at,
                         commits=dict(r.commits or {}), variants=dict(r.variants or {}), host=r.host,
                         case=r.case_name, size=r.size, base=r.base, cand=r.cand, report=r.report,
                         mark=r.mark, meta=dict(r.meta or {}), verdicts=verdicts or {})

    def run(self, run_id: int | str) -> StoredRun:
        runs, ch = self.t["runs"], self.t["changes"]
        with self.engine.connect() as conn:
            q = sa.select(runs)
            q = q.where(runs.c.id == int(run_id)) if str(run_id).isdigit() else q.where(runs.c.run_id == str(run_id))
            r = conn.execute(q.order_by(runs.c.id.desc())).first()
            if r is None:
                raise HistoryError(f"no stored run {run_id!r} (stallscope history runs lists them)")
            verdicts = {c.series: c.verdict for c in conn.execute(sa.select(ch).where(ch.c.run == r.id))}
        return self._stored(r, verdicts)

    def runs(self, job: str | None = None) -> list[StoredRun]:
        """Oldest first (by start time, then id)."""
        runs = self.t["runs"]
        q = sa.select(runs).order_by(runs.c.started_at, runs.c.id)
        if job is not None:
            q = q.where(runs.c.job == job)
        with self.engine.connect() as conn:
            return [self._stored(r) for r in conn.execute(q)]

    def jobs(self) -> list[str]:
        runs = self.t["runs"]
        with self.engine.connect() as conn:
            return [r[0] for r in conn.execute(sa.select(runs.c.job).distinct().order_by(runs.c.job))]

    def find_run(self, job: str, commits: dict[str, str]) -> StoredRun | None:
        """The newest run of `job` that measured the same commits (skip what ran already)."""
        for r in reversed(self.runs(job)):
            if all(r.commits.get(k) == v for k, v in commits.items()):
                return r
        return None

    def last_good(self, job: str) -> StoredRun | None:
        return next((r for r in reversed(self.runs(job)) if r.mark == "good"), None)

    def points(self, run: int) -> list[dict]:
        p = self.t["points"]
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(sa.select(p).where(p.c.run == run).order_by(p.c.series, p.c.variant))]

    def series(self, job: str, variant: str = "cand", names: list[str] | None = None,
               reps: bool = True) -> dict[str, list[tuple[StoredRun, dict]]]:
        """series -> [(run, point)] oldest first, for one variant role; only the series in
        `names` when given; without the reps' values (`values`) when reps is False (a plot
        needs the median and spread only, and decoding a million small JSON lists is most
        of a long history's query time)."""
        return self.series_by_variant(job, (variant,), names, reps).get(variant, {})

    def series_by_variant(self, job: str, variants: tuple[str, ...] = ("cand", "base"),
                          names: list[str] | None = None, reps: bool = True
                          ) -> dict[str, dict[str, list[tuple[StoredRun, dict]]]]:
        """variant role -> series(job, role, names, reps), in one query."""
        p = self.t["points"]
        job_runs = self.runs(job)
        order = {r.id: i for i, r in enumerate(job_runs)}
        cols = [c for c in p.c if reps or c.name != "values"]
        rows: list[dict] = []
        with self.engine.connect() as conn:
            # The job's run ids rather than a join on runs.job: PostgreSQL then reads the
            # points by the (run, ...) index, where for a join it estimates a sequential
            # scan of the whole table cheaper (7x slower at a million points).
            for i in range(0, len(job_runs), RUN_CHUNK):
                q = sa.select(*cols).where(p.c.run.in_([r.id for r in job_runs[i:i + RUN_CHUNK]]),
                                           p.c.variant.in_(variants))
                if names is not None:
                    q = q.where(p.c.series.in_(names))
                res = conn.execute(q)
                keys = list(res.keys())
                rows += [dict(zip(keys, r)) for r in res.all()]     # fetchall: not a call per row
        # by run, then by name: PostgreSQL returns a run's rows in heap order, and the
        # series' order must not depend on the database
        rows.sort(key=lambda r: (order[r["run"]], r["series"]))
        out: dict[str, dict[str, list[tuple[StoredRun, dict]]]] = {v: {} for v in variants}
        for row in rows:
            out[row["variant"]].setdefault(row["series"], []).append((job_runs[order[row["run"]]], row))
        return out

    def changes(self, run: int) -> list[dict]:
        ch = self.t["changes"]
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(sa.select(ch).where(ch.c.run == run).order_by(ch.c.series))]

    def save_change_points(self, job: str, found: list) -> None:
        """Replace the job's detected change points (marks live in their own table and
        stay); each found one gets its stored id."""
        cp = self.t["change_points"]
        with self.engine.begin() as conn:
            conn.execute(cp.delete().where(cp.c.job == job))
            seen = set()
            for c in found:
                if (c.series, c.first_run.id) in seen:      # in-run and change point at one run
                    continue
                seen.add((c.series, c.first_run.id))
                c.id = conn.execute(cp.insert().values(
                    job=job, series=c.series, first_run=c.first_run.id,
                    last_run_before=c.last_before.id if c.last_before else None,
                    shift=c.shift, shift_low=c.shift_low, shift_high=c.shift_high,
                    direction=c.direction, kind=c.kind, detected_at=now_iso(),
                    movers=[m.__dict__ for m in c.movers])).inserted_primary_key[0]

    def stored_change_points(self, job: str | None = None) -> list[dict]:
        cp, m = self.t["change_points"], self.t["marks"]
        q = sa.select(cp, m.c.mark, m.c.note).select_from(cp.outerjoin(
            m, sa.and_(m.c.job == cp.c.job, m.c.series == cp.c.series, m.c.first_run == cp.c.first_run)))
        if job is not None:
            q = q.where(cp.c.job == job)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(q.order_by(cp.c.job, cp.c.first_run, cp.c.series))]

    # --- marks --------------------------------------------------------------------------
    def mark_run(self, run_id: int, mark: str) -> None:
        if mark not in RUN_MARKS:
            raise HistoryError(f"run mark {mark!r}: one of {', '.join(m or '(empty)' for m in RUN_MARKS)}")
        runs = self.t["runs"]
        with self.engine.begin() as conn:
            if not conn.execute(runs.update().where(runs.c.id == run_id).values(mark=mark or None)).rowcount:
                raise HistoryError(f"no stored run {run_id}")

    def set_culprit(self, run_id: int, bisection: dict[str, Any]) -> None:
        """Keep what bisecting the range behind this run found (its `meta.bisect`: status,
        culprit commit and subject, the range, why, where its report is); the alert and
        `history changes` show it beside the range."""
        self.set_meta(run_id, "bisect", bisection)

    def set_meta(self, run_id: int, key: str, value: Any) -> None:
        """Set one key of a stored run's meta: what the scheduled job kept on it after the
        run was stored (`bisect`, `alerted`)."""
        runs = self.t["runs"]
        with self.engine.begin() as conn:
            row = conn.execute(sa.select(runs.c.meta).where(runs.c.id == run_id)).first()
            if row is None:
                raise HistoryError(f"no stored run {run_id}")
            meta = {**(row.meta or {}), key: value}
            conn.execute(runs.update().where(runs.c.id == run_id).values(meta=meta))

    def mark(self, change_id: int, mark: str, note: str = "") -> None:
        """Mark a detected change point; kept by (job, series, first run) across re-detection."""
        if mark not in CHANGE_MARKS:
            raise HistoryError(f"change mark {mark!r}: one of {', '.join(CHANGE_MARKS)}")
        cp, marks = self.t["change_points"], self.t["marks"]
        with self.engine.begin() as conn:
            c = conn.execute(sa.select(cp).where(cp.c.id == change_id)).first()
            if c is None:
                raise HistoryError(f"no change point {change_id} (stallscope history changes lists them)")
            key = dict(job=c.job, series=c.series, first_run=c.first_run)
            conn.execute(marks.delete().where(*(marks.c[k] == v for k, v in key.items())))
            conn.execute(marks.insert().values(**key, mark=mark, note=note, marked_at=now_iso()))

    def marks(self, job: str) -> dict[tuple[str, int], tuple[str, str]]:
        m = self.t["marks"]
        with self.engine.connect() as conn:
            return {(r.series, r.first_run): (r.mark, r.note)
                    for r in conn.execute(sa.select(m).where(m.c.job == job))}
