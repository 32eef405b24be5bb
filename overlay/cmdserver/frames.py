"""The command socket's wire format, which client/plus_client.c speaks too.

The client sends one request: a header (struct ``HEADER``: the magic, which
of its standard streams it passes, its umask, how many argument words and
environment entries follow, and their length) carried with its descriptors
(SCM_RIGHTS: its working directory, then the standard streams it has
open), then the words and entries, each ended by a NUL. The worker answers
with frames of two native ints (``FRAME``): STARTED and its pid (the client
forwards signals there), then EXITED and the status or SIGNALLED and the
signal; or REFUSED before anything started, and the client runs the Python
command instead. Every count and length is bounded here, where it enters.
"""

from __future__ import annotations

import array
import os
import socket
import struct
import time
from typing import NamedTuple

MAGIC = b"PLC1"
HEADER = struct.Struct("=4sIIIII")
"""magic, streams (bit 0 stdin, 1 stdout, 2 stderr), umask, words, entries, body bytes."""
FRAME = struct.Struct("=ii")
STARTED, EXITED, SIGNALLED, REFUSED = 1, 2, 3, 4

MAX_WORDS = 4096
MAX_WORDS_BYTES = 1 << 20
MAX_ENTRIES = 4096
MAX_ENTRIES_BYTES = 256 << 10
"""The bounds client/plus_client.c checks before it connects (a request over
them runs the Python command), and the worker checks again."""
MAX_BODY = MAX_WORDS_BYTES + MAX_ENTRIES_BYTES
_FDS = 4


class BadRequest(Exception):
    """A request the real client never sends: ``kind`` says how it was bad."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Request(NamedTuple):
    words: list[bytes]
    entries: list[bytes]
    umask: int
    cwd: int
    streams: dict[int, int]
    """The client's standard stream number -> the descriptor received for it."""


def frame(kind: int, value: int) -> bytes:
    return FRAME.pack(kind, value)


def receive(conn: socket.socket, deadline: float) -> Request:
    """The request, whole by ``deadline`` (time.monotonic()), within the bounds."""
    try:
        return _receive(conn, deadline)
    except TimeoutError:
        raise BadRequest("slow", "the request did not arrive in time") from None
    except OSError as exc:
        raise BadRequest("garbage", f"the connection failed ({exc.strerror or exc})") from None


def _receive(conn: socket.socket, deadline: float) -> Request:
    fds = array.array("i")
    head = b""
    while len(head) < HEADER.size:
        _wait(conn, deadline)
        data, ancillary, _flags, _address = conn.recvmsg(
            HEADER.size - len(head), socket.CMSG_SPACE(_FDS * fds.itemsize))
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
        if not data:
            _close(fds)
            raise BadRequest("garbage", "the connection closed before a whole request arrived")
        head += data
    magic, streams, umask, words, entries, size = HEADER.unpack(head)
    expected = 1 + bin(streams & 7).count("1")
    if magic != MAGIC or streams > 7 or umask > 0o777 or len(fds) != expected:
        _close(fds)
        raise BadRequest("garbage", "not a request of plus_client")
    if words < 1 or words > MAX_WORDS or entries > MAX_ENTRIES or size > MAX_BODY:
        _close(fds)
        raise BadRequest("large", f"{words} words, {entries} entries, {size} bytes: over "
                                  f"{MAX_WORDS}, {MAX_ENTRIES}, {MAX_BODY}")
    try:
        body = _receive_exactly(conn, size, deadline)
    except (BadRequest, OSError):
        _close(fds)
        raise
    strings = body.split(b"\0")
    if strings.pop() != b"" or len(strings) != words + entries:
        _close(fds)
        raise BadRequest("garbage", "the words and entries do not match the header")
    if (sum(map(len, strings[:words])) + words > MAX_WORDS_BYTES
            or sum(map(len, strings[words:])) + entries > MAX_ENTRIES_BYTES):
        _close(fds)
        raise BadRequest("large", "the words or the entries are longer than their bound")
    given = iter(fds[1:])
    return Request(strings[:words], strings[words:], umask, fds[0],
                   {number: next(given) for number in range(3) if streams >> number & 1})


def _receive_exactly(conn: socket.socket, size: int, deadline: float) -> bytes:
    body = bytearray()
    while len(body) < size:
        _wait(conn, deadline)
        chunk = conn.recv(min(size - len(body), 1 << 16))
        if not chunk:
            raise BadRequest("garbage", "the connection closed before a whole request arrived")
        body += chunk
    return bytes(body)


def _wait(conn: socket.socket, deadline: float) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise BadRequest("slow", "the request did not arrive in time")
    conn.settimeout(left)


def _close(fds: array.array) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
