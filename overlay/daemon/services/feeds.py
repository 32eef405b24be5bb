"""Calendar feeds (overlay.feeds): a feed by its token, which a calendar
client's URL carries, and the tokens their users make, list and revoke."""

from __future__ import annotations

import re
import threading
from functools import partial

from overlay.daemon.services.base import Context, Operation
from overlay.feeds import selection, tokens
from overlay.feeds.calendar import calendar
from overlay.kit.users import account
from overlay.language import limits
from overlay.language.model import (
    InvalidRequest,
    PermissionDenied,
    Reservation,
    ReservationError,
    State,
    UnknownReservation,
)
from overlay.language.request import parse_name
from overlay.persistence.feedtokens import FeedTokens
from overlay.persistence.series import Series
from overlay.usecases.manager import Caller
from overlay.wire import codec

KINDS = ("user", "queue", "maintenance")
"""What a feed may follow: a user's ARs, or a queue's (its hosts')."""
_HOST = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?")
_LABEL_CHARS = 64
_TAGS_KEPT = 1024


class NoSuchFeed(UnknownReservation):
    """A feed token that is wrong, revoked, or not the feed's user's: one
    answer for all, so that a guesser learns nothing."""

    def __init__(self) -> None:
        super().__init__("no such feed: ask its owner for the URL, or make a feed token with "
                         "plus_feed -c (POST /feeds/tokens)")


class _Tags:
    """Each feed's entity tag at the daemon's memory revision it was worked
    out at: a client polling a feed nothing changed in is answered without
    looking at the ARs."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.kept: dict[tuple, tuple[int, str]] = {}

    def get(self, key: tuple, revision: int) -> str | None:
        with self.lock:
            found = self.kept.get(key)
        return found[1] if found is not None and found[0] == revision else None

    def put(self, key: tuple, revision: int, tag: str) -> None:
        with self.lock:
            self.kept.pop(key, None)
            if len(self.kept) >= _TAGS_KEPT:
                del self.kept[next(iter(self.kept))]
            self.kept[key] = (revision, tag)


_TAGS = _Tags()


def _kept(context: Context) -> FeedTokens:
    """Where the feed tokens are kept (the daemon's store)."""
    if context.feed_tokens is None:
        raise ReservationError("this plus_scheduler keeps no feed tokens")
    return context.feed_tokens


def _holder(context: Context, token: str) -> str:
    """The user a feed token belongs to; NoSuchFeed for any other token."""
    found = tokens.parsed(token)
    kept = _kept(context).kept(found[0]) if found else None
    if found is None or not tokens.matches(found[1], kept[1] if kept else None):
        context.client_log.info(("feeds", "refused"), "a feed was asked for with a token that "
                                "is not one (wrong, revoked or malformed)")
        raise NoSuchFeed()
    return kept[0]


def feed(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """A feed (``kind`` user or queue, ``subject`` its name) for the holder
    of its feed token, as iCalendar text with its entity tag; only the tag
    (``unchanged``) when it is one of ``etags`` (If-None-Match). ``host``
    and ``scheme``: how the client reached the API (UIDs, the AR links)."""
    token = args.text("token", True)
    kind, subject = args.text("kind", True), args.text("subject", True)
    host, scheme = args.text("host", True), args.text("scheme") or "http"
    etags = args.strings("etags") or []
    args.done()
    if kind not in KINDS:
        raise InvalidRequest(f"feed kind {limits.shown(kind)} is unknown; accepted: "
                             f"{', '.join(KINDS)}")
    parse_name(subject, kind)
    if not _HOST.fullmatch(host) or scheme not in ("http", "https") or len(etags) > 16:
        raise InvalidRequest("a feed is asked for with the host the client reached, http or "
                             "https, and at most 16 entity tags")
    owner = _holder(context, token[:tokens.MAX_TOKEN + 1])
    if kind == "user" and subject != owner:
        raise NoSuchFeed()
    manager, zone_name = context.manager, context.config.timezone
    revision = manager.revision
    if kind == "user":
        found = account(subject)
        groups = found[1] if found else ()
        key: tuple = (kind, subject, groups, zone_name, host, scheme)
        choose = partial(selection.of_user, user=subject, groups=groups)
    elif kind == "maintenance":
        key, choose = (kind, subject, zone_name, host, scheme), selection.of_maintenance
    else:
        nodes = selection.queue_nodes(manager.inventory.nodes, subject)
        if not nodes:
            raise UnknownReservation(f"queue {subject} has no hosts")
        key = (kind, subject, nodes, zone_name, host, scheme)
        choose = partial(selection.of_queue, queue=subject, nodes=nodes)
    known = _TAGS.get(key, revision)
    if known is not None and (known in etags or "*" in etags):
        return {"etag": known, "unchanged": True}
    chosen = choose(manager.status(expired=limits.MAX_COUNT))
    series = _series_of(context, chosen) if kind == "user" else []
    recurring = {made.id for made, _ in series}
    shown, total = selection.bounded([ar for ar in chosen if ar.series not in recurring])
    tag = selection.tag(shown, kind, subject, zone_name, host, scheme, str(total),
                        *(f"S{made.id}:{made.handled}:{made.state}" for made, _ in series))
    _TAGS.put(key, revision, tag)
    if tag in etags or "*" in etags:
        return {"etag": tag, "unchanged": True}
    title = {"user": f"PluS reservations of {subject}",
             "queue": f"PluS reservations on queue {subject}",
             "maintenance": "PluS maintenance windows"}[kind]
    body = calendar(title, shown, zone_name, _hostname(host), f"{scheme}://{host}/web/", args.now,
                    series)
    return {"etag": tag, "body": body, "events": len(shown), "total": total}


def _series_of(context: Context, ars: list[Reservation]) -> list[tuple[Series, list[int]]]:
    """The series of a user's feed, each one event (overlay.feeds.recurring):
    those of which it shows an occurrence, with their cancelled occurrences'
    starts. A store read of each, only when the feed changed."""
    if context.series is None:
        return []
    cancelled: dict[int, list[int]] = {}
    for ar in ars:
        if ar.series is not None:
            cancelled.setdefault(ar.series, [])
            if ar.state == State.DELETED:
                cancelled[ar.series].append(ar.start)
    found = [(context.series.table.get(series_id), starts)
             for series_id, starts in sorted(cancelled.items())]
    return [(made, starts) for made, starts in found if made is not None]


def _hostname(host: str) -> str:
    """``host`` without its port (an IPv6 address keeps its brackets)."""
    return host[:host.index("]") + 1] if host.startswith("[") else host.partition(":")[0]


def _label(args: codec.Arguments) -> str:
    label = args.text("label") or ""
    if len(label) > _LABEL_CHARS or not label.isprintable():
        raise InvalidRequest(f"label: {limits.shown(label)} is not accepted; accepted: up to "
                             f"{_LABEL_CHARS} printable characters")
    return label


def _whose(caller: Caller, args: codec.Arguments, action: str) -> str:
    """The user whose tokens are meant: the caller's own, or for a manager
    the one named."""
    user = codec.owner(args) or caller.user
    if user != caller.user and not caller.is_manager:
        raise PermissionDenied(f"only a manager may {action} the feed tokens of another user "
                               f"({user})")
    return user


def feed_token(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """A new feed token of the caller's, shown this once; at most
    tokens.MOST_PER_USER at a time."""
    label = _label(args)
    args.done()
    token_id, token, digest = tokens.new()
    made = _kept(context).add(caller.user, token_id, digest, label,
                                                 tokens.MOST_PER_USER)
    context.client_log.info((caller.user, "feed token"), "feed token %s made by %s", token_id,
                            caller.user)
    return {**made._asdict(), "token": token,
            "feeds": {"user": f"/feeds/users/{caller.user}.ics?token={token}",
                      "queue": f"/feeds/queues/QUEUE.ics?token={token}",
                      "maintenance": f"/feeds/maintenance.ics?token={token}"}}


def feed_tokens(context: Context, caller: Caller, args: codec.Arguments) -> list[dict]:
    user = _whose(caller, args, "list")
    args.done()
    return [held._asdict() for held in _kept(context).of(user)]


def revoke_feed_token(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """Revoke a feed token by its id: refused at once by every daemon."""
    user = _whose(caller, args, "revoke")
    token_id = args.text("id", True)
    args.done()
    if not tokens.valid_id(token_id):
        raise InvalidRequest(f"feed token id {limits.shown(token_id)} is invalid; accepted: "
                             "the 16 hexadecimal digits plus_feed -l shows")
    _kept(context).remove(user, token_id)
    context.client_log.info((caller.user, "feed token"), "feed token %s of %s revoked by %s",
                            token_id, user, caller.user)
    return {"revoked": token_id, "owner": user}


OPERATIONS: dict[str, Operation] = {"feed": feed, "feed_token": feed_token,
                                    "feed_tokens": feed_tokens,
                                    "revoke_feed_token": revoke_feed_token}
