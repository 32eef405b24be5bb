"""An AR as the commands and the HTTP API show it: the full view of
plus_status -r, and the summary rows of a listing. What the view needs
beyond the AR it asks the use cases."""

from __future__ import annotations

from typing import Iterable, Mapping

from overlay.language.model import Allocation, Reservation, State
from overlay.usecases import approval
from overlay.usecases.manager import Manager
from overlay.wire import codec, fastjson
from overlay.wire.protocol import Encoded

MAINTENANCE_MARK = "[M]"
"""What a maintenance AR's name starts with in plus_status's table and the
calendar (the seeds' columns stay as they are)."""


def summary_rows(ars: Iterable[Reservation], with_nodes: bool, messages: bool) -> list[list]:
    """plus_status's table columns of each AR, a list each (a tenth of a
    view's bytes: listings of many ARs stay fast); a maintenance AR's name
    marked."""
    # State is a str enum: JSON writes its letter, without Enum.value's slow lookup
    return [[ar.id, MAINTENANCE_MARK + ar.name if ar.request.maint else ar.name, ar.owner,
             ar.state, ar.start, ar.end,
             ",".join(ar.node_names) if with_nodes else "",
             *((ar.message,) if messages else ())] for ar in ars]


class SummaryCache:
    """Each AR's summary row kept encoded, for the AR copy it was made from
    (a change replaces an AR, never alters it: the same copy is the same
    row). A listing of 10,000 unchanged ARs then costs lookups and a join
    instead of 20 ms of building and encoding, most of it in C holding the
    GIL, which every other request to the daemon waited behind (issue 34:
    other users' latency while clients loop on listings)."""

    def __init__(self) -> None:
        self._rows: dict[tuple[bool, bool], dict[int, tuple[Reservation, str]]] = {}

    def encoded(self, ars: list[Reservation], with_nodes: bool, messages: bool,
                current: Mapping[int, Reservation]) -> Encoded:
        """``summary_rows(ars, ...)`` as JSON; ``current``: every AR now (the
        rows of ARs gone or changed are dropped once they outnumber them)."""
        rows = self._rows.setdefault((with_nodes, messages), {})
        missing = [ar for ar in ars if (rows.get(ar.id) or (None,))[0] is not ar]
        for ar, row in zip(missing, summary_rows(missing, with_nodes, messages), strict=True):
            rows[ar.id] = (ar, fastjson.dumps(row))
        text = "[" + ",".join([rows[ar.id][1] for ar in ars]) + "]"
        if len(rows) > 2 * len(current) + 1024:
            self._rows[with_nodes, messages] = {
                ar_id: kept for ar_id, kept in list(rows.items())
                if current.get(ar_id) is kept[0]}
        return Encoded(text)


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
