"""What the event tests share: a webhook receiver on loopback, an SSE
client that reconnects with Last-Event-ID as EventSource does, a webhook
registered for a receiver, and a wait for a condition."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import time
from typing import Iterator

import httpx

from http_harness import auth, token
from overlay.events import signing
from overlay.events.catalog import JOB_ENDED, JOB_STARTED

WAIT = 90
API_SETTINGS = "http: {{address: '127.0.0.1:{port}'}}\nwebhook_networks: [127.0.0.0/8]\n"
"""A daemon's HTTP API on ``port``, its webhooks allowed to loopback receivers."""


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


def job_events(events: list[dict]) -> list[tuple[str, str]]:
    """(type, job id) of the job events among ``events``, in order."""
    return [(e["type"], e["job"]["id"]) for e in events if e["type"].startswith("job.")]


def complete(seen: list[tuple[str, str]], jobs: tuple[str, ...]) -> bool:
    """Whether ``seen`` holds each job's start and end once, the start first."""
    return sorted(seen) == sorted((kind, job) for job in jobs for kind in (JOB_STARTED, JOB_ENDED)) \
        and all(seen.index((JOB_STARTED, job)) < seen.index((JOB_ENDED, job)) for job in jobs)


@contextlib.contextmanager
def watching(daemon, url: str) -> Iterator[tuple[dict[str, Stream], Receiver]]:
    """The streams of plusu1 (an AR's owner), plusu2 (named in its access
    list) and plusu3 (not named), connected, and plusu1's webhook's receiver."""
    receiver = Receiver()
    register_hook(url, token(daemon, "plusu1"), receiver)
    streams = {user: Stream(url, token(daemon, user)) for user in ("plusu1", "plusu2", "plusu3")}
    try:
        until(lambda: all(s.connects for s in streams.values()), "the streams")
        yield streams, receiver
    finally:
        for stream in streams.values():
            stream.close()
        receiver.close()


def seen_gone_once(streams: dict[str, Stream], receiver: Receiver, jobs: tuple[str, ...],
                   member_job: str, node: str, ran: int) -> None:
    """Each of ``jobs`` (of a Grid Engine or TORQUE AR of plusu1's naming
    plusu2) was seen started and ended once by id by plusu1, plusu2 and the
    webhook, none by plusu3; ``member_job``, plusu2's, ran ``ran`` seconds
    or more on ``node`` and left the running jobs (its exit status unknown)."""
    for user in ("plusu1", "plusu2"):
        until(lambda user=user: complete(job_events(streams[user].events), jobs),
              f"{user}'s stream")
    until(lambda: complete(job_events(receiver.taken()), jobs), "the webhook")
    assert job_events(streams["plusu1"].events) == job_events(receiver.taken())
    assert streams["plusu3"].events == []
    ended = {e["job"]["id"]: e for e in streams["plusu2"].events if e["type"] == JOB_ENDED}
    job = ended[member_job]["job"]
    assert (job["owner"], ended[member_job]["reservation"]["owner"]) == ("plusu2", "plusu1")
    assert job["nodes"] == [node] and (job["how"], job["exit_status"]) == ("gone", None)
    assert job["end"] - job["start"] >= ran
