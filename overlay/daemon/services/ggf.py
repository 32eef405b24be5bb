"""Seed 003's verbs, as plus_query, plus_resquery, plus_setres and
plus_resqandset and the API's /ggf/* ask them (overlay.network.ggf turns the
seed's words into these arguments, and the answers into the seed's
fields)."""

from __future__ import annotations

from overlay.daemon.services.base import Context, Operation
from overlay.daemon.services.views import reservation_view
from overlay.language.model import NoCapacity, Reservation, ReservationError
from overlay.language.request import parse_idempotency_key
from overlay.network import reskey
from overlay.usecases.manager import Caller
from overlay.wire import codec


def query(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """QUERY: when a job of the request's shape would start if submitted
    now (its start is now, its end now + TimeNeeded)."""
    request = codec.reserve_request(args)
    args.done()
    start, how = context.manager.job_start(caller, request)
    if start is None:
        raise NoCapacity(f"no start can be estimated: {how}")
    return {"user": caller.user, "start": start, "how": how}


def resquery(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """RESQUERY: the request's shape from its start (the earliest start)
    and end (start + TimeNeeded); the ranges of start times up to
    ``last_start`` at which it would be granted now."""
    request = codec.reserve_request(args)
    last_start = args.time("last_start", "TimeSpec", True)
    args.done()
    ranges = context.manager.start_ranges(caller, request, last_start)
    answer = {"user": caller.user, "ranges": [list(r) for r in ranges]}
    if not ranges:
        answer["why"] = (f"no start between {max(request.start, args.now)} and {last_start} "
                         f"is free for {request.nodes} node(s) for {request.duration} s")
    return answer


def setres(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """SETRES: reserve at the request's start; the ResKey once (again to
    the same request retried with its idempotency key). With
    ``transactional``, the AR waits for plus_commit (a co-allocation's
    prepare). Never an AR held for a manager's approval: refused instead,
    as its client would take it for a reservation."""
    request = codec.reserve_request(args)
    transactional = args.flag("transactional")
    key = args.checked("idempotency_key", parse_idempotency_key)
    args.done()
    keys = _keys(context)
    ar = context.manager.reserve(caller, request, transactional, key, holdable=False)
    context.on_change([ar])
    return _with_reskey(context, ar, keys)


def resqandset(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """RESQANDSET: RESQUERY, then reserve at the earliest start found; the
    ResKey once."""
    request = codec.reserve_request(args)
    last_start = args.time("last_start", "TimeSpec", True)
    args.done()
    keys = _keys(context)
    ar = context.manager.reserve_earliest(caller, request, last_start, holdable=False)
    context.on_change([ar])
    return _with_reskey(context, ar, keys)


def _keys(context: Context) -> reskey.ResKeys:
    """The ResKey issuer, asked before a reservation is made for one."""
    if context.reskeys is None:
        raise ReservationError("this plus_scheduler issues no ResKeys")
    return context.reskeys


def _with_reskey(context: Context, ar: Reservation, keys: reskey.ResKeys) -> dict:
    """The view of a reservation SETRES or RESQANDSET made, with its
    ResKey: the only time the key is sent."""
    return {**reservation_view(ar, context.manager),
            "reskey": keys.issue(ar.id, ar.owner, ar.submission_time)}


OPERATIONS: dict[str, Operation] = {
    "query": query, "resquery": resquery, "setres": setres, "resqandset": resqandset}
