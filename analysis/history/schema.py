"""The history store's tables (SQLAlchemy Core: one code path for SQLite and PostgreSQL)
and the ordered migrations between schema versions.

Version 1 held runs, their metric points and their in-run changes. Version 2 added each
point's rep values (so two stored runs compare with the run's own statistics), run
marks ("good"), detected change points and the marks users put on them, keyed by
(job, series, first run after the shift) so a mark survives re-detection. Old versions'
table definitions stay here: a migration must be testable from a real old store.
Version 3 added the indexes the queries of a long history need (docs/history.md, "At
scale"): a job's runs in time order, one series of a job across runs.
"""
from __future__ import annotations

from typing import Callable

import sqlalchemy as sa

from analysis.errors import UserError

SCHEMA_VERSION = 3


def tables(md: sa.MetaData, version: int = SCHEMA_VERSION) -> dict[str, sa.Table]:
    """The tables of `version` (1 to 3) on `md`."""
    t = {"meta": sa.Table("meta", md, sa.Column("key", sa.String(64), primary_key=True),
                          sa.Column("value", sa.Text, nullable=False))}
    run_cols = [
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_key", sa.String(200), nullable=False, unique=True),  # idempotency
        sa.Column("job", sa.String(200), nullable=False, index=version < 3),
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("started_at", sa.String(40), nullable=False),   # ISO 8601 UTC
        sa.Column("host", sa.String(200), nullable=False, server_default=""),
        sa.Column("case_name", sa.String(200), nullable=False, server_default=""),
        sa.Column("size", sa.String(40), nullable=False, server_default=""),
        sa.Column("base", sa.String(100), nullable=False, server_default=""),
        sa.Column("cand", sa.String(100), nullable=False, server_default=""),
        sa.Column("commits", sa.JSON, nullable=False),            # variant -> commit
        sa.Column("variants", sa.JSON, nullable=False),           # variant -> spec/version/...
        sa.Column("environment", sa.JSON, nullable=False),
        sa.Column("report", sa.Text, nullable=False, server_default=""),
        sa.Column("meta", sa.JSON, nullable=False),
        sa.Column("ingested_at", sa.String(40), nullable=False),
    ]
    if version >= 2:
        run_cols.append(sa.Column("mark", sa.String(40), nullable=True))
    if version >= 3:          # runs(job): the job's runs in time order, read from the index
        run_cols.append(sa.Index("ix_runs_job_started", "job", "started_at", "id"))
    t["runs"] = sa.Table("runs", md, *run_cols)
    point_extra = [sa.Column("values", sa.JSON)] if version >= 2 else []   # the reps' values
    t["points"] = sa.Table(
        "points", md, *point_extra,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("series", sa.Text, nullable=False),
        sa.Column("variant", sa.String(100), nullable=False),
        sa.Column("value", sa.Float, nullable=False),
        sa.Column("low", sa.Float), sa.Column("high", sa.Float),   # spread of the reps
        sa.Column("n", sa.Integer, nullable=False, server_default="0"),
        sa.Column("unit", sa.String(40), nullable=False, server_default=""),
        sa.Column("higher_is_better", sa.Boolean, nullable=False),
        sa.UniqueConstraint("run", "series", "variant"),
        # version 3: one series across runs (its runs then filtered by job through runs.id)
        sa.Index("ix_points_series_run", "series", "variant", "run") if version >= 3
        else sa.Index("ix_points_series", "series", "variant"))
    t["changes"] = sa.Table(
        "changes", md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("series", sa.Text, nullable=False),
        sa.Column("rel", sa.Float), sa.Column("rel_low", sa.Float), sa.Column("rel_high", sa.Float),
        sa.Column("verdict", sa.String(40), nullable=False, server_default=""),
        sa.UniqueConstraint("run", "series"))
    if version >= 2:
        t.update(_detection_tables(md))
    return t


def _detection_tables(md: sa.MetaData) -> dict[str, sa.Table]:
    """Version 2: detected change points and the marks users put on them."""
    cp = sa.Table(
        "change_points", md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("job", sa.String(200), nullable=False),
        sa.Column("series", sa.Text, nullable=False),
        sa.Column("first_run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("last_run_before", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE")),
        sa.Column("shift", sa.Float), sa.Column("shift_low", sa.Float), sa.Column("shift_high", sa.Float),
        sa.Column("direction", sa.String(20), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False, server_default="change point"),  # or in-run
        sa.Column("movers", sa.JSON, nullable=False),
        sa.Column("detected_at", sa.String(40), nullable=False),
        sa.UniqueConstraint("job", "series", "first_run"))
    marks = sa.Table(
        "marks", md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("job", sa.String(200), nullable=False),
        sa.Column("series", sa.Text, nullable=False),
        sa.Column("first_run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("mark", sa.String(40), nullable=False),
        sa.Column("note", sa.Text, nullable=False, server_default=""),
        sa.Column("marked_at", sa.String(40), nullable=False),
        sa.UniqueConstraint("job", "series", "first_run"))
    return {"change_points": cp, "marks": marks}


def _v1_to_v2(conn: sa.Connection) -> None:
    conn.execute(sa.text("ALTER TABLE runs ADD COLUMN mark VARCHAR(40)"))
    conn.execute(sa.text('ALTER TABLE points ADD COLUMN "values" JSON'))
    md = sa.MetaData()
    new = tables(md, 2)
    for name in ("change_points", "marks"):
        new[name].create(conn)


def _v2_to_v3(conn: sa.Connection) -> None:
    # The composite indexes replace the ones they extend (a prefix index only costs writes).
    conn.execute(sa.text("DROP INDEX ix_runs_job"))
    conn.execute(sa.text("DROP INDEX ix_points_series"))
    new = tables(sa.MetaData(), 3)
    for ix in (*new["runs"].indexes, *new["points"].indexes):
        ix.create(conn)


# MIGRATIONS[v] turns a version-v store into version v+1.
MIGRATIONS: dict[int, Callable[[sa.Connection], None]] = {1: _v1_to_v2, 2: _v2_to_v3}


class SchemaError(UserError):
    """The store is newer than this stallscope, or not a stallscope history store."""


def stored_version(conn: sa.Connection) -> int | None:
    if not sa.inspect(conn).has_table("meta"):
        return None
    v = conn.execute(sa.text("SELECT value FROM meta WHERE key = 'schema_version'")).scalar()
    return int(v) if v is not None else None


def migrate(engine: sa.Engine) -> list[str]:
    """Create the schema, or bring an older one to SCHEMA_VERSION; the steps taken.
    One transaction, under a lock on PostgreSQL, so two runners starting at once do not
    both create or migrate."""
    steps = []
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(7244501)"))
        v = stored_version(conn)
        if v is None:
            md = sa.MetaData()
            tables(md)
            md.create_all(conn)
            conn.execute(sa.text("INSERT INTO meta (key, value) VALUES ('schema_version', :v)"),
                         {"v": str(SCHEMA_VERSION)})
            return [f"created schema version {SCHEMA_VERSION}"]
        if v > SCHEMA_VERSION:
            raise SchemaError(f"history store has schema version {v}, newer than this stallscope "
                              f"({SCHEMA_VERSION}): upgrade stallscope")
        while v < SCHEMA_VERSION:
            MIGRATIONS[v](conn)
            v += 1
            conn.execute(sa.text("UPDATE meta SET value = :v WHERE key = 'schema_version'"), {"v": str(v)})
            steps.append(f"migrated to schema version {v}")
    return steps


def create_version(engine: sa.Engine, version: int) -> None:
    """An empty store at an old version (tests of the migrations)."""
    with engine.begin() as conn:
        md = sa.MetaData()
        tables(md, version)
        md.create_all(conn)
        conn.execute(sa.text("INSERT INTO meta (key, value) VALUES ('schema_version', :v)"),
                     {"v": str(version)})
