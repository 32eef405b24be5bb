"""ResKeys (seed 003): the secret SETRES and RESQANDSET return once, with
which the holder later claims the reservation (submits a job into it,
cancels or modifies it) as its owner.

Sniffing and replay are refused by construction, not by transport alone:
a claim never carries the key, only the AR id, a fresh nonce, a timestamp
and an HMAC-SHA256, keyed with the ResKey, of those and of the operation
with its whole payload (the job description). The site accepts a claim
whose HMAC is right, whose timestamp is within CLAIM_WINDOW of its clock,
and whose nonce it has never seen (the store keeps nonces past the window).

The site keeps no keys: a ResKey is the HMAC, under the daemon's own
secret (state_dir/reskey.key, mode 0600), of the AR's id, owner and
submission time, so it is bound to that AR and owner, and a later AR
reusing the id has another. Standard library only: the commands sign with
it too.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from typing import Any, NamedTuple

PREFIX = "plus1"
CLAIM_WINDOW = 300
"""Seconds a claim's timestamp may differ from the site's clock."""
OPERATIONS = ("submit", "cancel", "modify")
_NONCE_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_HEX = frozenset("0123456789abcdef")


class ClaimRefused(Exception):
    """A claim the site does not accept: the text says why."""


class Claim(NamedTuple):
    ar_id: int
    nonce: str
    timestamp: int
    operation: str
    payload: dict
    digest: str


def parse_reskey(text: str) -> tuple[int, str]:
    """(AR id, the key as given) of ``plus1.<id>.<64 hex digits>``."""
    key = text.strip()
    parts = key.split(".")
    if (len(parts) != 3 or parts[0] != PREFIX or not parts[1].isdigit() or not parts[1].isascii()
            or len(parts[2]) != 64 or not set(parts[2]) <= _HEX):
        raise ValueError("not a ResKey: expected plus1.<AR id>.<64 hex digits>, as SETRES "
                         "and RESQANDSET print it")
    return int(parts[1]), key


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def claim_digest(reskey: str, ar_id: int, nonce: str, timestamp: int, operation: str,
                 payload: dict) -> str:
    """The HMAC of a claim, keyed with the ResKey."""
    message = _canonical([ar_id, nonce, timestamp, operation, payload])
    return hmac.new(reskey.encode(), message, hashlib.sha256).hexdigest()


def make_claim(reskey: str, operation: str, payload: dict, now: float | None = None) -> dict:
    """A claim's wire form (the ``claim`` operation's arguments)."""
    ar_id, key = parse_reskey(reskey)
    nonce, timestamp = secrets.token_urlsafe(24), int(time.time() if now is None else now)
    return {"id": ar_id, "nonce": nonce, "timestamp": timestamp, "operation": operation,
            "payload": payload,
            "hmac": claim_digest(key, ar_id, nonce, timestamp, operation, payload)}


def check_form(claim: Claim) -> None:
    """Refuse a claim whose fields are malformed, before any key is derived."""
    if claim.operation not in OPERATIONS:
        raise ValueError(f"claim: operation '{claim.operation[:40]}' is not one of "
                         f"{', '.join(OPERATIONS)}")
    if not 16 <= len(claim.nonce) <= 64 or not set(claim.nonce) <= _NONCE_CHARACTERS:
        raise ValueError("claim: the nonce must be 16 to 64 characters of A-Z a-z 0-9 - _")
    if len(claim.digest) != 64 or not set(claim.digest) <= _HEX:
        raise ValueError("claim: hmac must be 64 lowercase hex digits (HMAC-SHA256)")


class ResKeys:
    """The site's side: issue a ResKey for an AR, check a claim's HMAC and time."""

    def __init__(self, secret: bytes) -> None:
        self.secret = secret

    def issue(self, ar_id: int, owner: str, submission_time: int) -> str:
        bound = _canonical(["reskey", ar_id, owner, submission_time])
        return f"{PREFIX}.{ar_id}.{hmac.new(self.secret, bound, hashlib.sha256).hexdigest()}"

    def check(self, claim: Claim, owner: str, submission_time: int, now: int) -> None:
        """Refuse (ClaimRefused) a claim not signed with the AR's ResKey or
        outside the window; the nonce is the store's to check."""
        key = self.issue(claim.ar_id, owner, submission_time)
        expected = claim_digest(key, claim.ar_id, claim.nonce, claim.timestamp, claim.operation,
                                claim.payload)
        if not hmac.compare_digest(expected, claim.digest):
            raise ClaimRefused(f"the claim on AR {claim.ar_id} is not signed with its ResKey")
        if abs(now - claim.timestamp) > CLAIM_WINDOW:
            raise ClaimRefused(f"the claim on AR {claim.ar_id} is dated {claim.timestamp}, more "
                               f"than {CLAIM_WINDOW} s from this site's clock ({now}): sign it "
                               "anew (and check the clocks)")
