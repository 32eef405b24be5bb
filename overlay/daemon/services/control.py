"""The daemon itself: plus_schedkill stops it, plus_scheduler --status asks
who serves the store, a load balancer asks whether it may send users here."""

from __future__ import annotations

import os
import threading

from overlay.daemon.services.base import Context, Operation
from overlay.language.model import InvalidRequest, PermissionDenied
from overlay.usecases.manager import Caller
from overlay.wire import codec


def shutdown(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    args.done()
    if caller.uid != context.daemon_uid and not caller.is_manager:
        raise PermissionDenied("only the owner of plus_scheduler or a manager may stop it")
    threading.Timer(0.2, context.on_shutdown).start()  # after this reply is sent
    return {"stopping": os.getpid()}


def daemons(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """plus_scheduler --status: anyone may ask who serves the store."""
    args.done()
    if context.daemons is None:
        raise InvalidRequest("this daemon keeps no list of the daemons serving its store")
    return context.daemons()


STALE_INVENTORY = 300
"""Seconds after which nodes and jobs not observed again say the batch
system (or the leader asking it) is not heard from."""


def health(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """Whether this daemon serves (its store answers), leads or stands by,
    how far behind the store it is, and how fresh the leader's look at the
    batch system is: for a load balancer, which asks without a token."""
    args.done()
    role, lag, store_up = context.standing()
    observed = context.manager.inventory.observed_at
    age = None if observed is None else max(0, args.now - observed)
    return {"serving": store_up, "role": "leader" if role["leading"] else "standby",
            "store": "ok" if store_up else "unreachable", "lag": lag,
            "batch_system": "unknown" if age is None else
            "ok" if age <= STALE_INVENTORY else "not heard from",
            "observed_seconds_ago": age}


OPERATIONS: dict[str, Operation] = {"shutdown": shutdown, "daemons": daemons, "health": health}
