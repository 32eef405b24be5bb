"""The daemon's socket against hostile and careless local users: idle
connections, connection floods, oversized and malformed requests. None of
them may stop, stall or starve plus_scheduler for the other users."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from daemon_harness import BIN, Daemon

HOSTILE = Path(__file__).with_name("hostile_client.py")


def _client(daemon: Daemon) -> str:
    """hostile_client.py where every test user can read it."""
    target = daemon.dir / "hostile_client.py"
    if not target.exists():
        shutil.copy(HOSTILE, target)
        target.chmod(0o644)
    return str(target)


def _hold(daemon: Daemon, user: str, count: int) -> tuple[subprocess.Popen, dict]:
    """``user`` opens ``count`` idle connections; returns the process holding
    them (close its stdin to let go) and what the daemon answered at once."""
    holder = subprocess.Popen(["runuser", "-u", user, "--", str(BIN / "python"), _client(daemon),
                               str(daemon.socket), "hold", str(count)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    summary = json.loads(holder.stdout.readline())
    return holder, summary


def _send(daemon: Daemon, user: str, payload: bytes) -> str:
    result = subprocess.run(["runuser", "-u", user, "--", str(BIN / "python"), _client(daemon),
                             str(daemon.socket), "send"], input=payload, capture_output=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.decode()


def _request(daemon: Daemon, user: str, message: object) -> dict:
    reply = _send(daemon, user, json.dumps(message).encode() + b"\n")
    return json.loads(reply)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks of 1/100 s


@pytest.fixture
def daemon():
    started = Daemon("max_connections_per_user: 4\n").start()
    yield started
    started.cleanup()


def test_an_idle_connection_is_answered_and_closed_after_request_timeout():
    daemon = Daemon("request_timeout: 1\n").start()
    try:
        _idle_connection_is_closed(daemon)
    finally:
        daemon.cleanup()


def _idle_connection_is_closed(daemon: Daemon) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(20)
        sock.connect(str(daemon.socket))
        began = time.monotonic()
        reply = json.loads(sock.recv(65536))
        assert sock.recv(65536) == b""
    assert time.monotonic() - began < 10
    assert reply["ok"] is False and "did not arrive in time" in reply["error"]
    assert daemon.run("plusu1", "plus_status").returncode == 0


def test_one_user_cannot_hold_every_connection(daemon):
    holder, summary = _hold(daemon, "plusu1", 10)
    try:
        assert summary["connected"] == 10
        assert len(summary["refused"]) == 6
        assert all("4 connections open, the limit per user" in r for r in summary["refused"])
        assert daemon.run("plusu2", "plus_status").returncode == 0
        mine = daemon.run("plusu1", "plus_status")
        assert mine.returncode == 1 and "busy" in mine.stderr
    finally:
        holder.communicate("")
    assert daemon.run("plusu1", "plus_status").returncode == 0
    assert "limit per user (max_connections_per_user)" in daemon.log.read_text()


def test_a_flood_of_requests_for_unknown_ars_leaves_the_others_served(daemon):
    """A user asking for ids no AR has, as fast as four connections go:
    each costs one lookup by key in the store; the others are served meanwhile."""
    flood = subprocess.Popen(["runuser", "-u", "plusu1", "--", str(BIN / "python"),
                              _client(daemon), str(daemon.socket), "flood", "4"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        flood.stdin.write(json.dumps({"op": "cancel", "args": {"id": 424242}}) + "\n")
        flood.stdin.flush()
        assert flood.stdout.readline() == "flooding\n"
        made = daemon.reserve("plusu2", "-s", "now+1h", "-D", "1h", "-n", "1")
        assert [ar["id"] for ar in daemon.status()] == [made["id"]]
        daemon.ok("plusu2", "plus_cancel", "-r", str(made["id"]))
    finally:
        replies, _ = flood.communicate("")
    counted = json.loads(replies)
    assert counted.get("AR 424242 does not exist", 0) > 0
    assert set(counted) <= {"AR 424242 does not exist", "plus_scheduler is busy: you have 4 "
                            "connections open, the limit per user; try again when your other "
                            "commands finish"}


def test_a_flood_of_idle_connections_from_many_users_leaves_root_served_and_no_spin():
    """With 200 open files the daemon keeps its connections at 16 (raising
    the limit is impossible: the hard limit is 200 too), refuses the rest,
    says so in its log, stays idle and answers root."""
    daemon = Daemon("request_timeout: 30\n").start(wrapper=("prlimit", "--nofile=200:200"))
    holders = []
    try:
        refused = []
        for user in ("plusu1", "plusu2", "plusu3"):
            holder, summary = _hold(daemon, user, 10)
            holders.append(holder)
            refused += summary["refused"]
        assert len(refused) == 30 - 16
        assert all("16 connections are open, its limit" in r for r in refused)
        before = _cpu_seconds(daemon.process.pid)
        time.sleep(2)
        assert _cpu_seconds(daemon.process.pid) - before < 0.5, "the daemon spins"
        assert daemon.run("root", "plus_status").returncode == 0
        log = daemon.log.read_text()
        assert "max_connections lowered from 1024 to 16" in log
        assert "the limit (max_connections)" in log
    finally:
        for holder in holders:
            holder.communicate("")
        daemon.cleanup()


def test_an_oversized_request_is_refused_without_reading_it_all(daemon):
    reply = _send(daemon, "plusu1", b"x" * (9 * 2 ** 20))
    assert reply == "closed" or "longer than 8388608 bytes" in json.loads(reply)["error"]
    assert daemon.run("plusu1", "plus_status").returncode == 0
    assert "longer than 8388608 bytes" in daemon.log.read_text()


def test_a_huge_users_list_is_refused_at_once(daemon):
    start = int(time.time()) + 3600
    began = time.monotonic()
    reply = _request(daemon, "plusu1", {"op": "reserve", "args": {
        "start": start, "end": start + 3600, "nodes": 1,
        "users": [f"user{i}" for i in range(400_000)]}})
    assert time.monotonic() - began < 10
    assert reply["ok"] is False and reply["status"] == 2
    assert "400000 entries; at most 256" in reply["error"]


NOW = int(time.time())
BAD_REQUESTS = [
    ({"memory_mb": -5}, "-mem: -5 is out of range"),
    ({"transactional": "false"}, "'transactional' must be true or false"),
    ({"start": NOW + 3_000_000 * 86400}, "-s: "),
    ({"end": 253402300799}, "-e: "),
    ({"nodes": -1}, "-n: -1 is out of range"),     # 0 is qrsub's request of slots
    ({"nodes": 10 ** 12}, "-n: 1000000000000 is out of range"),
    ({"nodes": "1"}, "'nodes' must be a whole number"),
    ({"nodes": True}, "'nodes' must be a whole number"),
    ({"name": "x\r\n5:forged"}, "-N: invalid AR name"),
    ({"name": "a" * 131072}, "characters)"),
    ({"arch": "*" * (1 << 20)}, "-arch: invalid pattern"),
    ({"os": "lin\x00ux"}, "-os: invalid pattern"),
    ({"attributes": [["gpu"]]}, "[name, value] pair"),
    ({"attributes": [["gpu", "y\nes"]]}, "-l: invalid resource"),
    ({"users": ["plusu2,plusu3"]}, "-U: invalid entry"),
    ({"users": "plusu2"}, "'users' must be a list"),
    ({"mail_options": "bz"}, "-m: invalid mail options"),
    ({"queues": ["all.q\n"]}, "-sgeq: invalid name"),
    ({"color": "red"}, "unknown argument 'color'"),
]


@pytest.mark.parametrize("change, error", BAD_REQUESTS, ids=[next(iter(c)) + str(i) for i, (c, _)
                                                             in enumerate(BAD_REQUESTS)])
def test_socket_requests_get_the_commands_checks(daemon, change, error):
    args = {"start": NOW + 3600, "end": NOW + 7200, "nodes": 1, **change}
    reply = _request(daemon, "plusu1", {"op": "reserve", "args": args})
    assert reply["ok"] is False, reply
    assert reply["status"] == 2 and error in reply["error"], reply
    assert "internal error" not in reply["error"] and len(reply["error"]) < 400
    assert daemon.status() == []


@pytest.mark.parametrize("message", [
    {"op": ["reserve"], "args": {}}, {"op": "reserve", "args": []}, {"op": "nope"},
    {"op": "status", "args": {"id": "1"}}, {"op": "modify", "args": {"id": 1, "duration": 0}},
    {"op": "cancel", "args": {"id": 10 ** 8}}, {"op": "status", "args": {"expired": -1}},
])
def test_malformed_messages_are_bad_requests(daemon, message):
    reply = _request(daemon, "plusu1", message)
    assert reply["ok"] is False and reply["status"] == 2, reply
    assert "internal error" not in reply["error"]
