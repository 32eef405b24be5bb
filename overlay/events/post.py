"""One webhook delivery: a POST bounded in time and size, as a receiver
may be slow or hostile. The whole exchange (name lookup, connection, TLS,
request, the status line) must end within the deadline; only the status
line is read, at most STATUS_LINE bytes of it, and the connection is then
closed, so a receiver that trickles or floods holds the deliverer for the
deadline at most. A redirect is never followed: 3xx is a failure, as any
answer but 2xx. The host's name is resolved here and the address it
resolves to is checked (``allowed``) and connected to, so a name cannot
lead a delivery inward (overlay.events.hooks)."""

from __future__ import annotations

import asyncio
import socket
import ssl
from typing import Callable
from urllib.parse import urlsplit

from overlay.events.hooks import unreachable_why

STATUS_LINE = 1024
"""Bytes of the receiver's answer read: its status line."""


class DeliveryFailed(Exception):
    """The receiver did not take the event; the text says why."""


async def post(url: str, body: bytes, headers: dict[str, str], deadline: float,
               allowed: Callable[[str], bool], tls: ssl.SSLContext | None = None) -> int:
    """POST ``body`` to ``url`` within ``deadline`` seconds, if the address
    its host resolves to is ``allowed``; the 2xx status, or DeliveryFailed."""
    try:
        return await asyncio.wait_for(_exchange(url, body, headers, allowed, tls), deadline)
    except asyncio.TimeoutError:
        raise DeliveryFailed(f"no answer within {deadline:g} s") from None
    except (OSError, ssl.SSLError, ValueError, asyncio.IncompleteReadError,
            asyncio.LimitOverrunError) as exc:
        raise DeliveryFailed(f"{type(exc).__name__}: {exc}"[:200]) from None


async def _exchange(url: str, body: bytes, headers: dict[str, str],
                    allowed: Callable[[str], bool], tls: ssl.SSLContext | None) -> int:
    parts = urlsplit(url)
    secure = parts.scheme == "https"
    host = parts.hostname or ""
    port = parts.port or (443 if secure else 80)
    context = (tls or ssl.create_default_context()) if secure else None
    found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    if not found:
        raise DeliveryFailed(f"{host} resolves to no address")
    address = found[0][4][0]
    if not allowed(address):
        raise DeliveryFailed(unreachable_why(host, address))
    reader, writer = await asyncio.open_connection(
        address, port, ssl=context, server_hostname=host if secure else None, limit=STATUS_LINE)
    try:
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        shown_host = f"[{host}]" if ":" in host else host
        head = [f"POST {target} HTTP/1.1", f"Host: {shown_host}:{port}",
                "Content-Type: application/json", f"Content-Length: {len(body)}",
                "User-Agent: plus-webhook", "Connection: close",
                *(f"{name}: {value}" for name, value in headers.items())]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await writer.drain()
        line = await reader.readuntil(b"\n")
    finally:
        writer.transport.abort()
    fields = line.decode("latin-1").split()
    if len(fields) < 2 or not fields[0].startswith("HTTP/") or not fields[1].isdigit():
        raise DeliveryFailed("the answer is not HTTP")
    status = int(fields[1])
    if not 200 <= status < 300:
        raise DeliveryFailed(f"answered {status}" + (" (redirects are not followed)"
                                                     if 300 <= status < 400 else ""))
    return status
