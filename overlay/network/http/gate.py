"""What every HTTP request passes before the API sees it, and what no
request gets past: a body longer than the limit (refused before it is read
whole), a body that is not strict JSON (NaN, Infinity, a lone surrogate,
nesting deeper than MAX_DEPTH: refused with what was wrong, never echoed),
and any failure inside the API, which answers a Problem (500) and one
rate-limited log line (the exception and where it was raised) instead of
a traceback per request.
"""

from __future__ import annotations

import json
import logging
import sys
import traceback

from overlay.language import limits
from overlay.log.ratelog import RateLimitedLog
from overlay.wire import protocol

log = logging.getLogger("plus.http")
MAX_DEPTH = 32
BODIES = 64 << 20
"""Bytes of request bodies all requests in progress may hold at once (those
waiting for their turn too: otherwise 1,000 waiting uploads of 1 MiB)."""
"""Nesting a request body may have: the deepest the API takes is 4."""
_JSON_TYPES = (b"", b"application/json")


class BadBody(ValueError):
    """A body that is not strict JSON: the text says where, without echoing it."""


def problem(error: str, status: int, kind: str) -> bytes:
    """A refusal's body, as every refusal of the API has it."""
    return json.dumps({"error": error, "status": status, "kind": kind}).encode()


def _refuse_constant(name: str) -> None:
    raise BadBody(f"the body is not JSON: {name} is not a number JSON allows")


def strict_json(body: bytes) -> object:
    """The body's JSON value, or BadBody: UTF-8 only, no NaN or Infinity,
    no lone surrogates in strings or names, at most MAX_DEPTH deep."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadBody(f"the body is not UTF-8 (byte {exc.start} is not)") from None
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise BadBody(f"the body is nested more than {MAX_DEPTH} deep") from None
    except json.JSONDecodeError as exc:
        raise BadBody(f"the body is not JSON: {exc.msg} at line {exc.lineno} column "
                      f"{exc.colno}") from None
    except BadBody:
        raise
    except ValueError:              # an integer of more digits than Python converts
        raise BadBody(f"the body holds an integer of more than {sys.get_int_max_str_digits()} "
                      "digits") from None
    _check(value)
    return value


def _check(value: object) -> None:
    """Depth and strings of a parsed value, without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                raise BadBody(f"the body is nested more than {MAX_DEPTH} deep")
            children = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in children:
                if isinstance(key, str):
                    _encodable(key)
                stack.append((child, depth + 1))
        elif isinstance(item, str):
            _encodable(item)


def _encodable(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadBody(f"the body holds a lone surrogate (\\u{ord(text[exc.start]):04x}) in a "
                      "string: only whole UTF-16 pairs are text") from None


class Gate:
    """The API's outermost ASGI layer (see the module's docstring)."""

    def __init__(self, app, limit: int, budget: int = BODIES) -> None:
        self.app, self.limit, self.budget = app, limit, budget
        self.held = 0           # bytes of the bodies of the requests in progress
        self.failures = RateLimitedLog(log, burst=10)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: dict) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._checked(scope, receive, sending)
        except Exception as exc:
            frames = traceback.extract_tb(exc.__traceback__)
            where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
            self.failures.log(logging.ERROR, type(exc), "%s %s failed: %s: %s%s",
                              scope.get("method"), limits.shown(scope.get("path", "")),
                              type(exc).__name__, limits.shown(exc), where)
            if not started:
                await _answer(send, 500, problem(
                    f"internal error in the HTTP API ({type(exc).__name__}); the daemon's log "
                    "has the details", protocol.EXIT_REFUSED, "internal"))

    async def _checked(self, scope, receive, send) -> None:
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.limit:
            await _answer(send, 413, problem(f"the request body is longer than {self.limit} bytes",
                                             protocol.EXIT_USAGE, "invalid"))
            return
        size = 0
        try:
            body = await self._body(receive, send)
            if body is None:
                return
            size = len(body)
            await self._pass_on(scope, headers, body, receive, send)
        finally:
            self.held -= size

    async def _body(self, receive, send) -> bytes | None:
        """The whole body, counted into what all requests hold (the caller
        counts it out when the request ends); None, counted out, when it is
        refused (too long, or too much held) or the client went away."""
        chunks, size, more = [], 0, True
        try:
            while more:
                message = await receive()
                if message["type"] != "http.request":
                    self.held -= size
                    return None                         # the client went away
                chunks.append(message.get("body", b""))
                size += len(chunks[-1])
                self.held += len(chunks[-1])
                if size > self.limit or self.held > self.budget:
                    self.held -= size
                    if size > self.limit:
                        await _answer(send, 413, problem(
                            f"the request body is longer than {self.limit} bytes",
                            protocol.EXIT_USAGE, "invalid"))
                    else:
                        await _answer(send, 503, problem(
                            "the API holds as many request bodies as it may; try again shortly",
                            protocol.EXIT_REFUSED, "busy"), retry=True)
                    return None
                more = message.get("more_body", False)
        except BaseException:
            self.held -= size
            raise
        return b"".join(chunks)

    async def _pass_on(self, scope, headers: dict, body: bytes, receive, send) -> None:
        """Refuse a body that is not strict JSON; else hand the request on."""
        kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
        if body and kind in _JSON_TYPES:
            try:
                strict_json(body)
            except BadBody as exc:
                await _answer(send, 400, problem(str(exc), protocol.EXIT_USAGE, "invalid"))
                return

        pending: bytes | None = body

        async def replay() -> dict:
            """The body once; then the client's own messages, so that a
            response listening for the disconnect (a file) waits for it
            instead of being handed empty bodies in a busy loop."""
            nonlocal pending
            if pending is None:
                return await receive()
            sent, pending = pending, None
            return {"type": "http.request", "body": sent, "more_body": False}

        await self.app(scope, replay, send)


async def _answer(send, status: int, body: bytes, retry: bool = False) -> None:
    headers = [(b"content-type", b"application/json"),
               (b"content-length", str(len(body)).encode())]
    if retry:
        headers.append((b"retry-after", b"1"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
