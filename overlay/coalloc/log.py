"""The coordinator's durable log: every step is written (and committed)
before it is taken, so a coordinator killed at any instant knows on its
next start what it may have done at each site. SQLite by default, or any
store URL plus_scheduler takes (overlay.persistence.store.make_engine).

A co-allocation's ``state`` is its last logged step:
  querying    nothing asked of any site yet
  preparing   pending reservations asked for (``attempt``, at ``start``),
              each site's idempotency key logged before the request
  committing  the decision to commit is logged: every site commits
  aborting    the decision to abort this attempt is logged
  committed, aborted, cancelled   done
  moving      a committed one asked every site to move to ``target`` (-T)
  move-committing   the decision to move is logged: every site commits
  cancelling  the decision to cancel a committed one is logged: every site
              cancels (a site not reached, on a retry or at recovery)
No decision logged means abort (presumed abort): a move not decided leaves
the co-allocation where it was.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field

from sqlalchemy import (
    BigInteger,
    Column,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    insert,
    select,
    update,
)

from overlay.persistence.store import database_errors, make_engine

METADATA = MetaData()
COALLOCATIONS = Table(
    "coallocation", METADATA,
    Column("id", String, primary_key=True),
    Column("created", BigInteger, nullable=False),
    Column("state", String, nullable=False),
    Column("duration", Integer, nullable=False),
    Column("earliest", BigInteger, nullable=False),
    Column("latest", BigInteger, nullable=False),
    Column("attempt", Integer, nullable=False, default=0),
    Column("start", BigInteger),
    Column("target", BigInteger),
    Column("message", Text, nullable=False, default=""))
SITES = Table(
    "coalloc_site", METADATA,
    Column("coalloc_id", String, primary_key=True),
    Column("site", String, primary_key=True),
    Column("resources", Text, nullable=False),
    Column("key", String),
    Column("ar_id", Integer),
    Column("reskey", String),
    Column("state", String, nullable=False, default="none"))
FINISHED = ("committed", "aborted", "cancelled")


@dataclass
class SiteRecord:
    site: str
    resources: str
    key: str | None = None
    ar_id: int | None = None
    reskey: str | None = None
    state: str = "none"          # none, prepared, committed, aborted


@dataclass
class CoAllocation:
    id: str
    created: int
    state: str
    duration: int
    earliest: int
    latest: int
    attempt: int = 0
    start: int | None = None
    target: int | None = None
    message: str = ""
    sites: dict[str, SiteRecord] = field(default_factory=dict)

    def view(self, reskeys: bool = False) -> dict:
        """The co-allocation as the commands print it; its ResKeys only when
        asked (they are shown once, when it is made)."""
        return {"id": self.id, "state": self.state, "start": self.start,
                "end": None if self.start is None else self.start + self.duration,
                "duration": self.duration, "attempt": self.attempt, "message": self.message,
                "target": self.target,
                "sites": {name: {"resources": s.resources, "ar_id": s.ar_id, "state": s.state,
                                 **({"reskey": s.reskey} if reskeys else {})}
                          for name, s in sorted(self.sites.items())}}


class Log:
    def __init__(self, url: str) -> None:
        """Open (or make) the log: OSError if its file or folder cannot be
        used, StoreUnavailable (one line) if it is not a database."""
        with database_errors(url):
            self.engine = make_engine(url)
            METADATA.create_all(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    def create(self, duration: int, earliest: int, latest: int,
               resources: dict[str, str]) -> CoAllocation:
        coalloc = CoAllocation(f"C{int(time.time())}-{secrets.token_hex(4)}", int(time.time()),
                               "querying", duration, earliest, latest,
                               sites={site: SiteRecord(site, text) for site, text in
                                      resources.items()})
        with self.engine.begin() as connection:
            connection.execute(insert(COALLOCATIONS), [{
                "id": coalloc.id, "created": coalloc.created, "state": coalloc.state,
                "duration": duration, "earliest": earliest, "latest": latest, "attempt": 0,
                "message": ""}])
            connection.execute(insert(SITES), [{"coalloc_id": coalloc.id, "site": s.site,
                                                "resources": s.resources, "state": "none"}
                                               for s in coalloc.sites.values()])
        return coalloc

    def step(self, coalloc: CoAllocation, **changes) -> None:
        """Log the co-allocation's new state (and attempt, start, message)."""
        for name, value in changes.items():
            setattr(coalloc, name, value)
        with self.engine.begin() as connection:
            connection.execute(update(COALLOCATIONS).where(COALLOCATIONS.c.id == coalloc.id)
                               .values(**changes))

    def site(self, coalloc: CoAllocation, site: str, **changes) -> None:
        """Log a site's new key, AR, ResKey or state."""
        record = coalloc.sites[site]
        for name, value in changes.items():
            setattr(record, name, value)
        with self.engine.begin() as connection:
            connection.execute(update(SITES).where(SITES.c.coalloc_id == coalloc.id,
                                                   SITES.c.site == site).values(**changes))

    def load(self, coalloc_id: str) -> CoAllocation | None:
        with self.engine.connect() as connection:
            row = connection.execute(select(COALLOCATIONS).where(
                COALLOCATIONS.c.id == coalloc_id)).first()
            if row is None:
                return None
            sites = connection.execute(select(SITES).where(SITES.c.coalloc_id == coalloc_id))
            return CoAllocation(row.id, row.created, row.state, row.duration, row.earliest,
                                row.latest, row.attempt, row.start, row.target, row.message,
                                {s.site: SiteRecord(s.site, s.resources, s.key, s.ar_id, s.reskey,
                                                    s.state) for s in sites})

    def unfinished(self) -> list[str]:
        with self.engine.connect() as connection:
            return [row.id for row in connection.execute(
                select(COALLOCATIONS.c.id).where(COALLOCATIONS.c.state.not_in(FINISHED))
                .order_by(COALLOCATIONS.c.created))]

    def all(self) -> list[str]:
        with self.engine.connect() as connection:
            return [row.id for row in connection.execute(
                select(COALLOCATIONS.c.id).order_by(COALLOCATIONS.c.created))]
