"""How clients and plus_scheduler find and talk to each other.

One setting, PLUS_CONF (the YAML configuration's path), names everything:
its top-level ``state_dir`` and ``socket`` give the Unix socket. Clients
must start fast with the standard library only, so they read those two
plain scalars with a small line reader; the daemon checks at start that the
full YAML parser agrees with that reader.

Wire format: one JSON object per line. The client sends
``{"op": ..., "args": {...}}`` and gets ``{"ok": true, "data": ...}`` or
``{"ok": false, "error": "...", "status": N}``. Who the caller is comes
from the socket's peer credentials, never from the message.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time

DEFAULT_CONF = "/etc/plus/plus.yaml"
DEFAULT_STATE_DIR = "/var/lib/plus"
DEFAULT_SOCKET = "plus.sock"

EXIT_OK = 0
EXIT_REFUSED = 1        # the daemon refused: no nodes, not allowed, unknown AR
EXIT_USAGE = 2          # bad command line: unknown option, malformed value
EXIT_UNREACHABLE = 3    # no daemon answers on the socket
EXIT_LIMIT = 25         # max_advance_reservations reached (qrsub's status)

_SCALAR = re.compile(r"""^([A-Za-z_][A-Za-z0-9_]*):[ \t]*(?:"([^"]*)"|'([^']*)'|([^#'"\s][^#]*?))?[ \t]*(?:#.*)?$""")


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
            match = _SCALAR.match(line.rstrip("\n"))
            if match:
                value = next((g for g in match.groups()[1:] if g is not None), "")
                scalars[match.group(1)] = value
    return scalars


def socket_path(conf: str, state_dir: str | None, sock: str | None) -> str:
    """The socket named by a configuration: relative paths are taken from
    the configuration file's folder (state_dir) and from state_dir (socket)."""
    base = os.path.join(os.path.dirname(os.path.abspath(conf)), state_dir or DEFAULT_STATE_DIR)
    return os.path.normpath(os.path.join(base, sock or DEFAULT_SOCKET))


def client_socket_path(conf: str) -> str:
    scalars = read_top_level_scalars(conf)
    return socket_path(conf, scalars.get("state_dir"), scalars.get("socket"))


def send_message(sock: socket.socket, message: dict) -> None:
    sock.sendall(json.dumps(message, separators=(",", ":")).encode() + b"\n")


class TooLarge(ProtocolError):
    """A message longer than the receiver accepts."""


class TooSlow(ProtocolError):
    """A message that did not arrive whole in the time allowed."""


def receive_message(sock: socket.socket, limit: int | None = None,
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
        except socket.timeout:
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
        message = json.loads(raw)
    except ValueError as exc:
        raise ProtocolError(f"unreadable message: {exc}") from None
    except RecursionError:
        raise ProtocolError("unreadable message: nested too deeply") from None
    if not isinstance(message, dict):
        raise ProtocolError("unreadable message: not a JSON object")
    return message


def _connect(sock: socket.socket, path: str, timeout: float) -> None:
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


def call(path: str, op: str, args: dict, timeout: float = 120.0) -> dict:
    """One request to the daemon at ``path``; returns its reply object."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            _connect(sock, path, timeout)
        except OSError as exc:
            raise ProtocolError(
                f"cannot reach plus_scheduler at {path} ({exc.strerror or exc}); "
                "is it running, and does PLUS_CONF name its configuration?") from None
        try:
            send_message(sock, {"op": op, "args": args})
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused before it read the request (busy): its answer is waiting
        try:
            return receive_message(sock)
        except ConnectionResetError:
            raise ProtocolError("plus_scheduler closed the connection without an answer") from None
