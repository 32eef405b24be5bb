"""What the API's routers share: asking the daemon for a request (``Ask``),
the fields of bodies and queries, and a page of a listing."""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request, Response
from pydantic import Field, StrictInt, StrictStr

from overlay.language import limits
from overlay.language.request import MAX_AR_ID
from overlay.network.http import daemon_client
from overlay.network.http.fairness import Dispatcher
from overlay.network.http.identity import Credentials
from overlay.network.http.refusal import STATUS, Refusal
from overlay.wire import fastjson, protocol

VERSION = "v1"
"""The API's version, its paths' prefix."""

# Bodies are strict, as the socket is: "1" is not a number, nor true a count.
Epoch = Annotated[StrictInt, Field(ge=0, le=2**40, description="UTC epoch seconds")]
Count = Annotated[StrictInt, Field(ge=1, le=limits.MAX_COUNT)]
ArId = Annotated[int, Path(ge=1, le=MAX_AR_ID, description="the AR's id")]
Text = Annotated[StrictStr, Field(max_length=limits.MAX_ARGUMENT)]
Names = Annotated[list[Text], Field(max_length=limits.MAX_ITEMS)]
Limit = Annotated[int, Query(ge=1, le=limits.MAX_PAGE,
                             description=f"items on this page (at most {limits.MAX_PAGE})")]
Offset = Annotated[int, Query(ge=0, le=limits.MAX_COUNT, description="items before this page")]
"""A listing's page, as every listing takes it (``paged``)."""


class Asker:
    """The daemon at ``socket_path``, asked in each client's turn
    (overlay.network.http.fairness) and waited for at most ``timeout`` seconds
    (then 503)."""

    def __init__(self, socket_path: str, timeout: float) -> None:
        self.socket_path, self.timeout = socket_path, timeout
        self.dispatcher = Dispatcher()

    async def __call__(self, who: Credentials, op: str, args: dict, passed: bool = False) -> Any:
        """The daemon's answer to ``op`` for the token's user, or (no token)
        for no user: the operation proves what it needs itself; with
        ``passed``, its JSON as the daemon wrote it. Sent in the client's
        turn, unless the client has gone while it waited."""
        message = {"op": op, "args": {k: v for k, v in args.items() if v is not None}}
        if who.token is not None:
            message["token"] = who.token
            if who.acting_for is not None:
                message["as"] = who.acting_for
        async with self.dispatcher.turn(who.address, who.claimed):
            if await who.request.is_disconnected():
                raise Refusal(503, {"error": "the client went away before its turn",
                                    "status": protocol.EXIT_UNREACHABLE, "kind": "unavailable"})
            try:
                raw = await daemon_client.call(self.socket_path, message, self.timeout)
                data = daemon_client.data_of(raw) if passed else None
                if data is not None:
                    return data
                reply = daemon_client.reply_of(raw)
            except protocol.ProtocolError as exc:
                raise Refusal(503, {"error": str(exc), "status": protocol.EXIT_UNREACHABLE,
                                    "kind": "unavailable"}) from None
        if not reply.get("ok"):
            kind = reply.get("kind", "conflict")
            raise Refusal(STATUS.get(kind, 409), {"error": reply.get("error", "refused"),
                                                  "status": reply.get("status", 1), "kind": kind})
        return fastjson.dumps(reply["data"]).encode() if passed else reply["data"]


async def _asker(request: Request) -> Asker:
    return request.app.state.asker


Ask = Annotated[Asker, Depends(_asker)]
"""A route's way to the daemon: the app's Asker (make_app sets it)."""

def location(ar_id: int) -> str:
    """An AR's URL, for the Location of the answer that made it."""
    return f"/{VERSION}/reservations/{ar_id}"


_PAGE = re.compile(rb'\{"total":(\d+),"items":')


def paged(request: Request, page: bytes, limit: int, offset: int) -> Response:
    """A page of a listing (the daemon's ``{"total", "items"}``, as it wrote
    it): its items, how many match in all, and the next page's URL (RFC
    8288's Link, as GitHub's API gives it)."""
    found = _PAGE.match(page)
    if found is None or not page.endswith(b"}"):
        raise Refusal(503, {"error": "plus_scheduler's answer is not a page", "kind": "unavailable",
                            "status": protocol.EXIT_UNREACHABLE})
    total = int(found.group(1))
    headers = {"X-Total-Count": str(total)}
    if offset + limit < total:
        following = request.url.include_query_params(offset=offset + limit, limit=limit)
        headers["Link"] = f'<{following}>; rel="next"'
    return Response(page[found.end():-1], media_type="application/json", headers=headers)
