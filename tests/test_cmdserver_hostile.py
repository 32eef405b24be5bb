"""Hostile clients of the command server (overlay/cmdserver): oversize
requests, half a request and a stall, more connections than a user's cap,
garbage. Each is refused within its bound and logged at a limited rate,
and the server goes on serving others through the compiled client."""

from __future__ import annotations

import socket
import struct
import subprocess
import time

import pytest

from daemon_harness import BIN, VENV, Daemon
from overlay.cmdserver import frames
from test_client_differential import CLIENT

pytestmark = pytest.mark.skipif(not CLIENT.exists(), reason="no compiled client installed")
HOSTILE = """
import os, socket, struct, sys, time
kind = sys.argv[1]
conns = []
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[3])
    if kind == "half":
        try:
            s.sendmsg([struct.pack("=4sIIIII", b"PLC1", 0, 0o22, 1, 0, 100)[:10]])
        except BrokenPipeError:
            pass            # refused (over the cap) before it sent: its answer is still there
    conns.append(s)
print("connected", flush=True)
answers = []
for s in conns:
    s.settimeout(60)
    answers.append(s.recv(8))
print(" ".join(str(struct.unpack("=ii", a)[0]) if len(a) == 8 else "eof" for a in answers),
      flush=True)
"""


@pytest.fixture(scope="module")
def daemon():
    d = Daemon(settings="request_timeout: 10\nmax_connections_per_user: 2\n").start()
    yield d
    d.cleanup()


def _path(daemon: Daemon) -> str:
    return str(daemon.socket) + ".cmd"


def _served_quickly(daemon: Daemon) -> None:
    began = time.monotonic()
    result = daemon.run("plusu2", "plus_status")
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - began < 5        # well under request_timeout: not waiting on them


def _answer(conn: socket.socket) -> tuple[int, int]:
    conn.settimeout(30)
    data = b""
    while len(data) < 8:
        chunk = conn.recv(8 - len(data))
        assert chunk, "closed without an answer"
        data += chunk
    return frames.FRAME.unpack(data)


def _connect(daemon: Daemon) -> socket.socket:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(_path(daemon))
    return conn


def test_an_oversize_request_is_refused_without_reading_it(daemon):
    conn = _connect(daemon)
    header = struct.pack("=4sIIIII", b"PLC1", 0, 0o22, 1, 0, frames.MAX_BODY + 1)
    conn.sendmsg([header], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                             struct.pack("i", conn.fileno()))])
    assert _answer(conn) == (frames.REFUSED, 0)
    for words, entries in ((frames.MAX_WORDS + 1, 0), (1, frames.MAX_ENTRIES + 1)):
        conn = _connect(daemon)
        conn.sendmsg([struct.pack("=4sIIIII", b"PLC1", 0, 0o22, words, entries, 10)],
                     [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", conn.fileno()))])
        assert _answer(conn) == (frames.REFUSED, 0)
    _served_quickly(daemon)
    _logged(daemon, "a request over its bounds")


def test_garbage_is_refused_and_logged_at_a_limited_rate(daemon):
    for _ in range(20):
        conn = _connect(daemon)
        conn.sendall(b"GET / HTTP/1.0\r\n\r\n" + bytes(range(256)))
        assert _answer(conn) == (frames.REFUSED, 0)
    _served_quickly(daemon)
    assert 1 <= _logged(daemon, "a malformed request") <= 2


def test_half_a_request_then_a_stall_is_refused_at_request_timeout_others_served(daemon):
    stalled = subprocess.Popen(["runuser", "-u", "plusu1", "--", str(BIN.parent / "bin/python"),
                                "-c", HOSTILE, "half", "1", _path(daemon)],
                               stdout=subprocess.PIPE, text=True)
    assert stalled.stdout.readline() == "connected\n"
    _served_quickly(daemon)
    assert stalled.stdout.readline().split() == [str(frames.REFUSED)]
    assert stalled.wait(timeout=30) == 0
    _logged(daemon, "did not arrive within request_timeout")


def test_more_connections_than_the_cap_are_refused_and_the_client_runs_python(daemon):
    stalled = subprocess.Popen(["runuser", "-u", "plusu1", "--", f"{VENV}/bin/python", "-c",
                                HOSTILE, "half", "3", _path(daemon)],
                               stdout=subprocess.PIPE, text=True)
    assert stalled.stdout.readline() == "connected\n"
    refused_at_once = daemon.run("plusu1", "plus_status")    # over the cap: Python serves it
    assert refused_at_once.returncode == 0, refused_at_once.stderr
    _served_quickly(daemon)                                  # another user is served
    answers = stalled.stdout.readline().split()
    assert sorted(answers) == [str(frames.REFUSED)] * 3      # the third at once, two at the timeout
    _logged(daemon, "the limit per user (max_connections_per_user)")


def test_the_caller_is_the_peer_not_what_it_sends(daemon):
    """A request naming root's HOME and USER runs as the peer all the same."""
    result = daemon.run("plusu1", "plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1",
                        "--json", env={"USER": "root", "LOGNAME": "root", "HOME": "/root"})
    assert result.returncode == 0, result.stderr
    assert '"owner": "plusu1"' in result.stdout


STARTED_BY = """
import array, os, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
body = b"plus_status\\0PLUS_CONF=" + sys.argv[2].encode() + b"\\0"
fds = [os.open("/", os.O_RDONLY), os.open(os.devnull, os.O_WRONLY)]
s.sendmsg([struct.pack("=4sIIIII", b"PLC1", 2, 0o22, 1, 1, len(body)), body],
          [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())])
frames = b""
while len(frames) < 16:
    chunk = s.recv(16 - len(frames))
    if not chunk:
        break
    frames += chunk
print(*struct.unpack("=iiii", frames) if len(frames) == 16 else ["short", frames])
"""


def _worker_of(daemon: Daemon, user: str) -> int:
    """The pid of the worker that ran a plus_status of ``user`` (STARTED's
    value), after it ended with status 0."""
    shown = subprocess.run(["runuser", "-u", user, "--", f"{VENV}/bin/python", "-c", STARTED_BY,
                            _path(daemon), str(daemon.conf)], capture_output=True, text=True,
                           timeout=60)
    started, pid, exited, status = map(int, shown.stdout.split())
    assert (started, exited, status) == (frames.STARTED, frames.EXITED, 0), shown
    return pid


def test_a_warm_worker_serves_its_own_user_again_and_no_other(daemon):
    first = {_worker_of(daemon, "plusu1")}
    deadline = time.monotonic() + 60
    while True:                                   # kept warm once its client has gone
        again = _worker_of(daemon, "plusu1")
        if again in first or time.monotonic() > deadline:
            break
        first.add(again)
    assert again in first, "no worker served plusu1 twice"
    others = {_worker_of(daemon, "plusu2") for _ in range(5)}
    assert not others & first


def _logged(daemon: Daemon, what: str) -> int:
    """How many lines of the daemon's log say ``what`` (at least one)."""
    deadline = time.monotonic() + 30
    while True:
        count = daemon.log.read_text().count(what)
        if count or time.monotonic() > deadline:
            assert count, f"no log line {what!r}"
            return count
        time.sleep(0.05)
