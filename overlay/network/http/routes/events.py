"""Events (overlay.daemon.services.events): the event stream, as
server-sent events, and the webhooks their owners register.

A stream begins after the id its client last had (``Last-Event-ID``, which
a browser's EventSource sends by itself when it reconnects, or ``after``),
or from now on; each event's ``id:`` is the event's, and where the stream
has read past events its client may not see, a frame of the ``id:`` alone
says so (an EventSource keeps it as its last id without an event), so a
client that comes back after a drop, a restart of the daemon or the end of
a stream goes on without a gap or a repeat, and never reads again what it
was not shown. A stream lasts at most the companion's
answer time (``stream_seconds``, then the client reconnects, told how soon
by ``retry:``), says a heartbeat comment when nothing happens, and is
counted: at most MAX_STREAMS_PER_USER per user and MAX_STREAMS in all."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, AsyncIterator

from fastapi import APIRouter, Header, Path, Query, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from overlay.events.catalog import TYPES
from overlay.events.hooks import MAX_URL
from overlay.network.http.eventhub import EventHub, TooManyStreams
from overlay.network.http.identity import Credentials, Who
from overlay.network.http.refusal import Refusal
from overlay.network.http.routes.base import Ask
from overlay.network.http.schemas import WebhookDeleted, WebhookMade, WebhookShown, answers
from overlay.wire import protocol

router = APIRouter()
HEARTBEAT = 10.0
"""Seconds of silence after which a stream says a comment (proxies and
clients see it alive)."""
RETRY_MS = 1000
"""How soon (ms) a client reconnects after a stream ends (SSE's retry:)."""
EventId = Annotated[int, Field(ge=0, le=2 ** 62)]
Lead = Annotated[StrictInt, Field(ge=1, le=86400, description="seconds before the end: one of "
                                  "plus.yaml's ending_soon lead times")]
Types = Annotated[list[StrictStr], Field(max_length=len(TYPES),
                                         description="event types (none: every type): "
                                         + ", ".join(TYPES))]
_STREAM = {200: {"content": {"text/event-stream": {}},
                 "description": "server-sent events: each with the event's id, its type as "
                                "the event name, and the event as JSON data"}}


def hub(request: Request) -> EventHub:
    return request.app.state.events


def _frame(event: dict) -> str:
    return f"id: {event['id']}\nevent: {event['type']}\ndata: " \
           f"{json.dumps(event, separators=(',', ':'))}\n\n"


@router.get("/events", response_class=StreamingResponse, responses=_STREAM,
            summary="The events of the ARs one may see (owned, or whose access list names "
                    "one; a manager: all), as server-sent events, from Last-Event-ID on")
async def event_stream(
        who: Who, ask: Ask, request: Request,
        types: Annotated[list[str] | None, Query(max_length=len(TYPES),
                                                 description="event types (none: every type)")
                         ] = None,
        ending_soon: Annotated[int | None, Query(ge=1, le=86400, description="ending-soon lead "
                                                 "time (seconds), one of the site's")] = None,
        after: Annotated[int | None, Query(ge=0, le=2 ** 62, description="the last event id "
                                           "had (Last-Event-ID wins)")] = None,
        calendar: Annotated[bool, Query(description="also, for each event of an AR one may "
                                        "not see, a calendar.changed event naming only the AR "
                                        "(GET /calendar shows every AR to anyone): for a page "
                                        "that draws them all")] = False,
        last_event_id: Annotated[str | None, Header(max_length=20)] = None) -> Response:
    if last_event_id is not None:
        if not last_event_id.strip().isdigit():
            raise Refusal(400, {"error": "Last-Event-ID: expected an event id (a whole number)",
                                "status": protocol.EXIT_USAGE, "kind": "invalid"})
        after = int(last_event_id)
    query = {"types": types, "ending_soon": ending_soon, "calendar": calendar}
    first = await ask(who, "events", {**query, "after": after})   # refusals before the stream
    events = hub(request)
    user = first["user"]
    try:
        events.enter(user)
    except TooManyStreams as exc:
        raise Refusal(429, {"error": str(exc), "status": protocol.EXIT_REFUSED,
                            "kind": "busy"}) from None
    return StreamingResponse(_stream(who, ask, request, events, user, query, first),
                             media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


async def _stream(who: Credentials, ask: Ask, request: Request, events: EventHub, user: str,
                  query: dict, answer: dict) -> AsyncIterator[str]:
    loop_time = asyncio.get_running_loop().time
    ends = loop_time() + request.app.state.stream_seconds
    try:
        yield f"retry: {RETRY_MS}\n\n"
        if answer.get("missed"):
            yield "event: gap\ndata: {\"missed\":true}\n\n"
        told = -1
        while True:
            for event in answer["events"]:
                yield _frame(event)
            cursor, head = answer["next"], answer["head"]
            if cursor > told and not (answer["events"] and answer["events"][-1]["id"] == cursor):
                yield f"id: {cursor}\n\n"        # read past what it may not see
            told = cursor
            if cursor >= head:           # all read: wait for more, saying it is alive
                while await events.past(head, min(HEARTBEAT, ends - loop_time())) <= head:
                    if loop_time() >= ends:
                        return
                    yield ": heartbeat\n\n"
            answer = await ask(who, "events", {**query, "after": cursor})
    except Refusal as exc:                # the token expired, the daemon went away
        yield f"event: refused\ndata: {json.dumps(exc.body)}\n\n"
    finally:
        events.leave(user)


class WebhookIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: Annotated[StrictStr, Field(max_length=MAX_URL, description="https, or http to a "
                                    "loopback receiver; redirects are not followed")]
    types: Types | None = None
    ending_soon: Lead | None = None
    every: StrictBool = Field(False, description="a manager's webhook: every AR's events")


@router.post("/webhooks", status_code=201, response_model=None,
             summary="Register a webhook: the events of one's ARs POSTed to a URL, signed "
                     "with its secret (shown once)",
             responses=answers(WebhookMade, 201, "the webhook made, with its secret"))
async def add_webhook(who: Who, ask: Ask, request: Request, response: Response,
                      body: WebhookIn) -> dict:
    made = await ask(who, "webhook_add", body.model_dump())
    response.headers["Location"] = str(request.url_for("list_webhooks")) + "/" + made["id"]
    return made


@router.get("/webhooks", summary="One's webhooks (a manager's: everyone's), never their "
                                 "secrets", response_model=None,
            responses=answers(list[WebhookShown]))
async def list_webhooks(who: Who, ask: Ask) -> list[dict]:
    return await ask(who, "webhooks", {})


@router.delete("/webhooks/{hook_id}", summary="Delete a webhook", response_model=None,
               responses=answers(WebhookDeleted))
async def delete_webhook(who: Who, ask: Ask,
                         hook_id: Annotated[str, Path(max_length=18)]) -> dict:
    return await ask(who, "webhook_remove", {"id": hook_id})
