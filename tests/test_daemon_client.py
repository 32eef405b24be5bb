"""How the companion passes the daemon's listings on without decoding them:
it relies on the daemon's replies being written by overlay.wire.fastjson, so
this checks that the daemon's framing and the companion's reading agree."""

from __future__ import annotations

import socket

from overlay.network.http.daemon_client import data_of, reply_of
from overlay.wire import protocol


def _sent(reply: dict) -> bytes:
    """A reply as the daemon's socket writes it."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        protocol.send_message(ours, reply)
        return theirs.recv(1 << 16)


def test_a_granted_page_is_passed_on_as_written_and_a_refusal_read():
    page = {"total": 3, "items": [{"id": 1, "name": "é\\n"}]}
    raw = _sent({"ok": True, "data": page})
    assert data_of(raw) == raw[len(b'{"ok":true,"data":'):-2]
    assert reply_of(raw)["data"] == page and reply_of(data_of(raw) + b"\n") == page
    refused = _sent({"ok": False, "error": "no", "status": 1, "kind": "forbidden"})
    assert data_of(refused) is None and reply_of(refused)["kind"] == "forbidden"
