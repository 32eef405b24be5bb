"""Who calls the HTTP API: the bearer token of a request, the UserID a
trusted metascheduler acts for (seed 003), and where the request comes
from (its share of the daemon, overlay.network.http.fairness). The daemon checks
the token and the UserID."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated

from fastapi import Depends, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

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


MAX_TOKEN = 8192
"""Characters of a bearer token taken; a longer one is refused unread."""
_BEARER = HTTPBearer(auto_error=False, scheme_name="bearer",
                     description="a token from plus_token, the site's OpenID provider, or the "
                                 "calendar page's sign-in")


async def caller(request: Request,
                 bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)],
                 user: Annotated[str | None, Query(max_length=limits.MAX_NAME,
                                                   description="the UserID a trusted "
                                                   "metascheduler acts for (seed 003)")] = None
                 ) -> Credentials:
    token = bearer.credentials.strip() if bearer is not None else ""
    if not token or len(token) > MAX_TOKEN:
        raise Refusal(401, {"error": "send 'Authorization: Bearer <token>' (plus_token prints one"
                                     f"; at most {MAX_TOKEN} characters)",
                            "status": protocol.EXIT_REFUSED, "kind": "token"})
    return Credentials(token, user, address_of(request.scope), user_of(request.scope), request)


Who = Annotated[Credentials, Depends(caller)]
Anyone = Annotated[Credentials, Depends(anonymous)]
