"""The tests' own sshd on 127.0.0.1:2222 (scripts/test-sshd.sh): where it is,
root's key and known_hosts for it, and how a test that needs it skips (or,
in CI, where it must be there, fails)."""

from __future__ import annotations

import os
import socket

import pytest

ADDRESS = ("127.0.0.1", 2222)
KEY = "/etc/plus-test/ssh/id_ed25519"
KNOWN_HOSTS = "/etc/plus-test/ssh/known_hosts"


def need_sshd() -> None:
    try:
        socket.create_connection(ADDRESS, timeout=2).close()
        return
    except OSError:
        pass
    message = ("the test sshd on 127.0.0.1:2222 does not answer: "
               "run bash scripts/test-sshd.sh as root")
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)
