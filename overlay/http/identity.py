"""Who calls the HTTP API: the bearer token of a request, and the UserID
a trusted metascheduler acts for (seed 003). The daemon checks both."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Query

from overlay import limits, protocol
from overlay.http.refusal import Refusal


class Caller:
    """The bearer token of a request, and the UserID a metascheduler acts for."""

    def __init__(self, token: str, acting_for: str | None) -> None:
        self.token, self.acting_for = token, acting_for


async def caller(authorization: Annotated[str | None, Header(max_length=8192)] = None,
           user: Annotated[str | None, Query(max_length=limits.MAX_NAME,
                                             description="the UserID a trusted metascheduler "
                                                         "acts for (seed 003)")] = None) -> Caller:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Refusal(401, {"error": "send 'Authorization: Bearer <token>' (plus_token prints one)",
                            "status": protocol.EXIT_REFUSED, "kind": "token"})
    return Caller(token.strip(), user)


Who = Annotated[Caller, Depends(caller)]
