"""The daemon itself: plus_schedkill stops it, plus_scheduler --status asks
who serves the store."""

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


OPERATIONS: dict[str, Operation] = {"shutdown": shutdown, "daemons": daemons}
