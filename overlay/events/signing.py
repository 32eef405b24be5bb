"""A webhook's body signed with its secret, as Stripe and GitHub do:
HMAC-SHA256 over the time and the body, in a header the receiver checks in
constant time, refusing a signature older than it tolerates (a replay)."""

from __future__ import annotations

import hashlib
import hmac
import time

SIGNATURE_HEADER = "X-Plus-Signature"
"""``t=<unix time>,v1=<hex HMAC-SHA256 of "<t>.<body>">``."""
EVENT_ID_HEADER = "X-Plus-Event-Id"
EVENT_TYPE_HEADER = "X-Plus-Event-Type"
TOLERANCE = 300
"""Seconds a receiver accepts a signature for (verify's default)."""


def signature(secret: str, body: bytes, at: int) -> str:
    """The header's value for ``body`` sent at ``at``."""
    mac = hmac.new(secret.encode(), f"{at}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={at},v1={mac}"


def verify(secret: str, header: str, body: bytes, tolerance: int = TOLERANCE,
           now: float | None = None) -> bool:
    """Whether ``header`` signs ``body`` with ``secret`` within ``tolerance``
    seconds of ``now``: what a receiver runs before trusting a delivery."""
    fields = dict(part.partition("=")[::2] for part in header.split(","))
    stamp = fields.get("t", "")
    if not stamp.isdigit() or abs((now if now is not None else time.time()) - int(stamp)) > tolerance:
        return False
    return hmac.compare_digest(signature(secret, body, int(stamp)), f"t={stamp},v1={fields.get('v1', '')}")
