"""Feed tokens in the store, so that every daemon honours them and a
revoked one is refused at once everywhere: each feed request reads its
token's row (one lookup by primary key). Only the secret's digest is kept
(overlay.feeds.tokens)."""

from __future__ import annotations

import time
from typing import NamedTuple

from sqlalchemy import BigInteger, delete, func
from sqlmodel import Field, SQLModel, select

from overlay.language.model import LimitExceeded, UnknownReservation
from overlay.persistence.store import Store, locked_write


class FeedTokenRow(SQLModel, table=True):
    __tablename__ = "feed_token"

    id: str = Field(primary_key=True)
    owner: str = Field(index=True)
    digest: str
    label: str = ""
    created: int = Field(sa_type=BigInteger)


class FeedToken(NamedTuple):
    """A token as its owner lists it: never the secret."""

    id: str
    owner: str
    label: str
    created: int


_TABLE = FeedTokenRow.__table__


class FeedTokens:
    """The store's feed tokens."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add(self, owner: str, token_id: str, digest: str, label: str, most: int) -> FeedToken:
        """Keep a new token of ``owner``; LimitExceeded when ``owner`` holds
        ``most`` already (counted under the store's write lock, so that
        requests at once cannot pass it together)."""
        with locked_write(self.store.engine, self.store.url) as session:
            held = session.exec(select(func.count()).select_from(_TABLE)
                                .where(_TABLE.c.owner == owner)).one()
            if held >= most:
                raise LimitExceeded(f"{owner} holds {held} feed tokens, the most allowed: "
                                    "revoke one first (plus_feed -R ID)")
            row = FeedTokenRow(id=token_id, owner=owner, digest=digest, label=label,
                               created=int(time.time()))
            session.add(row)
        return FeedToken(token_id, owner, label, row.created)

    def of(self, owner: str) -> list[FeedToken]:
        """``owner``'s tokens, oldest first."""
        with self.store.session() as session:
            rows = session.exec(select(FeedTokenRow).where(FeedTokenRow.owner == owner)
                                .order_by(FeedTokenRow.created, FeedTokenRow.id)).all()
            return [FeedToken(row.id, row.owner, row.label, row.created) for row in rows]

    def remove(self, owner: str, token_id: str) -> None:
        """Revoke ``owner``'s token ``token_id``: from the commit on, no
        daemon serves a feed for it."""
        with locked_write(self.store.engine, self.store.url) as session:
            gone = session.exec(delete(FeedTokenRow).where(FeedTokenRow.id == token_id,
                                                           FeedTokenRow.owner == owner))
            if gone.rowcount == 0:
                raise UnknownReservation(f"{owner} has no feed token {token_id} "
                                         "(plus_feed -l lists them)")

    def kept(self, token_id: str) -> tuple[str, str] | None:
        """The owner and digest of token ``token_id``, or None."""
        with self.store.session() as session:
            row = session.get(FeedTokenRow, token_id)
            return None if row is None else (row.owner, row.digest)
