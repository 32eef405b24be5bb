"""Conditional reads: every JSON answer to a GET carries an ETag (a digest
of its bytes), and a client that sends it back in If-None-Match gets 304
with no body, so a portal polling a listing or an AR moves bytes only
when something changed. Answers that tag themselves (the calendar feeds)
or stream (events) pass untouched. The answers are bounded (pages of
1,000 ARs), so holding one to digest it is too."""

from __future__ import annotations

import hashlib

from starlette.types import ASGIApp, Message, Receive, Scope, Send


def tag_of(body: bytes) -> bytes:
    return b'"' + hashlib.blake2b(body, digest_size=16).hexdigest().encode() + b'"'


def matches(if_none_match: bytes, tag: bytes) -> bool:
    """RFC 9110's weak comparison of ``tag`` with an If-None-Match list."""
    for candidate in if_none_match.split(b","):
        candidate = candidate.strip()
        if candidate == b"*" or candidate.removeprefix(b"W/") == tag:
            return True
    return False


class ETags:
    """The ASGI app ``app``, its JSON answers to GET tagged."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        asked = next((value for name, value in scope["headers"] if name == b"if-none-match"), b"")
        held: list[Message] = []

        async def tagged(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers", ()))
                taggable = (message["status"] == 200 and b"etag" not in headers and
                            headers.get(b"content-type", b"").startswith(b"application/json"))
                if not taggable:
                    held.append({"type": "passed"})
                    await send(message)
                    return
                held.append(message)
                return
            if held and held[0]["type"] == "passed":
                await send(message)
                return
            held.append(message)
            if message.get("more_body"):
                return
            start, parts = held[0], held[1:]
            body = b"".join(part.get("body", b"") for part in parts)
            tag = tag_of(body)
            headers = [*start.get("headers", ()), (b"etag", tag)]
            if asked and matches(asked, tag):
                kept = [(name, value) for name, value in headers
                        if name not in (b"content-length", b"content-type")]
                await send({"type": "http.response.start", "status": 304, "headers": kept})
                await send({"type": "http.response.body", "body": b""})
                return
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, tagged)
