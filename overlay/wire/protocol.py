"""How clients and plus_scheduler find and talk to each other.

One setting, PLUS_CONF (the YAML configuration's path), names everything:
its top-level ``state_dir`` and ``socket`` give the Unix socket. Clients
must start fast with the standard library only, so they read those two
plain scalars with a small line reader; the daemon checks at start that the
full YAML parser agrees with that reader.

Wire format: one JSON object per line (overlay.wire.fastjson). The client sends
``{"op": ..., "args": {...}}`` and gets ``{"ok": true, "data": ...}`` or
``{"ok": false, "error": "...", "status": N}``. Who the caller is comes
from the socket's peer credentials, never from the message.
"""

from __future__ import annotations

import _socket
import os
import time

from overlay.wire import fastjson

DEFAULT_CONF = "/etc/plus/plus.yaml"
DEFAULT_STATE_DIR = "/var/lib/plus"
DEFAULT_SOCKET = "plus.sock"

EXIT_OK = 0
EXIT_REFUSED = 1        # the daemon refused: no nodes, not allowed, unknown AR
EXIT_USAGE = 2          # bad command line: unknown option, malformed value
EXIT_UNREACHABLE = 3    # no daemon answers on the socket
EXIT_LIMIT = 25         # max_advance_reservations reached (qrsub's status)

_BLANKS = " \t"


class ProtocolError(Exception):
    """The daemon could not be reached or answered something unreadable."""


def conf_path() -> str:
    """The configuration file: $PLUS_CONF, else /etc/plus/plus.yaml."""
    return os.environ.get("PLUS_CONF") or DEFAULT_CONF


def read_top_level_scalars(path: str) -> dict[str, str]:
    """Top-level ``key: value`` lines of a YAML file (plain or quoted scalars)."""
    scalars = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            pair = _top_level_scalar(line.rstrip("\n"))
            if pair is not None:
                scalars[pair[0]] = pair[1]
    return scalars


def _top_level_scalar(line: str) -> tuple[str, str] | None:
    """``key: value`` at the start of a line, the key an ASCII identifier; the
    value plain (up to a #, without the blanks after it), in "" or '', or
    none (""), then blanks and a comment at most. The line reader costs no
    regex engine at a command's start."""
    key, colon, rest = line.partition(":")
    if not colon or not (key.isascii() and key.isidentifier()):
        return None
    rest = rest.lstrip(_BLANKS)
    if rest[:1] in ("'", '"'):
        close = rest.find(rest[0], 1)
        if close < 0:
            return None
        value, after = rest[1:close], rest[close + 1:]
        after = after.lstrip(_BLANKS)
        return (key, value) if not after or after.startswith("#") else None
    if rest[:1].isspace():
        return None
    return key, rest.partition("#")[0].rstrip(_BLANKS)


def socket_path(conf: str, state_dir: str | None, sock: str | None) -> str:
    """The socket named by a configuration: relative paths are taken from
    the configuration file's folder (state_dir) and from state_dir (socket)."""
    base = os.path.join(os.path.dirname(os.path.abspath(conf)), state_dir or DEFAULT_STATE_DIR)
    return os.path.normpath(os.path.join(base, sock or DEFAULT_SOCKET))


def client_socket_path(conf: str) -> str:
    scalars = read_top_level_scalars(conf)
    return socket_path(conf, scalars.get("state_dir"), scalars.get("socket"))


class Encoded:
    """A reply's data already written as JSON (a listing's rows, each kept
    encoded: overlay.daemon.services.views.SummaryCache), sent as it is."""

    __slots__ = ("json",)

    def __init__(self, json: str) -> None:
        self.json = json


def encoded_message(message: dict) -> bytes:
    """``message`` as one line of the wire, its data spliced in as it is
    where it came encoded."""
    data = message.get("data")
    if isinstance(data, Encoded):
        rest = fastjson.dumps({key: value for key, value in message.items() if key != "data"})
        return f'{rest[:-1]},"data":{data.json}}}\n'.encode()
    return fastjson.dumps(message).encode() + b"\n"


def send_message(sock: _socket.socket, message: dict) -> None:
    sock.sendall(encoded_message(message))


class TooLarge(ProtocolError):
    """A message longer than the receiver accepts."""


class TooSlow(ProtocolError):
    """A message that did not arrive whole in the time allowed."""


def receive_message(sock: _socket.socket, limit: int | None = None,
                    deadline: float | None = None) -> dict:
    """Read one newline-terminated JSON object of at most ``limit`` bytes,
    whole by ``deadline`` (time.monotonic()): the daemon gives every
    connection both, so a client that sends slowly or endlessly holds
    neither a thread nor memory for long."""
    chunks, size = [], 0
    while True:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TooSlow("the message did not arrive in time")
            sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            raise TooSlow("the message did not arrive in time") from None
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if chunk.endswith(b"\n"):
            break
        if limit is not None and size > limit:
            raise TooLarge(f"the message is longer than {limit} bytes")
    raw = b"".join(chunks)
    if not raw.endswith(b"\n"):
        raise ProtocolError("the connection closed before a whole message arrived")
    if limit is not None and size > limit:
        raise TooLarge(f"the message is longer than {limit} bytes")
    try:
        message = fastjson.loads(raw)
    except ValueError as exc:
        raise ProtocolError(f"unreadable message: {exc}") from None
    except RecursionError:
        raise ProtocolError("unreadable message: nested too deeply") from None
    if not isinstance(message, dict):
        raise ProtocolError("unreadable message: not a JSON object")
    return message


def _connect(sock: _socket.socket, path: str, timeout: float) -> None:
    """Connect, waiting while the daemon's listen queue is full (EAGAIN)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock.connect(path)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def call(path: str, op: str, args: dict, timeout: float = 120.0, **extra: str) -> dict:
    """One request to the daemon at ``path``; returns its reply object.
    ``extra``: the HTTP companion's bearer token ("token") and the UserID a
    metascheduler acts for ("as"). The C socket type serves: socket.py's
    enums cost a command 2 ms to import."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            _connect(sock, path, timeout)
        except OSError as exc:
            raise ProtocolError(
                f"cannot reach plus_scheduler at {path} ({exc.strerror or exc}); "
                "is it running, and does PLUS_CONF name its configuration?") from None
        try:
            send_message(sock, {"op": op, "args": args, **extra})
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused before it read the request (busy): its answer is waiting
        try:
            return receive_message(sock)
        except ConnectionResetError:
            raise ProtocolError("plus_scheduler closed the connection without an answer") from None
    finally:
        sock.close()
