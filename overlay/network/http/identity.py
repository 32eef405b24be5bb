"""Who calls the HTTP API: the bearer token of a request, the UserID a
trusted metascheduler acts for (seed 003), and where the request comes
from (its share of the daemon, overlay.network.http.fairness). The daemon checks
the token and the UserID."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated

from fastapi import Depends, Header, Query, Request

from overlay.language import limits
from overlay.network.http.fairness import address_of, user_of
from overlay.network.http.refusal import Refusal
from overlay.wire import protocol


@dataclass(frozen=True)
class Credentials:
    """A request's bearer token (None: it carries none), the UserID a
    metascheduler acts for, its client's address and unchecked user, and
    the request itself (to see whether its client is still there)."""

    token: str | None
    acting_for: str | None
    address: str
    claimed: str
    request: Request

    def acting(self, user: str) -> "Credentials":
        return replace(self, acting_for=user)


async def anonymous(request: Request) -> Credentials:
    """A request that needs no token (the daemon checks what it carries)."""
    return Credentials(None, None, address_of(request.scope), user_of(request.scope), request)


async def caller(request: Request,
                 authorization: Annotated[str | None, Header(max_length=8192)] = None,
                 user: Annotated[str | None, Query(max_length=limits.MAX_NAME,
                                                   description="the UserID a trusted "
                                                   "metascheduler acts for (seed 003)")] = None
                 ) -> Credentials:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Refusal(401, {"error": "send 'Authorization: Bearer <token>' (plus_token prints one)",
                            "status": protocol.EXIT_REFUSED, "kind": "token"})
    return Credentials(token.strip(), user, address_of(request.scope), user_of(request.scope),
                       request)


Who = Annotated[Credentials, Depends(caller)]
Anyone = Annotated[Credentials, Depends(anonymous)]
