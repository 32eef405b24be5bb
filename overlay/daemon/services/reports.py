"""What the ARs and jobs add up to: the calendar page's window, reserved and
used node-hours (over a period, or of one AR in its window so far), and
plus_account -l's records for the HTTP API."""

from __future__ import annotations

from overlay.daemon.services.base import Context, Operation
from overlay.daemon.services.views import summary_rows
from overlay.kit.users import listed
from overlay.language import limits
from overlay.language.model import InvalidRequest, PermissionDenied
from overlay.reporting.accounting import charged, jobs_by_ar, used
from overlay.reporting.endedjobs import so_far
from overlay.usecases.manager import Caller
from overlay.wire import codec


def calendar(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """The calendar page's window [start, end): the nodes (with their
    slots and properties, which the page filters rows by), the ARs there
    as plus_status's summary rows with their nodes, ended and cancelled
    ones too while the daemon keeps them (the page draws them as the
    legend says), and the backend's jobs there. The page polls with the
    ``revision`` it has: while no AR has changed, the answer has only the
    jobs."""
    start, end = args.time("start", "start", True), args.time("end", "end", True)
    since = args.integer("since", 0, 2**62, what="since")
    args.done()
    if not start < end <= start + limits.MAX_CALENDAR_SPAN:
        raise InvalidRequest(f"the window must end after it starts and span at most "
                             f"{limits.MAX_CALENDAR_SPAN // 86400} days")
    manager = context.manager
    jobs = [[bar.id, bar.owner, bar.kind, bar.start, end if bar.end is None else bar.end,
             ",".join(bar.nodes)] for bar in manager.job_bars(args.now)
            if bar.start < end and (bar.end is None or bar.end > start)]
    revision = manager.revision
    if since == revision:
        return {"revision": revision, "unchanged": True, "jobs": jobs}
    ars = manager.status(start=start, end=end, expired=limits.MAX_WINDOW_ARS)
    if len(ars) > limits.MAX_WINDOW_ARS:
        raise InvalidRequest(f"the window holds {len(ars)} ARs, more than "
                             f"{limits.MAX_WINDOW_ARS}: ask for a shorter one")
    return {"revision": revision, "now": args.now, "nodes": list(manager.capacity()),
            "slots": manager.capacity(), "properties": manager.node_properties(),
            "ars": summary_rows(ars, True, False), "jobs": jobs}


def usage(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """Reserved and used node-hours of [start, end) from the reporting
    file, as spans (owner, start, end, nodes): each AR's hold on its hosts
    (plus_account's figures), and each job in an AR (its acct record)."""
    start, end = args.time("start", "-s", True), args.time("end", "-e", True)
    owner = codec.owner(args)
    args.done()
    end = min(end, args.now)
    if end <= start:
        raise InvalidRequest("the period's end must be later than its start")
    owners = {owner} if owner else set()
    ars, jobs = context.reported.current()
    answer = {"reserved": [_span(ar.owner, begin, finish, len(hosts))
                           for ar, begin, finish, hosts in used(ars, start, end, owners, set())],
              "used": [_span(job.owner, max(job.start, start), min(job.end, end), 1)
                       for job in jobs if job.start < end and job.end > start and
                       (not owners or job.owner in owners)]}
    spans = len(answer["reserved"]) + len(answer["used"])
    if spans > limits.MAX_SPANS:
        raise InvalidRequest(f"the period holds {spans} spans, more than {limits.MAX_SPANS}: "
                             "ask for a shorter one, or for one owner")
    return answer


def ar_usage(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """AR ``id``'s node-seconds reserved and used so far while it is in its
    window, and the nodes running its jobs now (the rate ``used`` grows
    at until a job starts or ends): for its owner, the users its access
    list names and managers, as its events are. The ARs in their window are
    walked (ended jobs are summed for all of them, as /metrics does)."""
    ar_id = codec.ar_id(args, True)
    args.done()
    manager = context.manager
    [ar] = manager.status(ar_id=ar_id)
    if not (caller.is_manager or ar.owner == caller.user
            or listed(ar.acl, caller.user, caller.groups)):
        raise PermissionDenied(f"AR {ar_id}'s usage is for its owner, the users its access "
                               "list names and managers")
    row = next((row for row in so_far(context.ended_jobs, manager.tally.in_window(),
                                      manager.inventory.jobs, args.now) if row.id == ar_id), None)
    if row is None:
        raise InvalidRequest(f"AR {ar_id} is not in its window (state {ar.state.value}): its "
                             "usage so far is shown while it runs; GET /v1/usage gives a "
                             "period's")
    return {"id": ar_id, "now": args.now, "start": ar.start, "end": ar.end, "nodes": row.nodes,
            "reserved": row.reserved, "used": row.used, "busy": row.busy}


def _span(owner: str, start: int, end: int, nodes: int) -> dict:
    return {"owner": owner, "start": start, "end": end, "nodes": nodes}


def accounting(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """plus_account -l's records (for the HTTP API): each AR's use of its
    hosts within [start, end), from the reporting file, a page of
    ``limit`` from ``offset``; malformed records are skipped, as
    plus_account skips them."""
    limit = args.integer("limit", 1, limits.MAX_PAGE, what="limit") or limits.PAGE
    offset = args.integer("offset", 0, limits.MAX_COUNT, what="offset") or 0
    start = args.time("start", "-s") or 0
    end = min(args.time("end", "-e") or args.now, args.now)
    owners, nodes = args.strings("owners"), args.strings("nodes")
    args.done()
    if end <= start:
        raise InvalidRequest("the period's end must be later than its start")
    ars, jobs = context.reported.current()
    found = list(used(ars, start, end, set(owners or ()), set(nodes or ())))
    jobs_of = jobs_by_ar(jobs)
    return {"total": len(found), "items": [
        {"id": ar.id, "owner": ar.owner, "name": ar.name, "state": ar.last_state,
         "from": begin, "to": finish, "seconds": finish - begin,
         "node_seconds": (finish - begin) * len(hosts),
         "slot_seconds": (finish - begin) * sum(hosts.values()), "hosts": hosts,
         **dict(zip(("asked_node_seconds", "used_node_seconds", "released_node_seconds"),
                    charged(ar, begin, finish, hosts, jobs_of, start, end), strict=True))}
        for ar, begin, finish, hosts in found[offset:offset + limit]]}


OPERATIONS: dict[str, Operation] = {
    "calendar": calendar, "usage": usage, "ar_usage": ar_usage, "accounting": accounting}
