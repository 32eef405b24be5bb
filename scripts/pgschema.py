"""A schema of the benchmark's own on the test set-up's PostgreSQL (never
restarted, never shared with another run): what scripts/bench_ha.py and
scripts/bench_slow_backend.py put several daemons' store in."""

from __future__ import annotations

import contextlib
import os
import uuid
from typing import Iterator

import psycopg
from sqlalchemy import make_url

PG_URL = os.environ.get("PLUS_TEST_PG_URL",
                        "postgresql+psycopg://plus:plus@127.0.0.1:5432/plus_test")


@contextlib.contextmanager
def bench_store(prefix: str = "plus_bench") -> Iterator[str]:
    """A store URL on a new schema, dropped with everything in it at the end."""
    schema = f"{prefix}_{uuid.uuid4().hex[:8]}"
    base = make_url(PG_URL)
    admin = base.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield base.update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(
            hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP SCHEMA "{schema}" CASCADE')
