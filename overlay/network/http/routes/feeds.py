"""Calendar feeds (overlay.daemon.services.feeds): a user's or a queue's
ARs as iCalendar for a client that subscribes by URL, the feed token in
the URL (a calendar client sends no Authorization header), with ETag and
If-None-Match; and the tokens, which their users make, list and revoke
with their own identity."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Path, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field, StrictStr

from overlay.feeds import tokens
from overlay.language import limits
from overlay.network.http.identity import Anyone, Credentials, Who
from overlay.network.http.refusal import Refusal
from overlay.network.http.routes.base import Ask
from overlay.network.http.schemas import (
    FeedTokenMade,
    FeedTokenRevoked,
    FeedTokenShown,
    answers,
)
from overlay.wire import protocol

router = APIRouter()
_FEED = {200: {"content": {"text/calendar": {}}, "description": "the feed (RFC 5545)"},
         304: {"description": "unchanged since the ETag sent in If-None-Match"}}
_MOST_TAGS = 16
Name = Annotated[str, Path(max_length=limits.MAX_NAME)]
FeedToken = Annotated[str, Query(max_length=tokens.MAX_TOKEN,
                                 description="a feed token (plus_feed -c, POST /feeds/tokens)")]
IfNoneMatch = Annotated[str | None, Header(max_length=1024)]


class FeedTokenIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: Annotated[StrictStr, Field(max_length=64)] = ""


def _tags(header: str | None) -> list[str]:
    """If-None-Match's entity tags, compared weakly (RFC 9110, 13.1.2)."""
    found = [tag.strip().removeprefix("W/") for tag in (header or "").split(",") if tag.strip()]
    return found[:_MOST_TAGS]


async def _feed(anyone: Credentials, ask: Ask, request: Request, kind: str, subject: str,
                token: str, if_none_match: str | None) -> Response:
    answer = await ask(anyone, "feed", {
        "token": token, "kind": kind, "subject": subject, "host": request.url.netloc,
        "scheme": request.url.scheme, "etags": _tags(if_none_match)})
    headers = {"ETag": answer["etag"], "Cache-Control": "private, no-cache"}
    if answer.get("unchanged"):
        return Response(status_code=304, headers=headers)
    headers.update({"X-Total-Count": str(answer["total"]),
                    "Content-Disposition": f'inline; filename="{subject}.ics"'})
    return Response(answer["body"], media_type="text/calendar; charset=utf-8", headers=headers)


@router.get("/feeds/users/{user}.ics", responses=_FEED, response_class=Response,
            summary="A user's ARs (owned, or whose access list names them) as an iCalendar "
                    "feed, for the holder of that user's feed token")
async def user_feed(anyone: Anyone, ask: Ask, request: Request, user: Name, token: FeedToken,
                    if_none_match: IfNoneMatch = None) -> Response:
    return await _feed(anyone, ask, request, "user", user, token, if_none_match)


@router.get("/feeds/queues/{queue}.ics", responses=_FEED, response_class=Response,
            summary="The ARs on a queue's hosts as an iCalendar feed, for any feed token's "
                    "holder")
async def queue_feed(anyone: Anyone, ask: Ask, request: Request, queue: Name, token: FeedToken,
                     if_none_match: IfNoneMatch = None) -> Response:
    return await _feed(anyone, ask, request, "queue", queue, token, if_none_match)


@router.get("/feeds/maintenance.ics", responses=_FEED, response_class=Response,
            summary="The site's maintenance windows (maintenance ARs) as an iCalendar feed, "
                    "for any feed token's holder")
async def maintenance_feed(anyone: Anyone, ask: Ask, request: Request, token: FeedToken,
                           if_none_match: IfNoneMatch = None) -> Response:
    return await _feed(anyone, ask, request, "maintenance", "maintenance", token, if_none_match)


def _own(who: Credentials) -> Credentials:
    if who.acting_for is not None:
        raise Refusal(403, {"error": "feed tokens are made, listed and revoked with the user's "
                                     "own identity, never acting for a UserID",
                            "status": protocol.EXIT_REFUSED, "kind": "forbidden"})
    return who


@router.post("/feeds/tokens", status_code=201,
             summary="Make a feed token (shown once) and the feeds' URLs with it",
             response_model=None, responses=answers(FeedTokenMade, 201, "the token made"))
async def make_token(who: Who, ask: Ask, request: Request, body: FeedTokenIn) -> dict:
    made = await ask(_own(who), "feed_token", {"label": body.label})
    base = str(request.base_url).rstrip("/")
    made["feeds"] = {kind: base + path for kind, path in made["feeds"].items()}
    return made


@router.get("/feeds/tokens", summary="One's feed tokens (never their secrets)",
            response_model=None, responses=answers(list[FeedTokenShown]))
async def list_tokens(who: Who, ask: Ask) -> list[dict]:
    return await ask(_own(who), "feed_tokens", {})


@router.delete("/feeds/tokens/{token_id}",
               summary="Revoke a feed token: every daemon refuses it from now on",
               response_model=None, responses=answers(FeedTokenRevoked))
async def revoke_token(who: Who, ask: Ask,
                       token_id: Annotated[str, Path(max_length=16)]) -> dict:
    return await ask(_own(who), "revoke_feed_token", {"id": token_id})
