"""The event table and the webhooks in the store.

Events go in with the change they tell of (``Store.create/save/remove``'s
``events``, EventRow), so ids commit in order and every daemon reads the
same sequence: a stream resumes after the last id it was given, a webhook
after the last id its receiver took (its ``cursor``, kept here so that a
new leader goes on where the last one stopped). Events are kept for
``KEEP_SECONDS``; a reader further behind is told what it missed.
"""

from __future__ import annotations

import time
from typing import Iterable, NamedTuple

from sqlalchemy import BigInteger, delete, func, insert, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, SQLModel, select

from overlay.language.model import LimitExceeded, UnknownReservation
from overlay.persistence.store import EventRow, Store, locked_write

KEEP_SECONDS = 7 * 86400
"""How long events are kept: a stream or a receiver down for longer
resumes with a gap, which it is told of."""

_EVENTS = EventRow.__table__


class Event(NamedTuple):
    """One stored event: its id, when, its type, the AR, who may see it
    (the AR's owner and access list) and what it tells (JSON)."""

    id: int
    time: int
    type: str
    ar_id: int
    owner: str
    acl: tuple[str, ...]
    data: str


_COLUMNS = (_EVENTS.c.id, _EVENTS.c.time, _EVENTS.c.type, _EVENTS.c.ar_id, _EVENTS.c.owner,
            _EVENTS.c.acl, _EVENTS.c.data)


def _event(row) -> Event:
    return Event(row.id, row.time, row.type, row.ar_id, row.owner,
                 tuple(filter(None, row.acl.split(","))), row.data)


class WebhookRow(SQLModel, table=True):
    """A webhook: where the events its owner may see are POSTed (``every``:
    a manager's, every AR's), signed with its secret; ``cursor``, the last
    event its receiver took."""

    __tablename__ = "webhook"

    id: str = Field(primary_key=True)
    owner: str = Field(index=True)
    every: bool = False
    url: str
    secret: str
    types: str = ""
    lead: int | None = None
    created: int = Field(sa_type=BigInteger)
    cursor: int = Field(default=0, sa_type=BigInteger)
    delivered: int = Field(default=0, sa_type=BigInteger)
    failures: int = 0
    last_error: str = ""


class Webhook(NamedTuple):
    """A webhook as the deliverer and its owner see it (the secret is the
    deliverer's only)."""

    id: str
    owner: str
    every: bool
    url: str
    secret: str
    types: tuple[str, ...]
    lead: int | None
    created: int
    cursor: int
    delivered: int
    failures: int
    last_error: str


def _hook(row: WebhookRow) -> Webhook:
    return Webhook(row.id, row.owner, row.every, row.url, row.secret,
                   tuple(filter(None, row.types.split(","))), row.lead, row.created,
                   row.cursor, row.delivered, row.failures, row.last_error)


_HOOKS = WebhookRow.__table__


class EventLog:
    """The store's events and webhooks."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # -- events ------------------------------------------------------------------

    def head(self) -> int:
        """The last event's id (0 before any): one read of the primary key's end."""
        with self.store.session() as session:
            return session.exec(select(func.max(_EVENTS.c.id))).one() or 0

    def oldest(self) -> int:
        """The first event kept (0 when none is)."""
        with self.store.session() as session:
            return session.exec(select(func.min(_EVENTS.c.id))).one() or 0

    def after(self, after: int, most: int) -> list[Event]:
        """At most ``most`` events after id ``after``, in order: one range
        read of the primary key, whatever the table holds."""
        with self.store.session() as session:
            rows = session.exec(select(*_COLUMNS).where(_EVENTS.c.id > after)
                                .order_by(_EVENTS.c.id).limit(most)).all()
        return [_event(row) for row in rows]

    def of_ars(self, ar_ids: Iterable[int], types: Iterable[str], upto: int) -> list[Event]:
        """The events of ``types`` of the ARs ``ar_ids`` up to id ``upto``,
        in order: what a new leader reads once of the ARs it watches (the
        table holds a week of events)."""
        ar_ids = sorted(set(ar_ids))
        if not ar_ids:
            return []
        with self.store.session() as session:
            rows = session.exec(select(*_COLUMNS).where(
                _EVENTS.c.ar_id.in_(ar_ids), _EVENTS.c.type.in_(list(types)),
                _EVENTS.c.id <= upto).order_by(_EVENTS.c.id)).all()
        return [_event(row) for row in rows]

    def add_once(self, event: dict) -> bool:
        """Put an event the clock causes, once by its ``key`` whichever
        daemon tries (a new leader after a crash tries again); whether it
        was put now."""
        try:
            with locked_write(self.store.engine, self.store.url) as session:
                if session.exec(select(_EVENTS.c.id).where(_EVENTS.c.key == event["key"])).first():
                    return False
                session.connection().execute(insert(_EVENTS), [event])
        except IntegrityError:
            return False
        return True

    def prune(self, before: int) -> int:
        """Drop the events older than ``before``; how many."""
        with locked_write(self.store.engine, self.store.url) as session:
            return session.exec(delete(EventRow).where(EventRow.time < before)).rowcount

    # -- webhooks ----------------------------------------------------------------

    def add_hook(self, hook: Webhook, most: int) -> Webhook:
        """Keep a new webhook, which takes the events after the last one now;
        LimitExceeded when its owner holds ``most`` (counted under the
        store's write lock, so that requests at once cannot pass it together)."""
        with locked_write(self.store.engine, self.store.url) as session:
            held = session.exec(select(func.count()).select_from(_HOOKS)
                                .where(_HOOKS.c.owner == hook.owner)).one()
            if held >= most:
                raise LimitExceeded(f"{hook.owner} holds {held} webhooks, the most allowed: "
                                    "delete one first (DELETE /v1/webhooks/ID)")
            head = session.exec(select(func.max(_EVENTS.c.id))).one() or 0
            row = WebhookRow(id=hook.id, owner=hook.owner, every=hook.every, url=hook.url,
                             secret=hook.secret, types=",".join(hook.types), lead=hook.lead,
                             created=int(time.time()), cursor=head)
            session.add(row)
            session.flush()
            return _hook(row)

    def hooks(self, owner: str | None = None) -> list[Webhook]:
        """The webhooks of ``owner`` (None: all), oldest first."""
        with self.store.session() as session:
            query = select(WebhookRow).order_by(WebhookRow.created, WebhookRow.id)
            if owner is not None:
                query = query.where(WebhookRow.owner == owner)
            return [_hook(row) for row in session.exec(query).all()]

    def remove_hook(self, hook_id: str, owner: str | None) -> None:
        """Delete a webhook (``owner``'s, or with None, anyone's: a manager)."""
        with locked_write(self.store.engine, self.store.url) as session:
            query = delete(WebhookRow).where(WebhookRow.id == hook_id)
            if owner is not None:
                query = query.where(WebhookRow.owner == owner)
            if session.exec(query).rowcount == 0:
                raise UnknownReservation(f"no webhook {hook_id}" + (
                    f" of {owner}" if owner is not None else "") + " (GET /v1/webhooks lists them)")

    def delivered(self, hook_id: str, cursor: int, count: int) -> None:
        """The receiver took the events up to ``cursor`` (``count`` of them
        posted): it goes on after it, whichever daemon leads."""
        with self.store.session() as session, session.begin():
            session.exec(update(WebhookRow).where(WebhookRow.id == hook_id).values(
                cursor=cursor, delivered=WebhookRow.delivered + count, failures=0,
                last_error=""))

    def failed(self, hook_id: str, failures: int, error: str) -> None:
        """A delivery failed (the ``failures``-th in a row), and why."""
        with self.store.session() as session, session.begin():
            session.exec(update(WebhookRow).where(WebhookRow.id == hook_id).values(
                failures=failures, last_error=error[:200]))
