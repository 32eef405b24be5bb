"""The seams of the API's routers (overlay/network/http/routes): together they
serve exactly the documented endpoints, and each endpoint asks the daemon
an operation its socket serves; every operation a token may call has an
endpoint. The daemon is replaced by a recorder, so no socket is needed."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from overlay.daemon.services.callers import PEER_ONLY
from overlay.daemon.services.service import OPERATIONS
from overlay.network.http.app import make_app

API_ENDPOINTS = {
    "/whoami": {"get"}, "/reservations": {"get", "post"},
    "/reservations/{ar_id}": {"get", "patch", "delete"},
    "/reservations/{ar_id}/cancel": {"post"}, "/reservations/{ar_id}/commit": {"post"},
    "/reservations/{ar_id}/abort": {"post"}, "/reservations/{ar_id}/release": {"post"},
    "/nodes/available": {"get"},
    "/reservations/{ar_id}/approve": {"post"}, "/reservations/{ar_id}/deny": {"post"},
    "/accounting": {"get"}, "/ggf/query": {"post"}, "/ggf/resquery": {"post"},
    "/ggf/resqandset": {"post"}, "/ggf/setres": {"post"}, "/claims": {"post"},
    "/jobs": {"post", "get"}, "/jobs/{job_id}": {"get", "delete"}, "/nodes": {"get"},
    "/calendar": {"get"}, "/usage": {"get"}, "/usage/{ar_id}": {"get"},
    "/feeds/users/{user}.ics": {"get"}, "/feeds/queues/{queue}.ics": {"get"},
    "/feeds/maintenance.ics": {"get"},
    "/feeds/tokens": {"get", "post"}, "/feeds/tokens/{token_id}": {"delete"},
    "/events": {"get"}, "/webhooks": {"get", "post"}, "/webhooks/{hook_id}": {"delete"},
    "/series": {"get"}, "/series/{series_id}": {"get", "patch", "delete"}}
"""The API's documented endpoints (README, "HTTP API") and their methods,
under /v1 in the OpenAPI document (and answering without it, as aliases)."""
ENDPOINTS = {**{f"/v1{path}": methods for path, methods in API_ENDPOINTS.items()},
             "/web/config": {"get"}, "/web/session": {"post"}, "/metrics": {"get"},
             "/health": {"get"}}

WORDS = {"UserID": "plusu1", "TimeNeeded": "1h", "ResourceList": "nodes=1"}
CLAIM = {"id": 1, "nonce": "n" * 16, "timestamp": 1, "operation": "submit", "payload": {},
         "hmac": "a" * 64}
CALLS = [("GET", "/whoami", None), ("GET", "/reservations", None),
         ("GET", "/reservations/1", None),
         ("POST", "/reservations", {"start": 10, "end": 20, "nodes": 1}),
         ("PATCH", "/reservations/1", {"nodes": 2}), ("POST", "/reservations/1/cancel", None),
         ("DELETE", "/reservations/1", None), ("POST", "/reservations/1/commit", None),
         ("POST", "/reservations/1/abort", None), ("POST", "/reservations/1/release", None),
         ("POST", "/reservations/1/approve", None),
         ("POST", "/reservations/1/deny", {"reason": "no"}),
         ("GET", "/nodes/available?start=10&end=20", None), ("GET", "/accounting", None),
         ("POST", "/ggf/query", WORDS), ("POST", "/ggf/resquery", WORDS),
         ("POST", "/ggf/resqandset", WORDS),
         ("POST", "/ggf/setres", {**WORDS, "StartTime": int(time.time()) + 86400}),
         ("POST", "/claims", CLAIM), ("POST", "/jobs", CLAIM), ("GET", "/jobs", None),
         ("GET", "/jobs/7", None), ("DELETE", "/jobs/7", None), ("GET", "/nodes", None),
         ("GET", "/calendar?start=10&end=20", None), ("GET", "/usage?start=10&end=20", None),
         ("GET", "/usage/1", None), ("GET", "/web/config", None), ("POST", "/web/session", {"code": "c" * 16}),
         ("GET", "/metrics", None), ("GET", "/health", None),
         ("GET", "/feeds/users/plusu1.ics?token=t", None), ("POST", "/feeds/tokens", {}),
         ("GET", "/feeds/tokens", None), ("DELETE", "/feeds/tokens/" + "a" * 16, None),
         ("GET", "/events", None), ("POST", "/webhooks", {"url": "https://example.org/"}),
         ("GET", "/webhooks", None), ("DELETE", "/webhooks/wh" + "a" * 16, None),
         ("GET", "/series", None), ("GET", "/series/1", None),
         ("PATCH", "/series/1", {"duration": 3600}), ("DELETE", "/series/1", None)]
"""A valid call of each endpoint."""

ANSWERS = {"status": [{"id": 1}], "cancel": [{"id": 1}], "destroy": [{"id": 1}],
           "approve": [{"id": 1}], "deny": [{"id": 1}],
           "query": {"user": "plusu1", "start": 10, "how": "planned"},
           "resquery": {"user": "plusu1", "ranges": [[10, 20]]},
           "setres": {"id": 1, "start": 10, "reskey": "k"},
           "resqandset": {"id": 1, "start": 10, "reskey": "k"},
           "metrics": {"leading": True, "store_up": True, "feed_lag": 0, "inventory_age": None,
                       "ars": [], "nodes": 0, "nodes_reserved": 0, "in_window": []},
           "feed": {"etag": '"t"', "body": "", "total": 0}, "feed_token": {"feeds": {}},
           "feed_tokens": [], "reserve": {"id": 1}, "series_status": [{"id": 1}],
           "health": {"serving": True, "role": "leader"}, "webhook_add": {"id": "wh" + "a" * 16},
           "events": {"events": [], "next": 0, "head": 0, "missed": False, "user": "plusu1"}}


class Recorder:
    """The daemon, as the routers reach it: records what each asks."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, dict]] = []
        self.acting_for: list[str | None] = []

    async def __call__(self, who, op: str, args: dict, passed: bool = False):
        self.asked.append((op, args))
        self.acting_for.append(who.acting_for)
        if passed:
            return b'{"total":0,"items":[]}'
        return ANSWERS.get(op, {})


class Client:
    """Requests to an app in this process, with a bearer token."""

    def __init__(self, app) -> None:
        self.app = app

    def request(self, method: str, path: str, json: dict | None = None) -> httpx.Response:
        async def call() -> httpx.Response:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app),
                                         base_url="http://api") as client:
                return await client.request(method, path, json=json,
                                            headers={"Authorization": "Bearer t"})
        return asyncio.run(call())


@pytest.fixture()
def api() -> tuple[Client, Recorder]:
    app = make_app("/unused")
    app.state.asker = Recorder()
    app.state.stream_seconds = 0            # an event stream ends after its first read
    return Client(app), app.state.asker


def test_the_routers_serve_exactly_the_documented_endpoints():
    paths = make_app("/unused").openapi()["paths"]
    assert {path: set(methods) for path, methods in paths.items()} == ENDPOINTS


def test_each_endpoint_asks_an_operation_the_socket_serves(api):
    client, recorder = api
    sent = set()
    for method, path, body in CALLS:
        fixed = path.startswith(("/web/", "/metrics", "/health"))
        for served in (path,) if fixed else (path, f"/v1{path}"):
            before = len(recorder.asked)
            answer = client.request(method, served, json=body)
            assert answer.status_code < 300, (method, served, answer.text)
            [(op, _)] = recorder.asked[before:]
            sent.add(op)
    assert sent <= set(OPERATIONS)
    assert sent == set(OPERATIONS) - PEER_ONLY      # and every operation a token may call


def test_a_seed_verb_is_asked_for_the_userid_its_words_name(api):
    client, recorder = api
    start = int(time.time()) + 86400
    client.request("POST", "/ggf/setres", {**WORDS, "StartTime": start, "Transactional": True})
    [(op, args)] = recorder.asked
    assert op == "setres" and args["transactional"] is True and args["start"] == start
    assert recorder.acting_for == ["plusu1"]


def test_a_series_is_asked_with_repeat_and_except_by_their_names(api):
    client, recorder = api
    client.request("POST", "/v1/reservations", {"start": 10, "end": 20, "nodes": 1,
                                                "repeat": "FREQ=DAILY;COUNT=3",
                                                "except": ["2027-01-02"]})
    [(op, args)] = recorder.asked
    assert op == "reserve" and args["repeat"] == "FREQ=DAILY;COUNT=3"
    assert args["except"] == ["2027-01-02"] and "except_" not in args
    refused = client.request("POST", "/v1/reservations", {"start": 10, "end": 20, "nodes": 1,
                                                          "except_": ["2027-01-02"]})
    assert refused.status_code == 422
