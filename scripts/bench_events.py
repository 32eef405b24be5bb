"""Events delivered per second and their delay, over the event stream
(server-sent events) and a webhook, against a real daemon on a 1,000-node
cluster: users make ARs through the HTTP API as fast as they can (each
grant one event), while streams read GET /v1/events and a loopback
receiver takes the webhook's POSTs. The delay of an event is from the
moment its AR's creation was answered (committed) to the moment the stream
or the receiver had it.

Run as root with the venv's Python after the test set-up:
    /opt/plus-venv/bin/python scripts/bench_events.py [--ars 1000] [--streams 1 12]
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from bench_core import BIN, Daemon
from bench_ggf import Api, free_port
from calibration import python_speed

USERS = ("plusu1", "plusu2", "plusu3")
STREAMS_PER_USER = 4


def user_token(work: Path, user: str) -> str:
    return subprocess.run(["runuser", "-u", user, "--", "env", f"PLUS_CONF={work}/plus.yaml",
                           str(BIN / "plus_token")], capture_output=True, text=True,
                          check=True).stdout.strip()


class Seen:
    """When each AR's grant was seen, by one reader."""

    def __init__(self) -> None:
        self.at: dict[int, float] = {}
        self.lock = threading.Lock()

    def saw(self, ar_id: int) -> None:
        with self.lock:
            self.at.setdefault(ar_id, time.perf_counter())


def stream(port: int, token: str, seen: Seen, ready: threading.Event, stop: threading.Event,
           opened: list) -> None:
    """Read the event stream, reconnecting with Last-Event-ID, until ``stop``."""
    try:
        _read(port, token, seen, ready, stop, opened)
    except OSError:
        if not stop.is_set():
            raise


def _read(port: int, token: str, seen: Seen, ready: threading.Event, stop: threading.Event,
          opened: list) -> None:
    last = None
    while not stop.is_set():
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        opened.append(connection)
        headers = {"Authorization": f"Bearer {token}"}
        if last is not None:
            headers["Last-Event-ID"] = last
        connection.request("GET", "/v1/events", headers=headers)
        response = connection.getresponse()
        if response.status != 200:
            raise SystemExit(f"the stream answered {response.status}: {response.read()[:200]!r}")
        ready.set()
        for raw in response:
            line = raw.decode().rstrip("\n")
            if line.startswith("id: "):
                last = line[4:]
            elif line.startswith("data: "):
                seen.saw(json.loads(line[6:])["reservation"]["id"])
            if stop.is_set():
                break
        connection.close()


def receiver(seen: Seen) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.saw(json.loads(body)["reservation"]["id"])
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def replay(port: int, token: str, count: int) -> str:
    """One stream reading the last ``count`` events from Last-Event-ID: what
    a client back from an outage takes in, per second."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("GET", "/v1/events", headers={"Authorization": f"Bearer {token}",
                                                     "Last-Event-ID": "0"})
    began, got = time.perf_counter(), 0
    response = connection.getresponse()
    for raw in response:
        if raw.startswith(b"data: "):
            got += 1
            if got == count:
                break
    taken = time.perf_counter() - began
    connection.close()
    return f"replay from Last-Event-ID 0: {got} events in {taken:.2f} s, {got / taken:.0f} events/s"


def figures(name: str, made: dict[int, float], seen: Seen, began: float) -> str:
    delays = sorted((seen.at[ar] - made[ar]) * 1000 for ar in made if ar in seen.at)
    if len(delays) < len(made):
        return f"{name}: {len(delays)} of {len(made)} events seen"
    span = max(seen.at[ar] for ar in made) - began
    return (f"{name}: {len(made)} events in {span:.2f} s, {len(made) / span:.0f} events/s; "
            f"delay median {statistics.median(delays):.0f} ms, p95 "
            f"{delays[int(len(delays) * 0.95)]:.0f} ms, max {delays[-1]:.0f} ms")


def run(port: int, tokens: dict[str, str], ars: int, streams: int) -> None:
    stop, opened = threading.Event(), []
    readers = []
    for index in range(streams):
        user = USERS[index // STREAMS_PER_USER]
        seen, ready = Seen(), threading.Event()
        reader = threading.Thread(target=stream, daemon=True,
                                  args=(port, tokens[user], seen, ready, stop, opened))
        reader.start()
        readers.append((user, seen, ready, reader))
    for _, _, ready, _ in readers:
        if not ready.wait(60):
            raise SystemExit("a stream did not open")
    hooked = Seen()
    server = receiver(hooked)
    api = Api(port, tokens[USERS[0]])
    status, hook = api.request("POST", "/v1/webhooks", {
        "url": f"http://127.0.0.1:{server.server_address[1]}/hook"})
    if status != 201:
        raise SystemExit(f"the webhook was refused: {hook}")
    made: dict[int, float] = {}
    start = (int(time.time()) // 3600 + 24) * 3600
    began = time.perf_counter()
    for index in range(ars):
        status, ar = api.request("POST", "/v1/reservations", {
            "start": start + index * 60, "end": start + index * 60 + 600, "nodes": 1})
        if status != 201:
            raise SystemExit(f"reserve answered {status}: {ar}")
        made[ar["id"]] = time.perf_counter()
    made_in = time.perf_counter() - began
    deadline = time.monotonic() + 120
    mine = [seen for user, seen, _, _ in readers if user == USERS[0]]
    while time.monotonic() < deadline and not all(
            len(seen.at) >= ars for seen in [*mine, hooked]):
        time.sleep(0.1)
    stop.set()
    for connection in opened:
        if connection.sock is not None:
            connection.sock.shutdown(socket.SHUT_RDWR)
    for _, _, _, reader in readers:
        reader.join(30)
    print(f"{streams} stream(s) open ({len(mine)} of the ARs' owner); {ars} ARs made in "
          f"{made_in:.2f} s ({ars / made_in:.0f}/s) through the API")
    print("  " + figures("stream (SSE)", made, mine[0], began))
    print("  " + figures("webhook", made, hooked, began))
    api.request("DELETE", f"/v1/webhooks/{hook['id']}")
    server.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ars", type=int, default=1000)
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 12])
    args = parser.parse_args()
    print(python_speed())
    work = Path(tempfile.mkdtemp(prefix="plus-bench-events-"))
    os.chmod(work, 0o755)
    daemon, port = Daemon(work), free_port()
    with open(work / "plus.yaml", "a") as conf:
        conf.write(f"http: {{address: '127.0.0.1:{port}', max_requests_per_user: 8}}\n")
    try:
        daemon.start()
        Api(port, "").wait()
        tokens = {user: user_token(work, user) for user in USERS}
        for streams in args.streams:
            run(port, tokens, args.ars, min(streams, len(USERS) * STREAMS_PER_USER))
        print(replay(port, tokens[USERS[0]], args.ars * len(args.streams)))
    finally:
        daemon.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
