"""Job commands given at a standby daemon, carried out by the leading one.

Several daemons serve one PostgreSQL store and only the leader runs the
native scheduler. A standby records plus_qsub, plus_qdel, plus_qhold and
plus_qrls (and a ResKey claim's job) as a request in the store
(``native_request``), says so on the store's jobs channel and waits for
the answer. The leader takes each new request (woken by the channel, or
by the feed's poll), runs the very operation its own socket runs, and
writes the answer back: a job command meets the same checks and refusals
at every daemon, and nothing is kept where no scheduler runs it. A request
that no leader takes within ANSWER_WITHIN seconds (a failover under way)
is withdrawn and refused: never half-done.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

from sqlalchemy import delete, text, update
from sqlmodel import Session, select

from overlay.api.plugin import (
    ChangeFeed,
    InvalidRequest,
    PermissionDenied,
    RequestError,
    ReservationError,
    StoreError,
    channel_of,
    database_errors,
)
from overlay_native.jobstore import JobRequestRow, JobStore
from overlay_native.submit import SubmitError

log = logging.getLogger("plus.native")
ANSWER_WITHIN = 15.0
"""Seconds a standby waits for a leader to take its request (failover takes a few)."""
LOOK_EVERY = 0.05
"""Seconds between a waiting standby's looks at its request."""
_FORGOTTEN = 3600
"""Seconds after which an answer nobody fetched (its standby died) is removed."""
_ERRORS = {error.__name__: error for error in (SubmitError, InvalidRequest, PermissionDenied,
                                              RequestError, ReservationError, StoreError)}
"""The refusals a command's answer carries across, by name, as they were raised."""


@dataclass(frozen=True)
class Relayed:
    """The caller of a relayed command, as the standby's socket found it."""

    uid: int
    user: str
    groups: tuple[str, ...]
    is_manager: bool


Operation = Callable[[Any, dict], Any]


class Relay:
    """The request table, as a standby asks and as the leader answers."""

    def __init__(self, store: JobStore) -> None:
        self.engine, self.url = store.engine, store.url
        self.shared = not store.url.startswith("sqlite")
        self.channel = channel_of(store.url) + "_jobs"
        self._operations: dict[str, Operation] = {}
        self._fence: Callable[[], bool] = lambda: True
        self._feed: ChangeFeed | None = None
        self._purged = 0.0

    # -- at a standby ----------------------------------------------------------------------------

    def ask(self, op: str, caller: Any, args: dict) -> Any:
        """The leader's answer to ``op``, or its refusal raised as it was raised there."""
        request = self._record(op, caller, args)
        deadline = time.monotonic() + ANSWER_WITHIN
        while True:
            state, reply = self._look(request)
            if state == "done":
                self._forget(request)
                return _answer(json.loads(reply))
            if time.monotonic() >= deadline:
                if state == "new" and self._withdraw(request):
                    raise ReservationError(
                        f"no leading plus_scheduler took the job command within "
                        f"{ANSWER_WITHIN:g} s (a failover under way?); nothing was done: try "
                        "again")
                if time.monotonic() >= deadline + ANSWER_WITHIN:
                    raise ReservationError("the leading plus_scheduler took the job command but "
                                           "gave no answer (it may have stopped); plus_qstat "
                                           "shows what was done")
            time.sleep(LOOK_EVERY)

    def _record(self, op: str, caller: Any, args: dict) -> int:
        who = {"uid": caller.uid, "user": caller.user, "groups": list(caller.groups),
               "is_manager": caller.is_manager}
        with database_errors(self.url), Session(self.engine) as session, session.begin():
            row = JobRequestRow(op=op, caller=json.dumps(who), args=json.dumps(args),
                                created=int(time.time()))
            session.add(row)
            session.flush()
            if self.shared:
                session.connection().execute(text("SELECT pg_notify(:channel, '')"),
                                             {"channel": self.channel})
            return row.id

    def _look(self, request: int) -> tuple[str | None, str | None]:
        with database_errors(self.url), Session(self.engine) as session:
            row = session.get(JobRequestRow, request)
            return (row.state, row.reply) if row else (None, None)

    def _withdraw(self, request: int) -> bool:
        """Whether the request was still untaken (and is gone now)."""
        return self._change(delete(JobRequestRow).where(JobRequestRow.id == request,
                                                        JobRequestRow.state == "new"))

    def _forget(self, request: int) -> None:
        self._change(delete(JobRequestRow).where(JobRequestRow.id == request))

    def _change(self, statement) -> bool:
        with database_errors(self.url), Session(self.engine) as session, session.begin():
            return session.exec(statement).rowcount == 1

    # -- at the leader ---------------------------------------------------------------------------

    def serve(self, operations: dict[str, Operation], fence: Callable[[], bool]) -> None:
        """Carry out the standbys' requests from now on, while ``fence`` says
        this daemon leads (PostgreSQL only: on SQLite one daemon serves)."""
        self._operations, self._fence = operations, fence
        if self.shared and self._feed is None:
            self._feed = ChangeFeed(self.url, self.channel, self.take)
            self._feed.start()

    def stop(self) -> None:
        if self._feed is not None:
            self._feed.stop()

    def take(self) -> None:
        """Carry out each new request once: it is claimed before it runs, so
        one its standby withdrew meanwhile never runs."""
        with database_errors(self.url), Session(self.engine) as session:
            requests = session.exec(select(JobRequestRow).where(JobRequestRow.state == "new")
                                    .order_by(JobRequestRow.id)).all()
        for request in requests:
            if not self._fence():
                return
            if self._change(update(JobRequestRow).where(JobRequestRow.id == request.id,
                                                        JobRequestRow.state == "new")
                            .values(state="taken")):
                reply = json.dumps(self._run(request))
                self._change(update(JobRequestRow).where(JobRequestRow.id == request.id)
                             .values(state="done", reply=reply))
        if time.monotonic() - self._purged > _FORGOTTEN:
            self._purged = time.monotonic()
            self._change(delete(JobRequestRow).where(
                JobRequestRow.created < int(time.time()) - _FORGOTTEN))

    def _run(self, request: JobRequestRow) -> dict:
        who = json.loads(request.caller)
        caller = Relayed(who["uid"], who["user"], tuple(who["groups"]), who["is_manager"])
        try:
            return {"data": self._operations[request.op](caller, json.loads(request.args))}
        except tuple(_ERRORS.values()) as error:
            kind = next(c.__name__ for c in type(error).__mro__ if c.__name__ in _ERRORS)
            return {"error": kind, "message": str(error)}
        except Exception:
            log.exception("job command %s relayed from a standby failed", request.op)
            return {"error": "ReservationError", "message": "internal error in the leading "
                    "plus_scheduler; its log has the details"}


def _answer(reply: dict) -> Any:
    if "error" in reply:
        raise _ERRORS[reply["error"]](reply["message"])
    return reply["data"]
