"""Each client's share of the API: a client (a bearer token, or an address
without one) has at most ``in_flight`` requests being answered at once and
``waiting`` more queued behind them; beyond that it is told 429 with
Retry-After at once. One user looping on 64 connections then takes four
answers' worth of the daemon at a time, not all of it, and another user's
request goes straight in.
"""

from __future__ import annotations

import asyncio
import hashlib

from overlay import protocol
from overlay.http.gate import problem

IN_FLIGHT = 2
WAITING = 16


class _Share:
    """One client's requests: those answered now, and those queued."""

    def __init__(self, in_flight: int) -> None:
        self.turns = asyncio.Semaphore(in_flight)
        self.holders = 0          # answered or queued


def client_of(scope: dict) -> str:
    """Whose request it is: its bearer token (hashed: keys are kept), or its
    address when it carries none."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            return "token:" + hashlib.sha256(value).hexdigest()[:32]
    client = scope.get("client")
    return f"address:{client[0] if client else 'unknown'}"


class Fairness:
    def __init__(self, app, in_flight: int = IN_FLIGHT, waiting: int = WAITING) -> None:
        self.app, self.in_flight, self.waiting = app, in_flight, waiting
        self.shares: dict[str, _Share] = {}

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        key = client_of(scope)
        share = self.shares.get(key)
        if share is None:
            share = self.shares[key] = _Share(self.in_flight)
        if share.holders >= self.in_flight + self.waiting:
            await _busy(send, share.holders)
            return
        share.holders += 1
        try:
            async with share.turns:
                await self.app(scope, receive, send)
        finally:
            share.holders -= 1
            if not share.holders:
                del self.shares[key]


async def _busy(send, holders: int) -> None:
    body = problem(f"you have {holders} requests in progress or queued, the limit per client; "
                   "wait for their answers", protocol.EXIT_REFUSED, "busy")
    await send({"type": "http.response.start", "status": 429,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"retry-after", b"1")]})
    await send({"type": "http.response.body", "body": body})
