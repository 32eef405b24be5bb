"""Events: a whole cycle of ARs (granted, changed, started, ending soon,
ended, cancelled) seen exactly once by id by an SSE client and by a
webhook receiver, across a restart of the daemon in the middle (the
stream resumed with Last-Event-ID, the webhook's cursor kept in the
store); receivers that are down, slow or answer 500 retried with backoff
without holding up others; signatures that verify; another user's events
unseen; bad registrations refused saying what is accepted."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import threading
import time
from typing import Iterator

import httpx
import pytest

from daemon_harness import Daemon
from event_harness import Receiver, Stream, register_hook, until
from http_harness import answering, auth, free_port, token
from overlay.events import delivery, signing
from overlay.events.catalog import (
    CANCELLED,
    CHANGED,
    ENDED,
    ENDING_SOON,
    GRANTED,
    STARTED,
)
from overlay.events.delivery import BASE, Deliverer, backoff
from overlay.events.hooks import checked_url, reachable
from overlay.events.post import DeliveryFailed, post
from overlay.language.model import InvalidRequest
from overlay.persistence.events import EventLog, Webhook
from overlay.persistence.store import Store

SETTINGS = ("http: {{address: '127.0.0.1:{port}'}}\nending_soon: [60, 600]\n"
            "webhook_networks: [127.0.0.0/8, '::1']\n")


def _types(events: list[dict], ar_id: int) -> list[str]:
    return [event["type"] for event in events if event["reservation"]["id"] == ar_id]


@pytest.fixture
def api():
    port = free_port()
    daemon = Daemon(SETTINGS.format(port=port))
    daemon.start()
    url = answering(daemon, port)
    yield daemon, url, port
    daemon.cleanup()


def test_a_whole_cycle_is_seen_once_by_id_by_a_stream_and_a_webhook_across_a_restart(api):
    daemon, url, port = api
    bearer = token(daemon, "plusu1")
    receiver = Receiver()
    hook = register_hook(url, bearer, receiver, ending_soon=60)
    stream = Stream(url, bearer, ending_soon=60)
    try:
        until(lambda: stream.connects, "the stream")
        now = int(time.time())
        first = httpx.post(url + "/v1/reservations", headers=auth(bearer),
                           json={"start": now + 3600, "end": now + 7200, "nodes": 1}).json()
        doomed = httpx.post(url + "/v1/reservations", headers=auth(bearer),
                            json={"start": now + 3600, "end": now + 7200, "nodes": 1}).json()
        until(lambda: len(receiver.taken()) == 2 and len(stream.events) == 2, "two grants")
        daemon.stop()                                 # the restart in the middle
        daemon.start()
        answering(daemon, port)
        now = int(time.time())
        changed = httpx.patch(url + f"/v1/reservations/{first['id']}", headers=auth(bearer),
                              json={"start": now + 4, "end": now + 12})
        assert changed.status_code == 200, changed.text
        assert httpx.delete(url + f"/v1/reservations/{doomed['id']}",
                            headers=auth(bearer)).status_code == 200
        cycle = [GRANTED, CHANGED, STARTED, ENDING_SOON, ENDED]
        until(lambda: _types(receiver.taken(), first["id"]) == cycle
               and _types(stream.events, first["id"]) == cycle, "the cycle")
        for seen in (receiver.taken(), stream.events):
            assert _types(seen, doomed["id"]) == [GRANTED, CANCELLED]
        ids = [event["id"] for event in stream.events]
        assert ids == sorted(set(ids)), "an event twice, or out of order, in the stream"
        assert [event["id"] for event in receiver.taken()] == ids
        assert stream.connects >= 2                   # it came back with Last-Event-ID
        for _, headers, body, _ in receiver.got:
            assert signing.verify(hook["secret"], headers[signing.SIGNATURE_HEADER], body)
            assert not signing.verify(hook["secret"], headers[signing.SIGNATURE_HEADER],
                                      body + b" ")
        soon = next(e for e in stream.events if e["type"] == ENDING_SOON)
        assert soon["lead"] == 60 and soon["reservation"]["end"] == now + 12
        listed = httpx.get(url + "/v1/webhooks", headers=auth(bearer)).json()
        assert [h["id"] for h in listed] == [hook["id"]] and "secret" not in listed[0]
        assert listed[0]["cursor"] >= ids[-1] or listed[0]["cursor"] == ids[-1]
    finally:
        stream.close()
        receiver.close()


def test_receivers_down_slow_or_failing_are_retried_with_backoff_and_hold_up_no_other(api):
    """Four webhooks of one user: one answers 500 twice then 200, one is
    down (nothing listens) and comes up, one hangs for longer than a
    delivery may take, one is well. The well one gets every event at once;
    the failing one gets it after retries spaced by the backoff; the down
    one once it listens; the slow one is cut off and tried again."""
    daemon, url, _ = api
    bearer = token(daemon, "plusu1")
    well, failing, slow = Receiver(), Receiver(status=500), Receiver(delay=60)
    down_port = free_port()
    hooks = [register_hook(url, bearer, receiver) for receiver in (well, failing, slow)]
    down = httpx.post(url + "/v1/webhooks", headers=auth(bearer),
                      json={"url": f"http://127.0.0.1:{down_port}/hook"}).json()
    late = None
    try:
        now = int(time.time())
        made = httpx.post(url + "/v1/reservations", headers=auth(bearer),
                          json={"start": now + 3600, "end": now + 7200, "nodes": 1}).json()
        until(lambda: len(failing.got) >= 3, "three tries of the failing receiver")
        assert [e["reservation"]["id"] for e in well.taken()] == [made["id"]]
        assert well.got[0][3] < failing.got[1][3]      # the well one did not wait for it
        gaps = [b[3] - a[3] for a, b in zip(failing.got, failing.got[1:], strict=False)]
        assert gaps[0] >= 0.9 * BASE and gaps[1] >= 1.8 * BASE, gaps    # backing off
        failing.status = 200
        until(lambda: failing.taken(), "the failing receiver's success", 30)
        late = Receiver(port=down_port)               # the receiver that was down comes up
        until(lambda: late.taken(), "the receiver that was down", 60)

        def listed() -> dict:
            return {h["id"]: h for h in httpx.get(url + "/v1/webhooks", headers=auth(bearer)).json()}

        until(lambda: listed()[hooks[2]["id"]]["failures"] >= 1, "the slow receiver cut off", 60)
        assert "no answer within" in listed()[hooks[2]["id"]]["last_error"]
        assert listed()[down["id"]]["failures"] == 0 and listed()[down["id"]]["delivered"] == 1
    finally:
        for receiver in (well, failing, slow, late):
            if receiver is not None:
                receiver.close()


def test_a_user_sees_only_the_events_of_ars_they_may_see(api):
    """plusu2's stream and webhook see plusu1's AR only once its access
    list names plusu2 (a user's webhook: their own ARs); a manager's
    webhook with every sees both."""
    daemon, url, _ = api
    one, two = token(daemon, "plusu1"), token(daemon, "plusu2")
    mine, everyone = Receiver(), Receiver()
    register_hook(url, two, mine)
    register_hook(url, token(daemon, "plusmgr"), everyone, every=True)
    stream = Stream(url, two)
    try:
        until(lambda: stream.connects, "the stream")
        now = int(time.time())
        private = httpx.post(url + "/v1/reservations", headers=auth(one),
                             json={"start": now + 3600, "end": now + 7200, "nodes": 1}).json()
        shared = httpx.post(url + "/v1/reservations", headers=auth(one),
                            json={"start": now + 3600, "end": now + 7200, "nodes": 1,
                                  "users": ["plusu2"]}).json()
        own = httpx.post(url + "/v1/reservations", headers=auth(two),
                         json={"start": now + 3600, "end": now + 7200, "nodes": 1}).json()
        until(lambda: len(everyone.taken()) == 3 and len(stream.events) == 2
               and len(mine.taken()) == 1, "the grants")
        assert [e["reservation"]["id"] for e in stream.events] == [shared["id"], own["id"]]
        assert [e["reservation"]["id"] for e in mine.taken()] == [own["id"]]
        assert private["id"] not in [e["reservation"]["id"] for e in stream.events]
        listed = httpx.get(url + "/v1/webhooks", headers=auth(two)).json()
        assert [h["owner"] for h in listed] == ["plusu2"]
    finally:
        stream.close()
        mine.close()
        everyone.close()


def _frames(lines: Iterator[str], enough) -> list[dict]:
    """A stream's next frames (a heartbeat as {"comment": ...}) from its
    ``lines`` until ``enough(frames)``."""
    frames: list[dict] = []
    fields: dict[str, str] = {}
    for line in lines:
        if line.startswith(":"):
            frames.append({"comment": line[1:].strip()})
        elif line == "":
            if fields:
                frames.append(fields)
            fields = {}
        else:
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
        if enough(frames):
            return frames
    return frames


def test_a_calendar_stream_is_told_others_ars_by_id_only_and_no_event_twice(api):
    """With calendar=true, plusu2 is told that plusu1's private AR changed
    (its id, nothing more: what GET /calendar shows anyone) and sees
    plusu1's shared AR whole; a frame of the id alone moves the stream past
    what it may not see; after a heartbeat no event comes again."""
    daemon, url, _ = api
    one, two = token(daemon, "plusu1"), token(daemon, "plusu2")
    now = int(time.time())
    made: list[dict] = []

    def make(**extra) -> None:
        answer = httpx.post(url + "/v1/reservations", headers=auth(one),
                            json={"start": now + 3600, "end": now + 7200, "nodes": 1, **extra})
        assert answer.status_code == 201, answer.text
        made.append(answer.json())

    def events(frames: list[dict]) -> list[dict]:
        return [json.loads(f["data"]) for f in frames if "data" in f and "id" in f]

    with httpx.stream("GET", url + "/v1/events", params={"calendar": "true"},
                      headers=auth(two), timeout=60) as response:
        assert response.status_code == 200
        lines = response.iter_lines()
        make()                 # after the stream began: its head was read before it answered
        frames = _frames(lines, lambda frames: events(frames))
        assert list(frames[1]) == ["id"], frames            # from now on: its id first
        make(users=["plusu2"])
        frames += _frames(lines, lambda more: any(f.get("comment") == "heartbeat"
                                                     for f in more))
        make(users=["plusu2"])
        frames += _frames(lines, lambda more: events(more))
    told = events(frames)
    assert [(e["type"], e["reservation"]) for e in told[:1]] == \
        [("calendar.changed", {"id": made[0]["id"]})], told
    assert [(e["type"], e["reservation"]["id"]) for e in told[1:]] == \
        [(GRANTED, made[1]["id"]), (GRANTED, made[2]["id"])], told
    ids = [e["id"] for e in told]
    assert ids == sorted(set(ids)), "an event twice in the stream"
    refused = httpx.get(url + "/v1/events", params={"calendar": "maybe"}, headers=auth(two))
    assert refused.status_code == 422 and "calendar" in refused.text, refused.text


def test_bad_registrations_and_streams_are_refused_saying_what_is_accepted(api):
    daemon, url, _ = api
    bearer = auth(token(daemon, "plusu1"))
    cases = [({"url": "http://example.org/hook"}, 400, "plain http is for loopback"),
             ({"url": "ftp://127.0.0.1/x"}, 400, "expected https://host"),
             ({"url": "https://u:p@example.org/"}, 400, "credentials"),
             ({"url": "https://example.org/", "types": ["ar.bogus"]}, 400, "accepted: "),
             ({"url": "https://example.org/", "ending_soon": 61}, 400, "accepted: 60, 600"),
             ({"url": "https://example.org/", "types": [ENDING_SOON]}, 400, "needs a lead"),
             ({"url": "https://example.org/", "every": True}, 403, "only a manager"),
             ({"url": "https://example.org/" + "x" * 3000}, 422, "url"),
             ({"url": "https://example.org/", "colour": "red"}, 422, "colour")]
    for body, status, words in cases:
        answer = httpx.post(url + "/v1/webhooks", headers=bearer, json=body)
        assert answer.status_code == status and words in answer.text, (body, answer.text)
    for _ in range(10):
        assert httpx.post(url + "/v1/webhooks", headers=bearer,
                          json={"url": "https://example.org/"}).status_code == 201
    eleventh = httpx.post(url + "/v1/webhooks", headers=bearer, json={"url": "https://example.org/"})
    assert eleventh.status_code == 409 and "the most allowed" in eleventh.text
    assert httpx.delete(url + "/v1/webhooks/wh0000000000000000", headers=bearer).status_code == 404
    assert httpx.delete(url + "/v1/webhooks/nope", headers=bearer).status_code == 400
    assert httpx.get(url + "/v1/events", headers={**bearer, "Last-Event-ID": "x"}).status_code == 400
    assert httpx.get(url + "/v1/events", params={"ending_soon": 5},
                     headers=bearer).status_code == 400
    assert httpx.get(url + "/v1/events").status_code == 401
    streams = [Stream(url, bearer["Authorization"].split()[1]) for _ in range(4)]
    try:
        until(lambda: all(s.connects for s in streams), "four streams")
        fifth = httpx.get(url + "/v1/events", headers=bearer)
        assert fifth.status_code == 429 and "4 event streams open" in fifth.text
        assert fifth.headers["Retry-After"]
    finally:
        for stream in streams:
            stream.close()


def test_urls_signatures_and_backoff_without_a_daemon():
    loopback = [ipaddress.ip_network("::1"), ipaddress.ip_network("127.0.0.0/8")]
    assert checked_url("http://[::1]:8080/x", loopback)
    assert checked_url("https://hooks.example.org/a?b=c") and checked_url("https://8.8.8.8/")
    for bad in ("http://10.0.0.1/", "https://", "https://h:0/", "https://h/a b", "https://h/\r\n"):
        with pytest.raises(InvalidRequest):
            checked_url(bad, loopback)
    for inward in ("http://127.0.0.1:8080/", "https://10.1.2.3/", "https://[fe80::1]/",
                   "https://169.254.169.254/latest/meta-data"):
        with pytest.raises(InvalidRequest, match="an address webhooks may not reach: not "
                                                 "public, and not in the site's webhook_networks"):
            checked_url(inward)
    with pytest.raises(DeliveryFailed, match="localhost is (127.0.0.1|::1), an address webhooks "
                                             "may not reach"):   # a name that resolves inward
        asyncio.run(post("https://localhost:9/hook", b"{}", {}, 5,
                         lambda address: reachable(address, ())))
    header = signing.signature("whsec_x", b"{}", 1000)
    assert signing.verify("whsec_x", header, b"{}", now=1100)
    assert not signing.verify("whsec_x", header, b"{}", now=1000 + signing.TOLERANCE + 1)
    assert not signing.verify("whsec_y", header, b"{}", now=1000)
    assert not signing.verify("whsec_x", "t=1000,v1=00", b"{}", now=1000)
    assert [backoff(n) for n in (1, 2, 3)] == [1, 2, 4] and backoff(40) == 300


def test_commits_wake_the_deliveries_only_while_a_webhook_is_kept(tmp_path, monkeypatch):
    """With no webhook a commit does not wake the deliverer (each wake cost
    a reserve a tenth of its time, and the loop a read of the webhooks); one
    made behind its back (at another daemon) is found by the poll and given
    the events after it; once one is kept, a commit wakes the deliverer."""
    monkeypatch.setattr(delivery, "POLL", 0.2)
    reads = []

    class Counted(EventLog):
        def hooks(self, owner=None):
            reads.append(owner)
            return super().hooks(owner)
    events = Counted(Store(f"sqlite:///{tmp_path}/plus.db"))
    deliverer = Deliverer(events, lambda: True, lambda: [ipaddress.ip_network("127.0.0.0/8")])
    woken = []                        # the wakes of this thread (the loop's own are not counted)
    wake = deliverer.wake
    deliverer.wake = lambda: (woken.append(threading.get_ident()), wake())
    here = threading.get_ident()
    receiver = Receiver()
    deliverer.start()
    try:
        until(lambda: len(reads) >= 2, "the deliverer's first looks")
        deliverer.events_committed()
        assert here not in woken
        events.add_hook(Webhook("wh_other", "alice", False, receiver.url, "whsec_x", (), 0, 0, 0,
                                0, 0, ""), 10)
        events.add_once({"time": int(time.time()), "type": GRANTED, "ar_id": 1,
                         "owner": "alice", "acl": "", "data": "{}", "key": "k1"})
        until(lambda: [e["type"] for e in receiver.taken()] == [GRANTED],
              "the event of a webhook made at another daemon")
        deliverer.events_committed()
        assert woken.count(here) == 1
    finally:
        deliverer.stop()
        receiver.close()
