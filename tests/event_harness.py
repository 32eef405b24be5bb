"""What the event tests share: a webhook receiver on loopback, an SSE
client that reconnects with Last-Event-ID as EventSource does, a webhook
registered for a receiver, and a wait for a condition."""

from __future__ import annotations

import http.server
import json
import threading
import time

import httpx

from http_harness import auth
from overlay.events import signing

WAIT = 90


class Receiver:
    """A webhook receiver on loopback: what it was sent (id, headers, body,
    when), answering ``status`` (or hanging ``delay`` seconds first)."""

    def __init__(self, status: int = 200, delay: float = 0.0, port: int = 0) -> None:
        self.status, self.delay = status, delay
        self.got: list[tuple[int, dict, bytes, float]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with outer.lock:
                    outer.got.append((int(self.headers[signing.EVENT_ID_HEADER]),
                                      dict(self.headers), body, time.monotonic()))
                    status, delay = outer.status, outer.delay
                time.sleep(delay)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def taken(self) -> list[dict]:
        """The events answered 2xx, each id once (a repeat dropped, as a receiver does)."""
        with self.lock:
            seen = {}
            for event_id, _, body, _ in self.got:
                seen.setdefault(event_id, json.loads(body))
            return [seen[key] for key in sorted(seen)]

    def close(self) -> None:
        self.server.shutdown()


class Stream:
    """An SSE client on a thread of its own, reconnecting with Last-Event-ID
    as EventSource does, keeping every event and each id's count."""

    def __init__(self, url: str, bearer: str, **params) -> None:
        self.url, self.bearer, self.params = url, bearer, params
        self.events: list[dict] = []
        self.last: str | None = None
        self.stopping = threading.Event()
        self.connects = 0
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self.stopping.is_set():
            headers = auth(self.bearer)
            if self.last is not None:
                headers["Last-Event-ID"] = self.last
            try:
                with httpx.stream("GET", self.url + "/v1/events", headers=headers,
                                  params=self.params, timeout=60) as response:
                    if response.status_code != 200:
                        time.sleep(0.3)
                        continue
                    self.connects += 1
                    self._read(response)
            except httpx.HTTPError:
                time.sleep(0.3)

    def _read(self, response: httpx.Response) -> None:
        fields: dict[str, str] = {}
        for line in response.iter_lines():
            if self.stopping.is_set():
                return
            if line == "":
                if "data" in fields and "id" in fields:
                    self.events.append(json.loads(fields["data"]))
                    self.last = fields["id"]
                fields = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(":")
                fields[name] = value.removeprefix(" ")

    def close(self) -> None:
        self.stopping.set()


def until(condition, what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.1)


def register_hook(url: str, bearer: str, receiver: Receiver, **extra) -> dict:
    made = httpx.post(url + "/v1/webhooks", headers=auth(bearer),
                      json={"url": receiver.url, **extra})
    assert made.status_code == 201, made.text
    assert made.headers["Location"].endswith("/v1/webhooks/" + made.json()["id"])
    return made.json()
