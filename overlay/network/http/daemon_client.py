"""The HTTP companion's way to the daemon: one request per connection on
its Unix socket (overlay.wire.protocol's framing), awaited on the event loop.

A request waiting for the daemon holds no thread, so a slow or flooded
daemon cannot use up the companion's threads and stall every client; the
whole exchange is bounded by ``timeout`` (then ProtocolError, which the
API answers 503) and the reply by REPLY_BYTES.
"""

from __future__ import annotations

import asyncio

from overlay.wire import fastjson
from overlay.wire.protocol import ProtocolError

GRANTED = fastjson.dumps({"ok": True, "data": None}).encode()[:-5]
"""How a granted reply begins: '{"ok":true,"data":'."""

REPLY_BYTES = 64 << 20
"""The longest reply read: a page of 1,000 full views is about 2 MB."""


async def call(path: str, message: dict, timeout: float) -> bytes:
    """The daemon's reply to ``message``: its line, as it came."""
    try:
        return await asyncio.wait_for(_exchange(path, message), timeout)
    except asyncio.TimeoutError:
        raise ProtocolError(f"plus_scheduler did not answer within {timeout:g} s") from None


def reply_of(raw: bytes) -> dict:
    """A reply line's object."""
    try:
        reply = fastjson.loads(raw)
    except (ValueError, RecursionError):
        raise ProtocolError("plus_scheduler's answer is unreadable") from None
    if not isinstance(reply, dict):
        raise ProtocolError("plus_scheduler's answer is not a JSON object")
    return reply


def data_of(raw: bytes) -> bytes | None:
    """The JSON of a granted reply's data, as the daemon wrote it (its
    replies are written by overlay.wire.fastjson, compact, in this order); None
    for any other reply. Listings pass through the companion so, never
    decoded and encoded again: for pages of a thousand ARs that work was
    more than the daemon's."""
    if raw.startswith(GRANTED) and raw.endswith(b"}\n"):
        return raw[len(GRANTED):-2]
    return None


async def _exchange(path: str, message: dict) -> dict:
    try:
        reader, writer = await asyncio.open_unix_connection(path, limit=REPLY_BYTES)
    except OSError as exc:
        raise ProtocolError(f"cannot reach plus_scheduler at {path} "
                            f"({exc.strerror or exc})") from None
    try:
        writer.write(fastjson.dumps(message).encode() + b"\n")
        try:
            await writer.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass        # refused before it read the request (busy): its answer is waiting
        try:
            raw = await reader.readline()
        except (asyncio.LimitOverrunError, ValueError):
            raise ProtocolError(f"the daemon's answer is longer than {REPLY_BYTES} bytes") \
                from None
        except ConnectionResetError:
            raw = b""
    except OSError as exc:      # e.g. not connected: the daemon's queue was full
        raise ProtocolError(f"plus_scheduler did not take the request ({exc.strerror or exc})") \
            from None
    finally:
        writer.close()
    if not raw.endswith(b"\n"):
        raise ProtocolError("plus_scheduler closed the connection without an answer")
    return raw

