"""Which TCP connections the HTTP API keeps, and for how long: the part of
the network face that a client without a token reaches first.

uvicorn keeps a connection that sends nothing, or a header line every few
seconds, for ever, and answers everyone 503 once 256 are held. Here each
connection is admitted (at most ``per_client`` at once from one address
(an IPv6 client: its /64), ``total`` from all: at that total the
connection idle the longest is dropped for the new one, so idle ones
cannot shut others out), its request (head and body) must arrive whole
within ``request_timeout`` seconds of the connection or of the previous
response, and a response must be taken by the client within
``response_timeout`` seconds, or the connection is reset. The kernel's
send buffer of a connection is capped (SEND_BUFFER) and a reset discards
what it holds, so clients that never read pin no memory of the host's. A
refused connection is told why in one short answer and closed at once.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections import Counter, OrderedDict
from dataclasses import dataclass, field

from uvicorn.protocols.http.h11_impl import H11Protocol

from overlay import protocol
from overlay.http.fairness import address_of
from overlay.http.gate import problem

SEND_BUFFER = 64 << 10
"""Bytes of a connection's answer the kernel holds (it doubles it): the rest
waits in the companion, under uvicorn's flow control."""
_RESET = struct.pack("ii", 1, 0)
"""SO_LINGER on, 0 s: close() resets the connection and drops what is unsent."""


@dataclass
class Admission:
    """The bounds, the connections held now by client address, and those
    waiting for a whole request (idle, or sending it slowly), the longest
    waiting first."""

    total: int
    per_client: int
    request_timeout: float
    response_timeout: float
    held: Counter = field(default_factory=Counter)
    open: int = 0
    idle: OrderedDict = field(default_factory=OrderedDict)

    def admit(self, address: str) -> tuple[int, str] | None:
        """Count a connection in (dropping the longest idle one at the
        total); or (status, why) it is refused."""
        if self.held[address] >= self.per_client:
            return 429, (f"{self.per_client} connections from {address} are open, the limit per "
                         "client; close some, or wait for them")
        if self.open >= self.total:
            if not self.idle:
                return 503, (f"{self.total} connections are busy, the API's limit; try again "
                             "shortly")
            self.idle.popitem(last=False)[1].drop()
        self.held[address] += 1
        self.open += 1
        return None

    def release(self, address: str) -> None:
        self.open -= 1
        self.held[address] -= 1
        if self.held[address] <= 0:
            del self.held[address]


def protocol_for(admission: Admission) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 protocol, admitting and timing its connections
    by ``admission`` (one per server: the counts are shared)."""

    class Admitted(_Admitted):
        bounds = admission

    return Admitted


class _Admitted(H11Protocol):
    bounds: Admission

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._address: str | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._answered = None              # the request cycle last answered
        address = address_of({"client": self.client})
        refusal = self.bounds.admit(address)
        if refusal is not None:
            self._refuse(*refusal)
            return
        self._address = address
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        self._await_request(None)

    def _refuse(self, status: int, why: str) -> None:
        body = problem(why, protocol.EXIT_REFUSED, "busy")
        reason = b"Too Many Requests" if status == 429 else b"Service Unavailable"
        self.transport.write(b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\n"
                             b"content-length: %d\r\nretry-after: 1\r\nconnection: close\r\n\r\n"
                             % (status, reason, len(body)) + body)
        self.transport.close()

    def _arm(self, seconds: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.loop.call_later(seconds, self.drop)

    def _await_request(self, answered) -> None:
        """Time the next request: any cycle but ``answered``, whole."""
        self._answered = answered
        self._arm(self.bounds.request_timeout)
        self.bounds.idle[id(self)] = self

    def drop(self) -> None:
        """Reset the connection now, dropping whatever the kernel holds of
        it, and count it out (its end comes later)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._leave()
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
            except OSError:
                pass
        self.transport.abort()

    def _leave(self) -> None:
        self.bounds.idle.pop(id(self), None)
        if self._address is not None:
            self.bounds.release(self._address)
            self._address = None

    def _check_request(self) -> None:
        """Once the awaited request is whole, its response is what is timed."""
        cycle = self.cycle
        if (self._address is not None and self._timer is not None and cycle is not None
                and cycle is not self._answered and not cycle.more_body
                and not cycle.response_complete):
            self._answered = cycle
            self.bounds.idle.pop(id(self), None)
            self._arm(self.bounds.response_timeout)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._check_request()

    def on_response_complete(self) -> None:
        answered = self.cycle
        super().on_response_complete()      # may start a pipelined request's cycle
        if not self.transport.is_closing() and self._address is not None:
            self._await_request(answered)
            self._check_request()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._leave()
