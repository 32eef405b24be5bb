"""An AR as the commands and the HTTP API show it: the full view of
plus_status -r, and the summary rows of a listing. What the view needs
beyond the AR it asks the use cases."""

from __future__ import annotations

from overlay.language.model import Allocation, Reservation, State
from overlay.usecases import approval
from overlay.usecases.manager import Manager
from overlay.wire import codec

MAINTENANCE_MARK = "[M]"
"""What a maintenance AR's name starts with in plus_status's table and the
calendar (the seeds' columns stay as they are)."""


def summary_rows(ars: list[Reservation], with_nodes: bool, messages: bool) -> list[list]:
    """plus_status's table columns of each AR, a list each (a tenth of a
    view's bytes: listings of many ARs stay fast); a maintenance AR's name
    marked."""
    # State is a str enum: JSON writes its letter, without Enum.value's slow lookup
    return [[ar.id, MAINTENANCE_MARK + ar.name if ar.request.maint else ar.name, ar.owner,
             ar.state, ar.start, ar.end,
             ",".join(ar.node_names) if with_nodes else "",
             *((ar.message,) if messages else ())] for ar in ars]


def released_at(ar: Reservation) -> int | None:
    """When ``ar`` was released early, if it was: it ended before its end."""
    early = ar.state == State.EXITED and ar.finished_time is not None and ar.finished_time < ar.end
    return ar.finished_time if early else None


def reservation_view(ar: Reservation, manager: Manager) -> dict:
    """An AR as the commands print it (JSON-ready)."""
    request = ar.request
    view = {
        "id": ar.id, "name": ar.name, "owner": ar.owner, "group": ar.group,
        "state": ar.state.value, "submission_time": ar.submission_time,
        "start": ar.start, "end": ar.end, "duration": request.duration,
        "acl": list(ar.acl), "account": ar.account, "message": ar.message,
        "released": released_at(ar), "granted_pe": ar.granted_pe,
        "allocations": [allocation_view(a) for a in ar.allocations],
        "inner": sorted(manager.inner_ars(ar.id)),
        "request": codec.encode_request(request),
        "job_runtime_limit": manager.job_runtime_limit(ar),
        "submit_hint": manager.submit_hint(ar),
        "idempotency_key": ar.idempotency_key,
        "pending": None,
        "approval": None,
        "refusal": None,
        "warnings": manager.warnings(ar),
        "series": ar.series,
    }
    refusal = manager.last_refusal(ar.id)
    if refusal is not None:
        view["refusal"] = refusal._asdict()
    if ar.approval_due is not None:
        view["approval"] = {"due": approval.lapse_time(ar),
                            "reason": ar.message.removeprefix(approval.AWAITING_PREFIX)}
    if ar.pending is not None:
        view["pending"] = {
            "operation": ar.pending.value, "since": ar.pending_since,
            "expires": manager.commit_deadline(ar),
            "start": ar.pending_request.start if ar.pending_request else None,
            "end": ar.pending_request.end if ar.pending_request else None,
            "allocations": [allocation_view(a) for a in ar.pending_allocations],
        }
    return view


def reservation_views(ars: list[Reservation], manager: Manager) -> list[dict]:
    return [reservation_view(ar, manager) for ar in ars]


def allocation_view(allocation: Allocation) -> dict:
    """A node the AR holds: its slots, and the AR they are inside (ResAccess)."""
    view = {"node": allocation.node, "slots": allocation.slots}
    if allocation.queue:
        view["queue"] = allocation.queue
    if allocation.within is not None:
        view["within"] = allocation.within
    return view
