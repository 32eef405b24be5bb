"""Install the ARCo model: each version not yet in sge_version, item by
item, all in one transaction, as Grid Engine's dbwriter upgrades its
database. Installing again changes nothing, and two dbwriters starting
together on one PostgreSQL database take turns (an advisory lock; on
SQLite every transaction holds the write lock)."""

from __future__ import annotations

import re

from sqlalchemy import Connection, Engine, text

from overlay.arco import ddl

VERSIONS = ((0, ddl.JOBS), (5, ddl.AR))
"""(v_id, items) of every model version, in order."""
LOCK_KEY = 0x4152436F       # "ARCo": the advisory lock of the model and of each batch
SQLITE = (
    (r"\btimestamp\b", "text"),
    (r"\(([\w.]+) - ([\w.]+)\)::interval", r"unixepoch(\1) - unixepoch(\2)"),
    (r"SUM\((\w+)\)::interval", r"SUM(\1)"),
    (r"\bAS group\b", 'AS "group"'),
    (r"CREATE OR REPLACE VIEW", "CREATE VIEW"),
)
"""The model's SQL for SQLite, which has no interval type: timestamps are
text in UTC, ``YYYY-MM-DD HH:MM:SS`` (SQLite's own datetime form: read as
is, sorted as times, compared with '1970-01-02' as the appendix does);
durations (wait_time, turnaround_time, job_duration, ar_duration) are
whole seconds; ``group`` is quoted, which SQLite requires; a view is made
anew (the item before dropped it), SQLite having no CREATE OR REPLACE."""


def statement(dialect: str, sql: str) -> str:
    """An item's SQL for the database."""
    if dialect == "sqlite":
        for pattern, replacement in SQLITE:
            sql = re.sub(pattern, replacement, sql)
    return sql


def lock(connection: Connection) -> None:
    """Hold the model's lock until the transaction ends (PostgreSQL; a
    SQLite transaction of the store's engines holds the write lock)."""
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": LOCK_KEY})


def install(engine: Engine) -> list[int]:
    """Bring the database to the newest model; the versions installed now."""
    dialect = engine.dialect.name
    if dialect not in ("postgresql", "sqlite"):
        raise ValueError(f"ARCo needs PostgreSQL or SQLite, not {dialect}")
    with engine.begin() as connection:
        lock(connection)
        connection.exec_driver_sql(statement(dialect, ddl.VERSION_TABLE))
        done = set(connection.execute(text("SELECT v_id FROM sge_version")).scalars())
        installed = []
        for version, items in VERSIONS:
            if version in done:
                continue
            for _, sql in items:
                connection.exec_driver_sql(statement(dialect, sql))
            installed.append(version)
    return installed
