"""The events PluS tells of, their names and what each carries.

Names follow what sites script against: PBS's reservation hooks
(resv_confirm, resv_begin, resv_end), Moab's trigger event types (create,
modify, start, end with a negative offset, cancel, fail) and AWS's
capacity reservation events (an expiry warning ahead of the end). Every
transition of an AR is one event, made from the ar_log event of the change
that causes it (overlay.usecases.manager's ``Told``), in the same
transaction: a change that commits has its event, one refused has none.
"""

from __future__ import annotations

import json
from typing import Mapping

from overlay.reporting.accounting import (
    EVENT_APPROVAL_REQUESTED,
    EVENT_APPROVED,
    EVENT_DELETED,
    EVENT_DENIED,
    EVENT_MODIFIED,
    EVENT_SATISFIED,
    EVENT_START,
    EVENT_TERMINATED,
    EVENT_UNSATISFIED,
)

APPROVAL_REQUESTED = "reservation.approval_requested"
APPROVED = "reservation.approved"
DENIED = "reservation.denied"
GRANTED = "reservation.granted"
CHANGED = "reservation.changed"
STARTING_SOON = "reservation.starting_soon"
STARTED = "reservation.started"
ENDING_SOON = "reservation.ending_soon"
ENDED = "reservation.ended"
RELEASED = "reservation.released"
CANCELLED = "reservation.cancelled"
IN_ERROR = "reservation.error"
REPAIRED = "reservation.repaired"
NODES_BUSY = "reservation.nodes_busy"
OCCURRENCE_REFUSED = "reservation.occurrence_refused"
JOB_STARTED = "job.started"
JOB_ENDED = "job.ended"
JOB_PREEMPTED = "job.preempted"
"""A job lent an AR's idle slots that the AR's own job took back: the
AR's event (its owner and users see who used their nodes) and the job
owner's (told to expect a requeue or the end)."""

TYPES = (APPROVAL_REQUESTED, APPROVED, DENIED, GRANTED, CHANGED, NODES_BUSY, STARTING_SOON,
         STARTED, ENDING_SOON, ENDED, RELEASED, CANCELLED, IN_ERROR, REPAIRED, OCCURRENCE_REFUSED,
         JOB_STARTED, JOB_ENDED, JOB_PREEMPTED)
"""Every event type, in the order of an AR's life."""
CALENDAR_CHANGED = "calendar.changed"
"""What a stream that draws every AR (GET /v1/events?calendar=true) is
told of an event it may not see: only that the AR it names changed."""

BY_AR_LOG = {EVENT_MODIFIED: CHANGED, EVENT_START: STARTED, EVENT_TERMINATED: ENDED,
             EVENT_DELETED: CANCELLED, EVENT_UNSATISFIED: IN_ERROR, EVENT_SATISFIED: REPAIRED,
             EVENT_APPROVAL_REQUESTED: APPROVAL_REQUESTED, EVENT_APPROVED: APPROVED,
             EVENT_DENIED: DENIED}
"""The event of each ar_log event (8.1.9's words) a change reports."""


def reservation_event(kind: str, now: int, ar, key: str | None = None,
                      **extra: object) -> dict:
    """An AR's event as the event table holds it (EventRow's fields): the
    AR as scripts want it (id, name, owner, state, window, nodes), and
    ``extra`` (a notice's ``lead``, and ``notice`` when the AR's users
    are told at that lead)."""
    shown = {"id": ar.id, "name": ar.name, "owner": ar.owner, "state": ar.state.value,
             "start": ar.start, "end": ar.end, "nodes": ar.node_names,
             "message": ar.message}
    data = {"reservation": shown, **extra}
    return {"time": now, "type": kind, "ar_id": ar.id, "owner": ar.owner,
            "acl": ",".join(ar.acl), "data": json.dumps(data, separators=(",", ":")), "key": key}


def nodes_busy_event(now: int, ar, key: str, lead: int,
                     jobs: list[Mapping[str, object]]) -> dict:
    """An AR's nodes still run ``jobs`` that would run past its start,
    ``lead`` seconds before it: seen as the AR's events are, and by the
    jobs' owners, whom the access list then names."""
    event = reservation_event(NODES_BUSY, now, ar, key, lead=lead, jobs=list(jobs))
    owners = [str(job["owner"]) for job in jobs if str(job["owner"]) not in ar.acl]
    event["acl"] = ",".join(dict.fromkeys([*ar.acl, *owners]))
    return event


def occurrence_refused_event(now: int, series, start: int, reason: str) -> dict:
    """A series' occurrence that could not be granted (no nodes, a policy),
    seen as the series' ARs are; ``key`` makes it one event whichever
    daemon tells it. ``ar_id`` 0: no AR was made."""
    request = series.request
    shown = {"id": series.id, "owner": series.owner, "name": request.name,
             "rule": series.recurrence.rule}
    data = {"series": shown, "start": start, "end": start + request.duration, "reason": reason}
    return {"time": now, "type": OCCURRENCE_REFUSED, "ar_id": 0, "owner": series.owner,
            "acl": ",".join(request.users), "data": json.dumps(data, separators=(",", ":")),
            "key": f"series-{series.id}-{start}"}


def job_event(kind: str, now: int, ar: Mapping[str, object] | None, ar_id: int,
              job: Mapping[str, object]) -> dict:
    """A job's start or end in AR ``ar_id`` as the event table holds it:
    ``ar`` the AR as the store holds it then (its ``owner``, ``name`` and
    ``acl``; None: gone from the store). Seen as the AR's events are (its
    owner, its access list), and by the job's owner, whom the access list
    then names; with the AR gone, by the job's owner alone."""
    owner = str(job["owner"])
    shown = {"id": ar_id, "owner": ar["owner"], "name": ar["name"]} if ar else {"id": ar_id}
    acl = [entry for entry in str(ar["acl"]).split(",") if entry] if ar else []
    data = {"reservation": shown, "job": dict(job)}
    return {"time": now, "type": kind, "ar_id": ar_id,
            "owner": str(ar["owner"]) if ar else owner,
            "acl": ",".join(acl if owner in acl else [*acl, owner]) if ar else "",
            "data": json.dumps(data, separators=(",", ":")), "key": None}


def shown(event_id: int, kind: str, time: int, data: str) -> dict:
    """An event as the stream and a webhook carry it: its id, type and time
    beside what it tells."""
    return {"id": event_id, "type": kind, "time": time, **json.loads(data)}
