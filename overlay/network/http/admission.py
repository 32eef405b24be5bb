"""Which TCP connections the HTTP API keeps, and for how long: the part of
the network face that a client without a token reaches first.

uvicorn keeps a connection that sends nothing, or a header line every few
seconds, for ever, and answers everyone 503 once 256 are held. Here each
connection is admitted as it is accepted, before any TLS handshake: at
most ``per_client`` at once from one address (an IPv6 client: its /64),
``total`` from all. At that total the connection least recently heard
from among those waiting for a request is dropped for the new one, or, when
all are busy, the least recently heard from of the address holding the
most, if the newcomer's holds fewer: neither idle connections nor a flood
from many addresses shut others out. The TLS handshake and the request
(head and body) must be done within ``request_timeout`` seconds of the
connection or of the previous answer, and an answer must be taken by the
client within ``response_timeout`` seconds (an answer still waiting in
this process's buffer is not taken), or the connection is reset. The
kernel's send buffer of a connection is capped (SEND_BUFFER) and a reset
discards what it holds, so clients that never read pin no memory of the
host's. A refused connection is told why in one short answer and closed.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
from collections import Counter, OrderedDict
from dataclasses import dataclass, field

from uvicorn.protocols.http.h11_impl import H11Protocol

from overlay.network.http.fairness import address_of
from overlay.network.http.gate import problem
from overlay.wire import protocol

SEND_BUFFER = 64 << 10
"""Bytes of a connection's answer the kernel holds (it doubles it): the rest
waits in the companion, under uvicorn's flow control."""
_RESET = struct.pack("ii", 1, 0)
"""SO_LINGER on, 0 s: close() resets the connection and drops what is unsent."""


@dataclass
class Admission:
    """The bounds, and the connections held now: by address, and those
    waiting for a whole request (idle, or sending it slowly); each ordered
    from the least recently heard from."""

    total: int
    per_client: int
    request_timeout: float
    response_timeout: float
    tls: ssl.SSLContext | None = None
    held: Counter = field(default_factory=Counter)
    open: int = 0
    by_address: dict = field(default_factory=dict)
    idle: OrderedDict = field(default_factory=OrderedDict)

    def admit(self, address: str, connection: "_Admitted") -> tuple[int, str] | None:
        """Count a connection in (making room at the total); or (status,
        why) it is refused."""
        if self.held[address] >= self.per_client:
            return 429, (f"{self.per_client} connections from {address} are open, the limit per "
                         "client; close some, or wait for them")
        if self.open >= self.total and not self._make_room(address):
            return 503, (f"{self.total} connections are busy, the API's limit; try again "
                         "shortly")
        self.held[address] += 1
        self.open += 1
        self.by_address.setdefault(address, OrderedDict())[id(connection)] = connection
        return None

    def _make_room(self, newcomer: str) -> bool:
        if self.idle:
            next(iter(self.idle.values())).drop()
            return True
        heaviest = max(self.held, key=self.held.__getitem__)
        if self.held[heaviest] <= self.held[newcomer] + 1:
            return False
        next(iter(self.by_address[heaviest].values())).drop()
        return True

    def heard(self, connection: "_Admitted", address: str) -> None:
        """The connection sent something: it is the most recently heard from."""
        key = id(connection)
        if key in self.idle:
            self.idle.move_to_end(key)
        self.by_address[address].move_to_end(key)

    def release(self, connection: "_Admitted", address: str) -> None:
        self.open -= 1
        self.held[address] -= 1
        if self.held[address] <= 0:
            del self.held[address]
        self.idle.pop(id(connection), None)
        held = self.by_address[address]
        held.pop(id(connection), None)
        if not held:
            del self.by_address[address]


def protocol_for(admission: Admission) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 protocol, admitting and timing its connections
    by ``admission`` (one per server: the counts are shared), doing the TLS
    handshake itself when ``admission.tls`` is set."""

    class Admitted(_Admitted):
        bounds = admission

    return Admitted


class _Admitted(H11Protocol):
    bounds: Admission

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """The accepted connection: admitted at once, then (with TLS) its
        handshake, then uvicorn's protocol on the connection it gives."""
        self._address: str | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._answered = None              # the request cycle last answered
        self._raw = transport
        self._early: list[bytes] | None = []   # bytes that came before uvicorn's side was made
        address = address_of({"client": transport.get_extra_info("peername")})
        refusal = self.bounds.admit(address, self)
        if refusal is not None:
            self._refuse(transport, *refusal)
            return
        self._address = address
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        self._arm(self.bounds.request_timeout)
        self.bounds.idle[id(self)] = self
        if self.bounds.tls is None:
            self._serve(transport)
        else:
            asyncio.get_running_loop().create_task(self._handshake(transport))

    async def _handshake(self, raw: asyncio.Transport) -> None:
        try:
            secured = await asyncio.get_running_loop().start_tls(
                raw, self, self.bounds.tls, server_side=True,
                ssl_handshake_timeout=self.bounds.request_timeout)
        except Exception:       # a handshake that failed or took too long: only this connection's
            self.drop()
            return
        if self._address is not None and secured is not None:
            self._serve(secured)

    def _serve(self, transport: asyncio.Transport) -> None:
        """uvicorn's side of the connection; then the request bytes that came
        with the end of the handshake, before ``start_tls`` returned."""
        super().connection_made(transport)
        self._answered = None
        early, self._early = self._early, None
        if early:
            self.data_received(b"".join(early))

    @staticmethod
    def _refuse(transport: asyncio.Transport, status: int, why: str) -> None:
        body = problem(why, protocol.EXIT_REFUSED, "busy")
        reason = b"Too Many Requests" if status == 429 else b"Service Unavailable"
        transport.write(b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\n"
                        b"content-length: %d\r\nretry-after: 1\r\nconnection: close\r\n\r\n"
                        % (status, reason, len(body)) + body)
        transport.close()

    def _arm(self, seconds: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(seconds, self.drop)

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
        sock = self._raw.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
            except OSError:
                pass
        self._raw.abort()

    def _leave(self) -> None:
        if self._address is not None:
            self.bounds.release(self, self._address)
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
        if self._address is not None:
            self.bounds.heard(self, self._address)
        if self._early is not None:
            self._early.append(data)
            return
        super().data_received(data)
        self._check_request()

    def on_response_complete(self) -> None:
        answered = self.cycle
        super().on_response_complete()      # may start a pipelined request's cycle
        if (not self.transport.is_closing() and self._address is not None
                and not self.transport.get_write_buffer_size()):   # taken, not only buffered
            self._await_request(answered)
            self._check_request()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.transport is not None:         # uvicorn's side was made
            super().connection_lost(exc)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._leave()
