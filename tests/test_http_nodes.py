"""GET /v1/nodes: every node with its state, slots, attributes and the ARs
holding it now, a page at a time as /v1/reservations (X-Total-Count,
Link), filtered by state and by properties as plus_reserve -l matches
them; every answer as the OpenAPI document says, and bad filters refused
naming what is accepted. The same at a leader and its standby:
tests/test_http_jobs.py."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from http_harness import auth, conforms, start_api, token

NAMES = ["big", "n01", "n02", "n03", "n04"]


@pytest.fixture(scope="module")
def api():
    daemon, url = start_api("http: {address: {address}}\n")
    document = httpx.get(url + "/openapi.json").json()
    yield daemon, url, auth(token(daemon, "plusu1")), document
    daemon.cleanup()


def nodes(url: str, headers: dict, **params) -> httpx.Response:
    answer = httpx.get(url + "/v1/nodes", headers=headers, params=params)
    assert answer.status_code == 200, answer.text
    return answer


def names(answer: httpx.Response) -> list[str]:
    return [node["name"] for node in answer.json()]


def test_every_node_a_page_at_a_time_with_its_slots_and_attributes(api):
    _, url, me, document = api
    page, seen = nodes(url, me, limit=2), []
    first = page.json()
    while True:
        conforms(document, "GET", "/v1/nodes", page)
        assert page.headers["X-Total-Count"] == "5"
        seen += names(page)
        if "Link" not in page.headers:
            break
        following = re.fullmatch(r'<(.*)>; rel="next"', page.headers["Link"]).group(1)
        page = httpx.get(following, headers=me)
    assert seen == NAMES
    assert first[0] == {
        "name": "big", "state": "idle", "slots": 16, "reserved_slots": 0, "running_jobs": 0,
        "runs_jobs": False, "memory_mb": 256 * 1024, "ncpus": 32, "arch": "lx-amd64",
        "os": "linux", "properties": {"gpu": "yes"}, "queues": ["all.q", "big.q"],
        "queue_states": [], "load": 0.0, "ars": []}


def test_an_ar_in_its_window_shows_on_its_nodes_and_the_state_filter_finds_them(api):
    daemon, url, me, document = api
    ar = daemon.reserve("plusu2", "-s", "now", "-e", "now+10m", "-n", "2")
    held = {a["node"] for a in ar["allocations"]}
    deadline = time.monotonic() + 120
    while set(names(nodes(url, me, state="reserved"))) != held:
        assert time.monotonic() < deadline, "the AR's window did not open"
        time.sleep(0.2)
    reserved = nodes(url, me, state="reserved")
    conforms(document, "GET", "/v1/nodes", reserved)
    for node in reserved.json():
        assert (node["state"], node["ars"], node["reserved_slots"]) == (
            "reserved", [ar["id"]], node["slots"])
    idle = nodes(url, me, state="idle")
    assert names(idle) == [name for name in NAMES if name not in held]
    assert all(node["ars"] == [] for node in idle.json())
    both = nodes(url, me, state=["idle", "reserved"])
    assert names(both) == NAMES and both.headers["X-Total-Count"] == "5"
    daemon.ok("plusu2", "plus_destroy", "-r", str(ar["id"]))
    assert nodes(url, me, state="reserved").json() == []


def test_properties_match_as_plus_reserve_l_does(api):
    _, url, me, _ = api
    assert names(nodes(url, me, property="gpu=yes")) == ["big"]
    assert names(nodes(url, me, property="gpu=y*")) == ["big"]
    assert names(nodes(url, me, property=["gpu=yes", "gpu=*"])) == ["big"]
    none = nodes(url, me, property="gpu=no")
    assert none.json() == [] and none.headers["X-Total-Count"] == "0"
    assert "Link" not in none.headers


@pytest.mark.parametrize("params, status, message", [
    ({"state": "weird"}, 400, "state: unknown state 'weird'; accepted: down, reserved, busy, "
                              "idle"),
    ({"property": "gpu"}, 400, "property: invalid resource 'gpu': accepted form is "
                               "attr=value"),
    ({"property": "gpu=yes,os=linux"}, 400, "property: invalid entry 'gpu=yes,os=linux': "
                                            "one name per list entry"),
    ({"limit": 0}, 422, "query.limit: Input should be greater than or equal to 1"),
    ({"limit": 1001}, 422, "query.limit: Input should be less than or equal to 1000"),
    ({"offset": -1}, 422, "query.offset"),
    ({"stat": "idle"}, 400, "unknown query parameter 'stat'; this endpoint takes: "),
])
def test_bad_filters_are_refused_naming_what_is_accepted(api, params, status, message):
    _, url, me, _ = api
    answer = httpx.get(url + "/v1/nodes", headers=me, params=params)
    assert answer.status_code == status and message in answer.json()["error"], answer.text


def test_nodes_need_a_token(api):
    _, url, _, _ = api
    assert httpx.get(url + "/v1/nodes").status_code == 401
