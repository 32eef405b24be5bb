"""The reservation commands' operations: plus_reserve, plus_modify,
plus_cancel, plus_destroy, plus_commit, plus_abort, plus_status and
plus_availnodes."""

from __future__ import annotations

from typing import Callable

from overlay.daemon.services import listing, series
from overlay.daemon.services.base import Context, Operation
from overlay.daemon.services.views import (
    allocation_view,
    reservation_view,
    reservation_views,
    summary_rows,
)
from overlay.language import limits
from overlay.language.model import NoCapacity, Reservation
from overlay.language.request import RequestError, parse_idempotency_key, parse_name
from overlay.usecases.manager import Caller
from overlay.wire import codec


def reserve(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    request = codec.reserve_request(args)
    if args.text("repeat") is not None:         # a recurring series (plus_reserve --repeat)
        return series.reserve_series(context, caller, args, request)
    if args.strings("except"):
        raise RequestError("--except: it leaves out occurrences of a series; give --repeat too")
    transactional = args.flag("transactional")
    key = args.checked("idempotency_key", parse_idempotency_key)
    verify = args.flag("verify")
    start_now = args.flag("start_now")
    force = args.flag("force")
    args.done()
    manager = context.manager
    try:
        ar = manager.reserve(caller, request, transactional, key, verify, start_now, force=force)
    except NoCapacity as exc:
        if not verify:
            raise
        # qrsub -w v: the scheduler's reasons, all of them, as 8.1.9 prints them
        return {"verified": False, "reasons": list(exc.reasons) or [str(exc)]}
    if verify:      # qrsub -w v: what it would be, nothing stored
        return {"verified": True, "allocations": [allocation_view(a) for a in ar.allocations],
                "granted_pe": ar.granted_pe}
    context.on_change([ar])
    return reservation_view(ar, manager)


def modify(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    ar = modified(context, caller, codec.ar_id(args, required=True), args)
    context.on_change([ar])
    return reservation_view(ar, context.manager)


def modified(context: Context, caller: Caller, ar_id: int, args: codec.Arguments) -> Reservation:
    """plus_modify's changes, read from ``args``, made to AR ``ar_id``
    (also a ResKey claim's modify)."""
    start, end = args.time("start", "-s"), args.time("end", "-e")
    duration = args.integer("duration", 1, limits.MAX_DURATION, what="-D")
    nodes, users = args.count("nodes", "-n"), codec.users(args)
    repair = codec.repair(args)
    notify_start = args.leads("notify_start", "--notify-start")
    notify_end = args.leads("notify_end", "--notify-end")
    clear_notice = args.leads("clear_notice", "--clear-notice")
    idle_release, release_when_done = args.idle_release(), args.maybe_flag("release_when_done")
    transactional = args.flag("transactional")
    args.done()
    return context.manager.modify(caller, ar_id, start=start, end=end, duration=duration,
                                  nodes=nodes, users=users, transactional=transactional,
                                  repair=repair, notify_start=notify_start,
                                  notify_end=notify_end, idle_release=idle_release,
                                  release_when_done=release_when_done,
                                  clear_notice=clear_notice)


def _selected(context: Context, caller: Caller, args: codec.Arguments,
              operation: Callable) -> list[dict]:
    """plus_cancel and plus_destroy: an AR by id, or every AR of an owner."""
    ar_id, owner, transactional = codec.ar_id(args), codec.owner(args), args.flag("transactional")
    args.done()
    ars = operation(caller, ar_id, owner, transactional)
    context.on_change(ars)
    return reservation_views(ars, context.manager)


def cancel(context: Context, caller: Caller, args: codec.Arguments) -> list[dict]:
    return _selected(context, caller, args, context.manager.cancel)


def destroy(context: Context, caller: Caller, args: codec.Arguments) -> list[dict]:
    return _selected(context, caller, args, context.manager.destroy)


def _settled(context: Context, caller: Caller, args: codec.Arguments,
             operation: Callable) -> dict:
    """plus_commit and plus_abort: a -T operation of one AR."""
    ar_id = codec.ar_id(args, required=True)
    args.done()
    ar = operation(caller, ar_id)
    context.on_change([ar])
    return reservation_view(ar, context.manager)


def commit(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    return _settled(context, caller, args, context.manager.commit)


def abort(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    return _settled(context, caller, args, context.manager.abort)


def status(context: Context, caller: Caller, args: codec.Arguments) -> list | dict:
    """Full views, or with ``summary`` only the table's columns as lists
    (a tenth of the bytes: listings of many ARs stay fast). With
    ``limit``, one page: ``{"total", "items"}`` from ``offset``, so that
    no answer is unbounded (the HTTP API always asks so)."""
    limit = args.integer("limit", 1, limits.MAX_PAGE, what="limit")
    offset = args.integer("offset", 0, limits.MAX_COUNT, what="offset") or 0
    ar_id, owner = codec.ar_id(args), codec.owner(args)
    start, end = args.time("start", "-s"), args.time("end", "-e")
    expired = args.integer("expired", 0, limits.MAX_COUNT, what="-ne") or 0
    summary, with_nodes = args.flag("summary"), args.flag("nodes")
    messages = args.flag("messages")
    key = args.checked("idempotency_key", parse_idempotency_key)
    owners = args.names("owners", "-u", codec.owner_names)
    refs = args.names("refs", "-ar", codec.ar_references)
    wanted_states = listing.states(args.text("states"))
    name, node = args.text("name"), args.text("node")
    access = args.checked("access", lambda value: parse_name(value, "access"))
    order = listing.sort_order(args.text("sort"))
    args.done()
    manager = context.manager
    if key is not None:      # the caller's AR made with that key, if any
        ar_id = manager.made_with_key(caller.user, key)
    ars = [] if key is not None and ar_id is None else manager.status(
        ar_id=ar_id, owner=owner, start=start, end=end, expired=expired, owners=owners,
        refs=refs, lingering=manager.lingering)
    ars = listing.ordered(listing.narrowed(ars, wanted_states, name, node, access), order)
    total = len(ars)
    if limit is not None:
        ars = ars[offset:offset + limit]
    if summary and limit is None:
        return context.summaries.encoded(ars, with_nodes, messages, manager.copies())
    shown = summary_rows(ars, with_nodes, messages) if summary else reservation_views(ars, manager)
    return shown if limit is None else {"total": total, "items": shown}


def availnodes(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    start, end = args.time("start", "-s", True), args.time("end", "-e", True)
    args.done()
    nodes = context.manager.available_nodes(start, end)
    return {"start": start, "end": end, "count": len(nodes), "nodes": nodes}


OPERATIONS: dict[str, Operation] = {
    "reserve": reserve, "modify": modify, "cancel": cancel, "destroy": destroy,
    "commit": commit, "abort": abort, "status": status, "availnodes": availnodes}
