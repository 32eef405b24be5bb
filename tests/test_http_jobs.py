"""GET /v1/jobs, GET /v1/jobs/{id} and DELETE /v1/jobs/{id} on the native
backend, with plus_qsub run as real users: one's own jobs by default,
everyone's with owner=*, as plus_qstat shows them, filtered and paged;
a job deleted by its owner or a manager, and another user's refused; bad input refused naming what is accepted; every answer as the
OpenAPI document says. A leader and its standby on one PostgreSQL store
answer GET /v1/nodes and GET /v1/jobs alike, and a deletion at the standby
is carried out by the leader. (Grid Engine and TORQUE: their running jobs
from the inventory, and 501 on DELETE: tests/test_backend_contract.py.)"""

from __future__ import annotations

import json
import os
import re
import time

import httpx
import pytest

from daemon_harness import Daemon
from http_harness import answering, auth, conforms, free_port, start_api, token

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="jobs are submitted as real users")
HTTP = "http: {address: {address}}\n"


@pytest.fixture(scope="module")
def api():
    daemon, url = start_api(HTTP)
    document = httpx.get(url + "/openapi.json").json()
    yield daemon, url, document
    daemon.cleanup()


def submit(daemon: Daemon, user: str, *args: str) -> str:
    """plus_qsub -b y as ``user``; the job's id."""
    out = daemon.ok(user, "plus_qsub", *args, "-b", "y", "/bin/true")
    return re.match(r"Your job (\d+) ", out).group(1)


def qstat(daemon: Daemon) -> dict[str, dict]:
    """plus_qstat -u '*' --json, by job id."""
    return {str(job["id"]): job for job in
            json.loads(daemon.ok("root", "plus_qstat", "-u", "*", "--json"))}


def beside_qstat(daemon: Daemon, url: str, bearer: str) -> tuple[httpx.Response, dict[str, dict]]:
    """Everyone's jobs, and plus_qstat's read between two equal answers (a
    scheduler pass in between may rank the jobs anew)."""
    before, deadline = listed(url, bearer, owner="*"), time.monotonic() + 120
    while True:
        shown = qstat(daemon)
        after = listed(url, bearer, owner="*")
        if after.json() == before.json():
            return after, shown
        assert time.monotonic() < deadline, "the jobs kept changing"
        before = after


def listed(url: str, bearer: str, **params) -> httpx.Response:
    answer = httpx.get(url + "/v1/jobs", headers=auth(bearer), params=params)
    assert answer.status_code == 200, answer.text
    return answer


def ids(answer: httpx.Response) -> set[str]:
    return {job["id"] for job in answer.json()}


@pytest.fixture
def cleared(api):
    yield
    daemon = api[0]
    daemon.ok("root", "plus_qdel", "-u", "*")
    daemon.ok("root", "plus_destroy", "-o", "plusu1")


def test_ones_own_jobs_or_everyones_as_plus_qstat_shows_them(api, cleared):
    daemon, url, document = api
    ar = daemon.reserve("plusu1", "-s", "now+1h", "-e", "now+2h", "-n", "1")
    first = submit(daemon, "plusu1", "-N", "first")
    held = submit(daemon, "plusu1", "-h", "-N", "held")
    inside = submit(daemon, "plusu1", "-ar", str(ar["id"]))
    theirs = submit(daemon, "plusu2")
    u1, u2 = token(daemon, "plusu1"), token(daemon, "plusu2")
    mine = listed(url, u1)
    conforms(document, "GET", "/v1/jobs", mine)
    assert ids(mine) == {first, held, inside} and mine.headers["X-Total-Count"] == "3"
    assert ids(listed(url, u2)) == {theirs}
    assert ids(listed(url, u2, owner="plusu1")) == {first, held, inside}
    everyone, shown = beside_qstat(daemon, url, u2)
    assert ids(everyone) == {first, held, inside, theirs}
    for job in everyone.json():
        expected = shown[job["id"]]
        assert (job["owner"], job["state"], job["name"], job["slots"], job["ar"],
                job["priority"], job["submit_time"]) == (
            expected["owner"], expected["state"], expected["name"], expected["slots"],
            expected["ar"], expected["priority"], expected["submit_time"])
        assert job["start_time"] is None and job["nodes"] == []   # no host here runs jobs
    assert [job["id"] for job in everyone.json()] == list(shown)     # qstat's order
    assert ids(listed(url, u1, state="held")) == {held}
    assert ids(listed(url, u1, state=["held", "running"])) == {held}
    assert ids(listed(url, u1, state="pending")) == {first, held, inside}
    assert listed(url, u1, state="running").json() == []
    assert ids(listed(url, u1, ar=ar["id"])) == {inside}
    page = listed(url, u1, limit=2)
    assert len(page.json()) == 2 and page.headers["X-Total-Count"] == "3"
    following = re.fullmatch(r'<(.*)>; rel="next"', page.headers["Link"]).group(1)
    rest = httpx.get(following, headers=auth(u1))
    assert ids(page) | ids(rest) == {first, held, inside} and "Link" not in rest.headers


def test_one_job_by_its_id(api, cleared):
    daemon, url, document = api
    job = submit(daemon, "plusu1", "-N", "one")
    u2 = token(daemon, "plusu2")
    answer = httpx.get(f"{url}/v1/jobs/{job}", headers=auth(u2))    # anyone may look
    assert answer.status_code == 200
    conforms(document, "GET", "/v1/jobs/{job_id}", answer)
    (in_list,) = listed(url, u2, owner="plusu1").json()
    # a scheduler pass between the two answers may have ranked the job
    assert {**answer.json(), "priority": None} == {**in_list, "priority": None}
    assert answer.json()["name"] == "one"


@pytest.mark.parametrize("method", ["GET", "DELETE"])
@pytest.mark.parametrize("job_id, status, message", [
    ("999999", 404, "job 999999 does not exist (or has ended)"),
    ("a*b", 400, "job id: invalid 'a*b': accepted are 1 to 128 of letters, digits and "
                 "_ . @ [ ] -"),
    ("-1", 400, "job id: invalid '-1'"),
    ("9" * 129, 422, "path.job_id: String should have at most 128 characters"),
])
def test_a_bad_or_unknown_job_id_is_refused_naming_it(api, method, job_id, status, message):
    daemon, url, _ = api
    answer = httpx.request(method, f"{url}/v1/jobs/{job_id}",
                           headers=auth(token(daemon, "plusu1")))
    assert answer.status_code == status and message in answer.json()["error"], answer.text


@pytest.mark.parametrize("params, status, message", [
    ({"state": "asleep"}, 400, "state: unknown state 'asleep'; accepted: pending, held, "
                               "running, suspended, deleting, error"),
    ({"owner": "no body"}, 400, "owner: invalid name 'no body'"),
    ({"ar": 0}, 422, "query.ar: Input should be greater than or equal to 1"),
    ({"limit": 1001}, 422, "query.limit"),
    ({"stat": "idle"}, 400, "unknown query parameter 'stat'; this endpoint takes: "),
])
def test_bad_filters_are_refused_naming_what_is_accepted(api, params, status, message):
    daemon, url, _ = api
    answer = httpx.get(url + "/v1/jobs", headers=auth(token(daemon, "plusu1")), params=params)
    assert answer.status_code == status and message in answer.json()["error"], answer.text


def test_a_job_is_deleted_by_its_owner_or_a_manager(api, cleared):
    daemon, url, document = api
    job = submit(daemon, "plusu1")
    other = submit(daemon, "plusu1")
    theirs = submit(daemon, "plusu2")
    u1, u2 = token(daemon, "plusu1"), token(daemon, "plusu2")
    refused = httpx.delete(f"{url}/v1/jobs/{job}", headers=auth(u2))
    assert refused.status_code == 403
    assert refused.json()["error"] == f"job {job} is plusu1's: only its owner or a manager may " \
                                      "delete it"
    assert job in qstat(daemon)
    deleted = httpx.delete(f"{url}/v1/jobs/{job}", headers=auth(u1))
    assert deleted.status_code == 200, deleted.text
    conforms(document, "DELETE", "/v1/jobs/{job_id}", deleted)
    assert deleted.json() == {"id": job, "owner": "plusu1",
                              "messages": [f"plusu1 has deleted job {job}"]}
    assert set(qstat(daemon)) == {other, theirs}
    assert httpx.get(f"{url}/v1/jobs/{job}", headers=auth(u1)).status_code == 404
    manager = httpx.delete(f"{url}/v1/jobs/{theirs}", headers=auth(token(daemon, "plusmgr")))
    assert manager.status_code == 200 and manager.json()["owner"] == "plusu2"
    assert set(qstat(daemon)) == {other}


@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
def test_a_leader_and_its_standby_answer_alike_and_the_leader_deletes(store_url):
    daemons = []
    try:
        for _ in range(2):
            port = free_port()
            daemon = Daemon(HTTP.replace("{address}", f"'127.0.0.1:{port}'"), store=store_url)
            daemons.append(daemon.start())
            daemon.url = answering(daemon, port)
        leader, standby = daemons
        deadline = time.monotonic() + 120
        while "standby:" not in standby.log.read_text():
            assert time.monotonic() < deadline, "the second daemon did not stand by"
            time.sleep(0.1)
        job, theirs = submit(leader, "plusu1"), submit(standby, "plusu2")
        tokens = [token(daemon, "plusu1") for daemon in daemons]   # each daemon signs its own

        def both(path: str, **params) -> list:
            return [httpx.get(daemon.url + path, headers=auth(bearer), params=params).json()
                    for daemon, bearer in zip(daemons, tokens, strict=True)]
        while len({json.dumps(answer) for answer in both("/v1/jobs", owner="*")}) != 1:
            assert time.monotonic() < deadline, both("/v1/jobs", owner="*")
            time.sleep(0.1)
        assert {item["id"] for item in both("/v1/jobs", owner="*")[0]} == {job, theirs}
        nodes_here, nodes_there = both("/v1/nodes")
        assert nodes_here == nodes_there and len(nodes_here) == 5
        deleted = httpx.delete(f"{standby.url}/v1/jobs/{job}", headers=auth(tokens[1]))
        assert deleted.status_code == 200, deleted.text
        assert deleted.json()["messages"] == [f"plusu1 has deleted job {job}"]
        for daemon in daemons:
            while set(qstat(daemon)) != {theirs}:
                assert time.monotonic() < deadline, qstat(daemon)
                time.sleep(0.1)
    finally:
        for daemon in daemons:
            daemon.cleanup()
