"""Ending an open AR now, by its owner or a manager (the calendar's End
now, POST /v1/reservations/{id}/release; plus_modify -e now comes through
modify): released early, its nodes freed."""

from __future__ import annotations

from overlay.daemon.services.base import Context, Operation
from overlay.daemon.services.views import reservation_view
from overlay.usecases.manager import Caller
from overlay.wire import codec


def release(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    ar_id = codec.ar_id(args, required=True)
    args.done()
    ar = context.manager.end_now(caller, ar_id, "End now")
    context.on_change([ar])
    return reservation_view(ar, context.manager)


OPERATIONS: dict[str, Operation] = {"release": release}
