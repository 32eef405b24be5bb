"""A webhook's registration checked where it enters: its URL (bounded,
https unless the host is loopback, no credentials in it, and an address
the site lets webhooks reach), the event types and the ending-soon lead it
chooses; and its secret, made here.

Which addresses a webhook may reach: public ones, and those of the site's
``webhook_networks``. A user's webhook would otherwise make the leader
(often root, inside the site) post to a service on its own loopback or
the site's private network, and its last error would map them. A URL
naming an address is checked at registration; a name, at each delivery,
against the address it resolves to then, which is the one connected to
(overlay.events.post), so a name that later resolves inward gains nothing."""

from __future__ import annotations

import ipaddress
import secrets
from typing import Iterable, Sequence
from urllib.parse import urlsplit

from overlay.events.catalog import ENDING_SOON, TYPES
from overlay.language.limits import shown
from overlay.language.model import InvalidRequest
from overlay.network.loopback import loopback

MAX_URL = 2048
"""The longest URL a webhook may have."""
SECRET_PREFIX = "whsec_"


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def reachable(address: str, networks: Sequence[Network]) -> bool:
    """Whether a webhook may reach ``address``: a public one, or one in
    ``networks`` (the site's webhook_networks)."""
    ip = ipaddress.ip_address(address.split("%")[0])
    return ip.is_global or any(ip in network for network in networks)


def unreachable_why(shown_host: str, address: str) -> str:
    return (f"{shown_host} is {address}, an address webhooks may not reach: not public, and "
            "not in the site's webhook_networks")


def checked_url(url: object, networks: Sequence[Network] = ()) -> str:
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
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None                   # a name: checked at each delivery
    if literal is not None and not reachable(str(literal), networks):
        raise InvalidRequest(f"url {shown(url)}: {unreachable_why(host, str(literal))}")
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
