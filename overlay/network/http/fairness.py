"""Each client's share of the daemon. The daemon shares its processor among
what it runs, so the fewer requests it runs at once, the sooner each is
answered: at most ``in_flight`` requests of all clients are with the daemon
at once, at most ``per_address`` of one address (an IPv6 client: its /64)
and ``per_user`` of one user there (the token's unchecked subject: a client
minting tokens gains nothing, and a forged subject costs only the forger's
own address). The next to go is that of the next address in turn, so an
address's share does not grow with its connections; one address may have
``waiting`` requests queued, and is answered 429 with Retry-After beyond.
A turn covers the exchange with the daemon only, not the sending of the
answer: a client that reads slowly holds its own connection, no turn.

Which address goes next is the one that has used the daemon least lately
(the seconds its requests took, halved every HALF_LIFE seconds), as a
fair-share scheduler orders its users: an address asking for pages of a
thousand ARs from sixteen hosts waits behind one that asks for little, and
among addresses that used nothing the one waiting longest goes first.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import json
import time
from collections import OrderedDict, deque
from contextlib import asynccontextmanager
from typing import AsyncIterator

from overlay.network.http.refusal import Refusal
from overlay.wire import protocol

IN_FLIGHT = 8
PER_ADDRESS = 4
PER_USER = 2
WAITING = 32
HALF_LIFE = 10.0
USAGE_KEPT = 4096
"""Addresses whose usage is remembered once they have nothing in progress."""


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
    """Whom the bearer token says it is, unchecked ("" without one): the
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
    with the daemon, in all and per user."""

    def __init__(self) -> None:
        self.waiting: deque[tuple[asyncio.Future, str]] = deque()
        self.running = 0
        self.by_user: dict[str, int] = {}


class Usage:
    """Seconds of the daemon each address used, halved every HALF_LIFE."""

    def __init__(self, clock=time.monotonic) -> None:
        self.clock = clock
        self.used: OrderedDict[str, tuple[float, float]] = OrderedDict()   # value, as of when

    def of(self, key: str) -> float:
        value, when = self.used.get(key, (0.0, 0.0))
        return value * 0.5 ** ((self.clock() - when) / HALF_LIFE)

    def add(self, key: str, seconds: float) -> None:
        self.used[key] = (self.of(key) + seconds, self.clock())
        self.used.move_to_end(key)
        while len(self.used) > USAGE_KEPT:
            self.used.popitem(last=False)


class Dispatcher:
    def __init__(self, in_flight: int = IN_FLIGHT, per_address: int = PER_ADDRESS,
                 per_user: int = PER_USER, waiting: int = WAITING) -> None:
        self.in_flight, self.per_address = in_flight, per_address
        self.per_user, self.waiting = per_user, waiting
        self.addresses: dict[str, _Address] = {}
        self.turns: deque[str] = deque()        # addresses with requests waiting, longest first
        self.running = 0
        self.usage = Usage()

    @asynccontextmanager
    async def turn(self, key: str, user: str) -> AsyncIterator[None]:
        """Wait for this address's turn (Refusal 429 when it has too many
        waiting); hold it inside the block."""
        address = self.addresses.setdefault(key, _Address())
        if len(address.waiting) >= self.waiting:
            self._forget(key)
            raise Refusal(429, {"error": f"{len(address.waiting)} requests from your address are "
                                         "waiting, the limit per client; wait for their answers",
                                "status": protocol.EXIT_REFUSED, "kind": "busy"})
        if not self.turns and self._may_start(address, user):
            self._start(address, user)
        else:
            await self._wait(key, address, user)
        began = time.monotonic()
        try:
            yield
        finally:
            self.usage.add(key, time.monotonic() - began)
            self._finish(key, address, user)

    async def _wait(self, key: str, address: _Address, user: str) -> None:
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
        """Start waiting requests while there is room: each time that of the
        address that used the daemon least lately (the one waiting longest
        among equals), if it may start one."""
        while self.turns and self.running < self.in_flight:
            startable = []
            for order, key in enumerate(self.turns):
                address = self.addresses[key]
                entry = next((entry for entry in address.waiting if not entry[0].cancelled()
                              and self._may_start(address, entry[1])), None)
                if entry is not None:
                    startable.append((self.usage.of(key), order, key, entry))
            if not startable:
                return
            _, _, key, (turn, user) = min(startable, key=lambda found: found[:2])
            address = self.addresses[key]
            address.waiting.remove((turn, user))
            self.turns.remove(key)
            if address.waiting:
                self.turns.append(key)          # its next request waits its turn again
            self._start(address, user)
            turn.set_result(None)

    def _forget(self, key: str) -> None:
        address = self.addresses.get(key)
        if address is not None and not address.running and not address.waiting:
            del self.addresses[key]
