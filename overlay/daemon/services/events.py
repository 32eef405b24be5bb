"""Events (overlay.events): the stream's reads (``events``, and
``event_head``, the HTTP companion's one wait for all its streams) and the
webhooks their owners register, list and delete."""

from __future__ import annotations

import time

from overlay.daemon.services.base import Context, Operation
from overlay.events import hooks
from overlay.events.catalog import CALENDAR_CHANGED, shown
from overlay.events.visibility import chosen, sees
from overlay.language import limits
from overlay.language.model import InvalidRequest, PermissionDenied
from overlay.persistence.events import Webhook
from overlay.usecases.manager import Caller
from overlay.wire import codec

MAX_EVENTS = 500
"""Events one read answers with."""
SCAN = 2000
"""Events one read looks at: a reader who sees few of many goes on from
where the look stopped (``next``), so no read costs more."""
MAX_WAIT = 25
"""Seconds an ``event_head`` may wait."""
MOST_HOOKS = 10
"""Webhooks a user may hold."""


def _types(args: codec.Arguments) -> tuple[str, ...]:
    return hooks.checked_types(args.strings("types"))


def _lead(context: Context, args: codec.Arguments, types: tuple[str, ...]) -> int | None:
    lead = args.integer("ending_soon", 1, 86400, what="ending_soon")
    return hooks.checked_lead(lead, context.config.ending_soon, types)


def events(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """The events after id ``after`` the caller may see (the last one
    now without it: a stream from now on), of the ``types`` chosen, with
    the ending-soon events of the lead ``ending_soon``; ``next`` is where
    the next read goes on, ``missed`` whether events after ``after`` were
    dropped as too old. With ``calendar``, each chosen event of an AR the
    caller may not see is a ``calendar.changed`` event that names only the
    AR, which GET /calendar shows anyone: a page that draws every AR
    redraws on it."""
    after = args.integer("after", 0, 2 ** 62, what="after")
    most = args.integer("limit", 1, MAX_EVENTS, what="limit") or MAX_EVENTS
    types = _types(args)
    lead = _lead(context, args, types)
    calendar = args.flag("calendar")
    args.done()
    log = context.watch.events
    if after is None:
        head = log.head()
        return {"events": [], "next": head, "head": head, "missed": False, "user": caller.user}
    batch = log.after(after, SCAN)
    missed = 0 < after and bool(batch) and after + 1 < batch[0].id == log.oldest()
    found, cursor = [], after
    for event in batch:
        if len(found) == most:
            break
        cursor = event.id
        if not chosen(event, types, lead):
            continue
        if sees(event, caller.user, caller.groups, caller.is_manager):
            found.append(shown(event.id, event.type, event.time, event.data))
        elif calendar:
            found.append({"id": event.id, "type": CALENDAR_CHANGED, "time": event.time,
                          "reservation": {"id": event.ar_id}})
    return {"events": found, "next": cursor, "head": batch[-1].id if batch else cursor,
            "missed": missed, "user": caller.user}


def event_head(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """The last event's id once it passes ``after`` (within ``wait`` seconds)."""
    after = args.integer("after", 0, 2 ** 62, required=True, what="after")
    wait = args.integer("wait", 0, MAX_WAIT, what="wait") or 0
    args.done()
    return {"head": context.watch.wait(after, wait)}


def _view(hook: Webhook) -> dict:
    """A webhook as its owner sees it: never its secret."""
    return {"id": hook.id, "owner": hook.owner, "url": hook.url, "every": hook.every,
            "types": list(hook.types), "ending_soon": hook.lead, "created": hook.created,
            "cursor": hook.cursor, "delivered": hook.delivered, "failures": hook.failures,
            "last_error": hook.last_error}


def webhook_add(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """A webhook of the caller's (``every``: a manager's, for every AR),
    with its secret, shown this once."""
    url = hooks.checked_url(args.text("url", True), context.config.webhook_networks)
    types = _types(args)
    lead = _lead(context, args, types)
    every = args.flag("every")
    args.done()
    if every and not caller.is_manager:
        raise PermissionDenied("every: only a manager's webhook may take every AR's events; "
                               "yours takes your own ARs'")
    made = context.watch.events.add_hook(Webhook(
        hooks.new_id(), caller.user, every, url, hooks.new_secret(), types, lead,
        int(time.time()), 0, 0, 0, ""), MOST_HOOKS)
    context.client_log.info((caller.user, "webhook"), "webhook %s to %s made by %s", made.id,
                            limits.shown(url), caller.user)
    context.wake_deliveries()
    return {**_view(made), "secret": made.secret}


def webhooks(context: Context, caller: Caller, args: codec.Arguments) -> list[dict]:
    """The caller's webhooks (a manager's: everyone's)."""
    args.done()
    whose = None if caller.is_manager else caller.user
    return [_view(hook) for hook in context.watch.events.hooks(whose)]


def webhook_remove(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    hook_id = args.text("id", True)
    args.done()
    if not (len(hook_id) == 18 and hook_id.startswith("wh") and hook_id[2:].isalnum()):
        raise InvalidRequest(f"webhook id {limits.shown(hook_id)} is invalid; accepted: "
                                 "the id GET /v1/webhooks lists (wh and 16 hexadecimal digits)")
    context.watch.events.remove_hook(hook_id, None if caller.is_manager else caller.user)
    context.client_log.info((caller.user, "webhook"), "webhook %s deleted by %s", hook_id,
                            caller.user)
    return {"deleted": hook_id}


OPERATIONS: dict[str, Operation] = {"events": events, "event_head": event_head,
                                    "webhook_add": webhook_add, "webhooks": webhooks,
                                    "webhook_remove": webhook_remove}
