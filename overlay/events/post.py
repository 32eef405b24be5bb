"""One webhook delivery: a POST bounded in time and size, as a receiver
may be slow or hostile. The whole exchange (name lookup, connection, TLS,
request, the status line) must end within the deadline; only the status
line is read, at most STATUS_LINE bytes of it, and the connection is then
closed, so a receiver that trickles or floods holds the deliverer for the
deadline at most. A redirect is never followed: 3xx is a failure, as any
answer but 2xx."""

from __future__ import annotations

import asyncio
import ssl
from urllib.parse import urlsplit

STATUS_LINE = 1024
"""Bytes of the receiver's answer read: its status line."""


class DeliveryFailed(Exception):
    """The receiver did not take the event; the text says why."""


async def post(url: str, body: bytes, headers: dict[str, str], deadline: float,
               tls: ssl.SSLContext | None = None) -> int:
    """POST ``body`` to ``url`` within ``deadline`` seconds; the 2xx status,
    or DeliveryFailed."""
    try:
        return await asyncio.wait_for(_exchange(url, body, headers, tls), deadline)
    except asyncio.TimeoutError:
        raise DeliveryFailed(f"no answer within {deadline:g} s") from None
    except (OSError, ssl.SSLError, ValueError, asyncio.IncompleteReadError,
            asyncio.LimitOverrunError) as exc:
        raise DeliveryFailed(f"{type(exc).__name__}: {exc}"[:200]) from None


async def _exchange(url: str, body: bytes, headers: dict[str, str],
                    tls: ssl.SSLContext | None) -> int:
    parts = urlsplit(url)
    secure = parts.scheme == "https"
    host = parts.hostname or ""
    port = parts.port or (443 if secure else 80)
    context = (tls or ssl.create_default_context()) if secure else None
    reader, writer = await asyncio.open_connection(host, port, ssl=context, limit=STATUS_LINE)
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
