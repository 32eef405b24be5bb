"""Each client's share of the daemon. The daemon shares its processor among
what it runs, so the fewer requests it runs at once, the sooner each is
answered: at most ``in_flight`` requests of all clients are being answered
at once, at most ``per_address`` of one address (an IPv6 client: its /64)
and ``per_user`` of one user there (the token's unverified subject: a
client minting tokens gains nothing, and a forged subject costs only the
forger's own address). The next request to go is that of the next address
in turn, so an address's share does not grow with its connections; one
address may have ``waiting`` requests queued, and is answered 429 with
Retry-After beyond.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import json
from collections import deque

from overlay import protocol
from overlay.http.gate import problem

IN_FLIGHT = 8
PER_ADDRESS = 4
PER_USER = 2
WAITING = 32


def address_of(scope: dict) -> str:
    """The client's address, an IPv6 one as its /64 (what one host holds)."""
    client = scope.get("client")
    host = client[0] if client else "unknown"
    try:
        found = ipaddress.ip_address(host)
    except ValueError:
        return host
    if found.version == 4:
        return str(found)
    if found.ipv4_mapped:
        return str(found.ipv4_mapped)
    return str(ipaddress.ip_network(f"{found}/64", strict=False))


def user_of(scope: dict) -> str:
    """Whom the bearer token says it is, unverified ("" without one): the
    daemon checks the token; this only keeps one user's tokens together."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            try:
                body = value.split(b" ", 1)[1].split(b".")[1]
                claims = json.loads(base64.urlsafe_b64decode(body + b"=" * (-len(body) % 4)))
                return f"{claims.get('iss')}|{claims.get('sub')}"[:256]
            except (IndexError, ValueError, AttributeError, RecursionError):
                return ""
    return ""


class _Address:
    """One address's requests: waiting (a future and the user each), and
    being answered, in all and per user."""

    def __init__(self) -> None:
        self.waiting: deque[tuple[asyncio.Future, str]] = deque()
        self.running = 0
        self.by_user: dict[str, int] = {}


class Fairness:
    def __init__(self, app, in_flight: int = IN_FLIGHT, per_address: int = PER_ADDRESS,
                 per_user: int = PER_USER, waiting: int = WAITING) -> None:
        self.app, self.in_flight, self.per_address = app, in_flight, per_address
        self.per_user, self.waiting = per_user, waiting
        self.addresses: dict[str, _Address] = {}
        self.turns: deque[str] = deque()        # addresses with requests waiting, in turn
        self.running = 0

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        key, user = address_of(scope), user_of(scope)
        address = self.addresses.setdefault(key, _Address())
        if len(address.waiting) >= self.waiting:
            self._forget(key)
            await _busy(send, len(address.waiting))
            return
        if not address.waiting and self._may_start(address, user):
            self._start(address, user)
        else:
            turn = asyncio.get_running_loop().create_future()
            address.waiting.append((turn, user))
            if key not in self.turns:
                self.turns.append(key)
            self._dispatch()           # another user of the address may go now
            try:
                await turn             # _dispatch starts it
            except asyncio.CancelledError:
                if not turn.cancelled():       # started, then the client went
                    self._finish(key, address, user)
                    raise
                if (turn, user) in address.waiting:
                    address.waiting.remove((turn, user))
                if not address.waiting and key in self.turns:
                    self.turns.remove(key)
                self._forget(key)
                raise
        try:
            await self.app(scope, receive, send)
        finally:
            self._finish(key, address, user)

    def _may_start(self, address: _Address, user: str) -> bool:
        return (self.running < self.in_flight and address.running < self.per_address
                and address.by_user.get(user, 0) < self.per_user)

    def _start(self, address: _Address, user: str) -> None:
        self.running += 1
        address.running += 1
        address.by_user[user] = address.by_user.get(user, 0) + 1

    def _finish(self, key: str, address: _Address, user: str) -> None:
        self.running -= 1
        address.running -= 1
        address.by_user[user] -= 1
        if not address.by_user[user]:
            del address.by_user[user]
        self._dispatch()
        self._forget(key)

    def _dispatch(self) -> None:
        """Start waiting requests, an address at a time in turn, while
        there is room."""
        tried = 0
        while self.turns and self.running < self.in_flight and tried < len(self.turns):
            key = self.turns[0]
            self.turns.rotate(-1)
            address = self.addresses[key]
            chosen = next((entry for entry in address.waiting if not entry[0].cancelled()
                           and self._may_start(address, entry[1])), None)
            if chosen is None:
                tried += 1
                continue
            tried = 0
            address.waiting.remove(chosen)
            if not address.waiting:
                self.turns.remove(key)
            self._start(address, chosen[1])
            chosen[0].set_result(None)

    def _forget(self, key: str) -> None:
        address = self.addresses.get(key)
        if address is not None and not address.running and not address.waiting:
            del self.addresses[key]


async def _busy(send, waiting: int) -> None:
    body = problem(f"{waiting} requests from your address are waiting, the limit per client; "
                   "wait for their answers", protocol.EXIT_REFUSED, "busy")
    await send({"type": "http.response.start", "status": 429,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"retry-after", b"1")]})
    await send({"type": "http.response.body", "body": body})
