"""Feed tokens: what a calendar client's URL carries instead of an
Authorization header it cannot send. ``pf1.<id>.<secret>``: the id names
the token (listed, revoked), the secret proves it; the store keeps only
the secret's SHA-256 (a 256-bit random secret needs no slow hash), and
compares digests in constant time."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

PREFIX = "pf1"
_ID_BYTES, _SECRET_BYTES = 8, 32
_FORM = re.compile(r"pf1\.([0-9a-f]{16})\.([A-Za-z0-9_-]{43})")
MAX_TOKEN = 64
"""The longest token text accepted anywhere (a token is 64 characters)."""
_NONE = hashlib.sha256(b"no such token").hexdigest()


def new() -> tuple[str, str, str]:
    """A new token: its id, the token text (shown once) and the digest kept."""
    token_id = secrets.token_hex(_ID_BYTES)
    secret = secrets.token_urlsafe(_SECRET_BYTES)
    return token_id, f"{PREFIX}.{token_id}.{secret}", digest(secret)


def parsed(token: str) -> tuple[str, str] | None:
    """A token's id and secret, or None for anything not of its form."""
    found = _FORM.fullmatch(token) if len(token) <= MAX_TOKEN else None
    return (found.group(1), found.group(2)) if found else None


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def matches(secret: str, kept: str | None) -> bool:
    """Whether ``secret`` is the one whose digest was ``kept``, compared in
    constant time (an unknown id is compared too, against a digest no
    secret has, so both refusals take the same time)."""
    return hmac.compare_digest(digest(secret), kept or _NONE) and kept is not None


def valid_id(token_id: str) -> bool:
    return bool(re.fullmatch(r"[0-9a-f]{16}", token_id))


MOST_PER_USER = 10
"""Feed tokens one user may hold at once (a calendar client each)."""
