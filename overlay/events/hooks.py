"""A webhook's registration checked where it enters: its URL (bounded,
https unless the host is loopback, no credentials in it), the event types
and the ending-soon lead it chooses; and its secret, made here."""

from __future__ import annotations

import secrets
from typing import Iterable
from urllib.parse import urlsplit

from overlay.events.catalog import ENDING_SOON, TYPES
from overlay.language.limits import shown
from overlay.language.model import InvalidRequest
from overlay.network.loopback import loopback

MAX_URL = 2048
"""The longest URL a webhook may have."""
SECRET_PREFIX = "whsec_"


def checked_url(url: object) -> str:
    """The URL, or InvalidRequest naming what is wrong and what is accepted."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL or not url.isprintable() \
            or " " in url:
        raise InvalidRequest(f"url: expected an http(s) URL of at most {MAX_URL} printable "
                             "characters without spaces")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidRequest(f"url {shown(url)}: {exc}") from None
    host = parts.hostname or ""
    if parts.scheme not in ("https", "http") or not host:
        raise InvalidRequest(f"url {shown(url)}: expected https://host[:port]/path")
    if parts.username is not None or parts.password is not None:
        raise InvalidRequest(f"url {shown(url)}: credentials do not belong in a webhook's URL; "
                             "the receiver checks the signature instead")
    if parts.scheme == "http" and not loopback(host):
        raise InvalidRequest(f"url {shown(url)}: plain http is for loopback receivers only "
                             "(127.0.0.0/8, ::1, localhost); use https")
    if port == 0:
        raise InvalidRequest(f"url {shown(url)}: port 0 is not a port")
    return url


def checked_types(types: Iterable[str] | None) -> tuple[str, ...]:
    """The event types chosen (none: every one), each known."""
    chosen = tuple(dict.fromkeys(types or ()))
    unknown = [kind for kind in chosen if kind not in TYPES]
    if unknown:
        raise InvalidRequest(f"types: unknown event type {shown(unknown[0])}; accepted: "
                             + ", ".join(TYPES))
    return chosen


def checked_lead(lead: int | None, leads: Iterable[int], types: tuple[str, ...]) -> int | None:
    """The ending-soon lead time chosen: one of the site's (plus.yaml's
    ending_soon), needed when the types name ending-soon events."""
    leads = list(leads)
    if lead is None:
        if ENDING_SOON in types:
            raise InvalidRequest(f"ending_soon: {ENDING_SOON} needs a lead time; accepted: "
                                 + ", ".join(map(str, leads)) + " (seconds)")
        return None
    if lead not in leads:
        raise InvalidRequest(f"ending_soon: {lead} is not one of this site's lead times; "
                             "accepted: " + ", ".join(map(str, leads)) + " (seconds, plus.yaml's "
                             "ending_soon)")
    return lead


def new_secret() -> str:
    """A webhook's secret, shown once at its registration."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def new_id() -> str:
    return "wh" + secrets.token_hex(8)
