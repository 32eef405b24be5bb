"""The managers' decisions on ARs a policy holds for approval (state h):
plus_approve and plus_deny, and the HTTP API's approve and deny."""

from __future__ import annotations

from overlay.daemon.services.base import Context, Operation
from overlay.daemon.services.views import reservation_views
from overlay.language.request import parse_reason
from overlay.usecases.manager import Caller
from overlay.wire import codec


def approve(context: Context, caller: Caller, args: codec.Arguments) -> list[dict]:
    """Every AR named is checked (a manager asks; each awaits approval)
    before any is granted."""
    ids = codec.ar_ids(args)
    args.done()
    manager = context.manager
    manager.awaiting(caller, ids, "approve")
    ars = [manager.approve(caller, ar_id) for ar_id in ids]
    context.on_change(ars)
    return reservation_views(ars, manager)


def deny(context: Context, caller: Caller, args: codec.Arguments) -> list[dict]:
    """As approve, but each AR ends in d with the manager's ``reason``."""
    ids = codec.ar_ids(args)
    reason = args.checked("reason", parse_reason) or ""
    args.done()
    manager = context.manager
    manager.awaiting(caller, ids, "deny")
    ars = [manager.deny(caller, ar_id, reason) for ar_id in ids]
    context.on_change(ars)
    return reservation_views(ars, manager)


OPERATIONS: dict[str, Operation] = {"approve": approve, "deny": deny}
