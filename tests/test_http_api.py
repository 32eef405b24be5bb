"""The HTTP API over real HTTP, with real tokens from plus_token run as real
users: every endpoint, the refusals' statuses and texts, forged, expired,
revoked and other users' tokens, a trusted metascheduler acting for a
UserID, and the companion's own process (unprivileged, restarted)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from unittest.mock import ANY

import httpx
import jwt
import pytest

from daemon_harness import Daemon
from http_harness import HOUR, auth, conforms, free_port, start_api, token, window
from overlay.daemon.config import ConfigError, load


@pytest.fixture(scope="module")
def api():
    daemon, url = start_api("http: {address: {address}, trusted_principals: [plusmgr]}\n"
                            "max_advance_reservations: 3\n")
    yield daemon, url
    daemon.cleanup()


def test_the_openapi_document_lists_every_endpoint_under_v1_for_a_bearer(api):
    """Versioned paths (the first ones answer as aliases, undocumented),
    readable operation ids, and the bearer scheme a generator turns into
    an authenticated client."""
    daemon, url = api
    document = httpx.get(url + "/openapi.json").json()
    paths = document["paths"]
    assert {"/v1/whoami", "/v1/reservations", "/v1/reservations/{ar_id}",
            "/v1/reservations/{ar_id}/cancel", "/v1/reservations/{ar_id}/commit",
            "/v1/reservations/{ar_id}/abort", "/v1/nodes/available"} <= set(paths)
    assert not [path for path in paths if path.startswith(("/reservations", "/whoami"))]
    assert paths["/v1/reservations"]["get"]["operationId"] == "list_reservations"
    assert paths["/v1/reservations"]["post"]["operationId"] == "create_reservation"
    assert document["components"]["securitySchemes"]["bearer"] == {
        "type": "http", "scheme": "bearer", "description": ANY}
    assert paths["/v1/reservations/{ar_id}"]["get"]["security"] == [{"bearer": []}]
    assert not [parameter for operations in paths.values() for operation in operations.values()
                for parameter in operation.get("parameters", ())
                if parameter["name"].lower() == "authorization"]
    mine = auth(token(daemon, "plusu1"))
    assert httpx.get(url + "/v1/whoami", headers=mine).json() == \
        httpx.get(url + "/whoami", headers=mine).json() == {"user": "plusu1", "manager": False}


def test_a_token_names_its_user_and_no_token_forged_or_expired_one_does(api):
    daemon, url = api
    mine = token(daemon, "plusu1")
    assert httpx.get(url + "/whoami", headers=auth(mine)).json() == {"user": "plusu1",
                                                                    "manager": False}
    missing = httpx.get(url + "/whoami")
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    header, claims, signature = mine.split(".")
    forged_claims = jwt.utils.base64url_encode(json.dumps(
        {**jwt.decode(mine, options={"verify_signature": False}), "sub": "root"}).encode()).decode()
    forged = httpx.get(url + "/whoami", headers=auth(f"{header}.{forged_claims}.{signature}"))
    assert forged.status_code == 401 and "not valid" in forged.json()["error"]
    key = (daemon.dir / "state" / "token.key").read_bytes().strip()
    assert os.stat(daemon.dir / "state" / "token.key").st_mode & 0o777 == 0o600
    old = jwt.encode({"iss": "plus_scheduler", "sub": "plusu1", "iat": time.time() - 7200,
                      "exp": int(time.time()) - 3600, "jti": "x"}, key, algorithm="HS256")
    expired = httpx.get(url + "/whoami", headers=auth(old))
    assert expired.status_code == 401 and "expired" in expired.json()["error"]


def test_revoked_tokens_stop_working_and_a_new_one_works(api):
    daemon, url = api
    before = token(daemon, "plusu3")
    assert httpx.get(url + "/whoami", headers=auth(before)).status_code == 200
    daemon.ok("plusu3", "plus_token", "-R")
    refused = httpx.get(url + "/whoami", headers=auth(before))
    assert refused.status_code == 401 and "revoked" in refused.json()["error"]
    time.sleep(0.01)
    assert httpx.get(url + "/whoami", headers=auth(token(daemon, "plusu3"))).status_code == 200


def test_a_token_cannot_mint_tokens_and_lifespans_are_bounded(api):
    daemon, _ = api
    result = daemon.run("plusu1", "plus_token", "-l", "400d")
    assert result.returncode == 2 and "-l: " in result.stderr
    kept = token(daemon, "plusu1")
    for words, message in ((["-R", "-l", "1h"], "-l: not with -R"), (["-o", "plusu2"], "-o: only with -R"),
                           (["-l", "30"], "-l: 30 is out of range; accepted: 60 to 86400")):
        refused = daemon.run("plusu1", "plus_token", *words)
        assert (refused.returncode, refused.stdout) == (2, "")
        assert refused.stderr == f"plus_token: {message}\n", refused.stderr
    other = daemon.run("plusu1", "plus_token", "-R", "-o", "plusu2")
    assert other.returncode == 1 and "only a manager may revoke" in other.stderr
    _, url = api
    assert httpx.get(url + "/whoami", headers=auth(kept)).status_code == 200   # nothing revoked


def test_reserve_show_list_modify_cancel_destroy(api):
    daemon, url = api
    mine = auth(token(daemon, "plusu1"))
    made = httpx.post(url + "/reservations", headers=mine, json={**window(), "nodes": 1,
                                                                 "name": "viaHTTP"})
    assert made.status_code == 201, made.text
    ar = made.json()
    assert ar["owner"] == "plusu1" and ar["name"] == "viaHTTP" and ar["state"] == "w"
    shown = httpx.get(url + f"/reservations/{ar['id']}", headers=mine).json()
    assert shown["id"] == ar["id"] and shown["request"] == ar["request"]
    assert daemon.status("-r", str(ar["id"]))[0]["allocations"] == ar["allocations"]
    listed = httpx.get(url + "/reservations", headers=mine, params={"owner": "plusu1"}).json()
    assert ar["id"] in [view["id"] for view in listed]
    moved = httpx.patch(url + f"/reservations/{ar['id']}", headers=mine,
                        json={"duration": 2 * HOUR})
    assert moved.status_code == 200 and moved.json()["end"] == ar["start"] + 2 * HOUR
    noticed = httpx.patch(url + f"/reservations/{ar['id']}", headers=mine,
                          json={"clear_notice": [1800]})
    assert noticed.status_code == 200 and noticed.json()["request"]["clear_notice"] == [1800]
    refused = httpx.patch(url + f"/reservations/{ar['id']}", headers=mine,
                          json={"clear_notice": [0]})
    assert refused.status_code == 400 and "the lead 0 s is out of range" in refused.text
    assert daemon.status("-r", str(ar["id"]))[0]["request"]["clear_notice"] == [1800]
    free = httpx.get(url + "/nodes/available", headers=mine,
                     params={"start": ar["start"], "end": ar["end"]}).json()
    assert free["count"] == len(free["nodes"]) and ar["allocations"][0]["node"] not in free["nodes"]
    assert httpx.post(url + f"/reservations/{ar['id']}/cancel", headers=mine).json()["state"] == "d"
    assert httpx.delete(url + f"/reservations/{ar['id']}", headers=mine).status_code == 200
    gone = httpx.get(url + f"/reservations/{ar['id']}", headers=mine)
    assert gone.status_code == 404


def test_a_retried_request_with_its_idempotency_key_makes_one_ar(api):
    daemon, url = api
    mine = auth(token(daemon, "plusu2"))
    body = {**window(8), "nodes": 1, "transactional": True}
    keyed = {**mine, "Idempotency-Key": "try-0001-site-a"}
    made = [httpx.post(url + "/reservations", headers=keyed, json=body) for _ in range(2)]
    assert [r.status_code for r in made] == [201, 201]
    assert made[0].json()["id"] == made[1].json()["id"]
    bad = httpx.post(url + "/reservations", headers={**mine, "Idempotency-Key": "short"},
                     json=body)
    assert bad.status_code == 400 and "idempotency key 'short' is invalid" in bad.json()["error"]
    listed = httpx.get(url + "/reservations", headers=mine,
                       params={"idempotency_key": "try-0001-site-a"})
    assert [ar["id"] for ar in listed.json()] == [made[0].json()["id"]]
    unknown = httpx.get(url + "/reservations", headers=mine,
                        params={"idempotency_key": "never-used-0001"})
    assert unknown.status_code == 200 and unknown.json() == []     # a page, with none on it
    assert unknown.headers["X-Total-Count"] == "0"
    aborted = httpx.post(url + f"/reservations/{made[0].json()['id']}/abort", headers=mine)
    assert aborted.status_code == 200


def test_transactional_reserve_then_commit_or_abort(api):
    daemon, url = api
    mine = auth(token(daemon, "plusu2"))
    pending = httpx.post(url + "/reservations", headers=mine,
                         json={**window(5), "nodes": 1, "transactional": True}).json()
    assert pending["pending"]["operation"] == "reserve"
    committed = httpx.post(url + f"/reservations/{pending['id']}/commit", headers=mine).json()
    assert committed["pending"] is None
    other = httpx.post(url + "/reservations", headers=mine,
                       json={**window(7), "nodes": 1, "transactional": True}).json()
    assert httpx.post(url + f"/reservations/{other['id']}/abort", headers=mine).status_code == 200
    for ar_id in (pending["id"], other["id"]):
        httpx.delete(url + f"/reservations/{ar_id}", headers=mine)


@pytest.mark.parametrize("body, status, text", [
    ({"nodes": 1, "start": 10 ** 10, "end": 10 ** 10 + 60}, 400, "-s: "),
    ({"nodes": 1, "mail_options": "x"}, 400, "-m: invalid mail options 'x'"),
    ({"nodes": 1, "users": ["nosuchuser"]}, 400, "-U: unknown user 'nosuchuser'"),
    ({"nodes": 500}, 409, "only "),
    ({"nodes": 0}, 422, ""),
    ({"nodes": 1, "colour": "red"}, 422, ""),
])
def test_refusals_have_the_commands_texts_and_consistent_statuses(api, body, status, text):
    daemon, url = api
    before = daemon.status()
    refused = httpx.post(url + "/reservations", headers=auth(token(daemon, "plusu1")),
                         json={**window(3), **body})
    assert refused.status_code == status, refused.text
    if text:
        assert text in refused.json()["error"]
    assert daemon.status() == before                                   # nothing stored


def test_another_users_ar_is_403_and_the_limit_is_409_with_qrsubs_status(api):
    """A site limit is no rate limit: 409 without Retry-After, which an
    auto-retrying client (urllib3's Retry retries 429 and 503) would only
    repeat for nothing until the caller releases ARs."""
    daemon, url = api
    owner, stranger = auth(token(daemon, "plusu1")), auth(token(daemon, "plusu3"))
    made = [httpx.post(url + "/v1/reservations", headers=owner,
                       json={**window(10 + i), "nodes": 1}) for i in range(4)]
    assert [r.status_code for r in made] == [201, 201, 201, 409]
    assert made[3].json()["status"] == 25 and "would exceed" in made[3].json()["error"]
    assert made[3].json()["kind"] == "limit" and "retry-after" not in made[3].headers
    ar_id = made[0].json()["id"]
    refused = httpx.post(url + f"/reservations/{ar_id}/cancel", headers=stranger)
    assert refused.status_code == 403 and "belongs to plusu1" in refused.json()["error"]
    for response in made[:3]:
        httpx.delete(url + f"/reservations/{response.json()['id']}", headers=owner)


def test_only_a_trusted_principal_acts_for_another_userid(api):
    daemon, url = api
    meta, plain = auth(token(daemon, "plusmgr")), auth(token(daemon, "plusu1"))
    made = httpx.post(url + "/reservations", headers=meta, params={"user": "plusu2"},
                      json={**window(20), "nodes": 1})
    assert made.status_code == 201 and made.json()["owner"] == "plusu2"
    refused = httpx.post(url + "/reservations", headers=plain, params={"user": "plusu2"},
                         json={**window(21), "nodes": 1})
    assert refused.status_code == 403 and "trusted_principals" in refused.json()["error"]
    httpx.delete(url + f"/reservations/{made.json()['id']}", headers=meta,
                 params={"user": "plusu2"})


def test_the_companion_runs_unprivileged_and_comes_back_if_it_dies(api):
    daemon, url = api
    pids = subprocess.run(["pgrep", "-f", f"overlay.network.http.server --socket {daemon.socket}"],
                          capture_output=True, text=True).stdout.split()
    assert len(pids) == 1
    owner = subprocess.run(["ps", "-o", "user=", "-p", pids[0]], capture_output=True,
                           text=True).stdout.strip()
    assert owner == "nobody"
    os.kill(int(pids[0]), 9)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/openapi.json", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    assert httpx.get(url + "/whoami", headers=auth(token(daemon, "plusu1"))).status_code == 200


def test_the_api_goes_with_a_daemon_killed_and_comes_back_with_the_next():
    daemon, url = start_api("http: {address: {address}}\n")
    try:
        daemon.kill9()
        deadline = time.monotonic() + 10
        companion = ["pgrep", "-f", f"overlay.network.http.server --socket {daemon.socket}"]
        while time.monotonic() < deadline and subprocess.run(companion).returncode == 0:
            time.sleep(0.2)
        assert subprocess.run(companion).returncode == 1, "the companion outlived its daemon"
        daemon.start()
        deadline = time.monotonic() + 15
        while True:
            try:
                if httpx.get(url + "/whoami", headers=auth(token(daemon, "plusu1")),
                             timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, daemon.log.read_text()[-2000:]
            time.sleep(0.2)
    finally:
        daemon.cleanup()


def _companions(daemon: Daemon) -> list[str]:
    return subprocess.run(["pgrep", "-f", f"overlay.network.http.server --socket {daemon.socket}"],
                          capture_output=True, text=True).stdout.split()


@pytest.mark.parametrize("attempt", range(3))
def test_a_daemon_killed_while_its_companion_starts_leaves_no_orphan(attempt):
    """Killed as soon as the companion exists (before it has imported
    anything), the daemon takes it along: it held the port for good."""
    daemon = Daemon(f"http: {{address: '127.0.0.1:{free_port()}'}}\n")
    try:
        daemon.start(wait=False)
        deadline = time.monotonic() + 30
        while not _companions(daemon):
            assert time.monotonic() < deadline and daemon.process.poll() is None, \
                daemon.log.read_text()[-2000:]
        daemon.kill9()
        deadline = time.monotonic() + 10
        while _companions(daemon) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _companions(daemon) == [], "the companion outlived its daemon"
    finally:
        daemon.cleanup()


def test_plain_http_off_loopback_is_refused_at_start():
    daemon = Daemon("http: {address: '0.0.0.0:6830'}\n")
    try:
        result = daemon.run("root", "plus_scheduler", "-c", str(daemon.conf))
        assert result.returncode == 1
        assert "plain HTTP is served only on loopback" in result.stderr
    finally:
        daemon.cleanup()


# -- seed 003's RESQUERY, by command (local socket, or --site) and over HTTP -----------------

def test_resquery_by_command_and_over_http_give_the_same_ranges(api):
    daemon, url = api
    start = window(30)["start"]
    owner = auth(token(daemon, "plusu1"))
    booked = httpx.post(url + "/reservations", headers=owner,
                        json={"start": start, "end": start + HOUR, "nodes": 5}).json()  # every node
    spec = f"{start - HOUR},{start + 3 * HOUR}"
    line = daemon.ok("plusu2", "plus_resquery", "plusu2", "2h", spec, "nodes=1")
    assert [int(word) for word in line.split()] == [start + HOUR, start + 3 * HOUR]
    over_http = httpx.post(url + "/ggf/resquery", headers=auth(token(daemon, "plusu2")),
                           json={"UserID": "plusu2", "TimeNeeded": "2h", "TimeSpec": spec,
                                 "ResourceList": "nodes=1"}).json()
    assert over_http == {"UserID": "plusu2", "ranges": [{"STime": start + HOUR,
                                                         "EndSTime": start + 3 * HOUR}]}
    token_file = daemon.dir / "plusu2.token"                     # where plusu2 may read it
    token_file.write_text(token(daemon, "plusu2"))
    os.chmod(token_file, 0o644)
    remote = daemon.ok("plusu2", "plus_resquery", "--site", url, "--token", str(token_file),
                       "--json", "plusu2", "2h", spec, "nodes=1")
    assert json.loads(remote) == over_http
    httpx.delete(url + f"/reservations/{booked['id']}", headers=owner)


@pytest.mark.parametrize("words, status, message", [
    (["plusu1", "2", "nodes=1"], 2, "TimeNeeded: invalid '2'"),
    (["plusu1", "2h", "ppn=2"], 2, "ResourceList: nodes=N is required"),
    (["plusu1", "2h", "nodes=1;bad"], 2, "ResourceList: invalid item 'bad'"),
    (["plusu1", "2h", "soon", "nodes=1"], 2, "TimeSpec earliest: invalid time 'soon'"),
    (["plusu1", "nodes=1"], 2, "expected UserID TimeNeeded {TimeSpec} {ResAccess} ResourceList"),
    (["plusu1", "2h", "R9999", "nodes=1"], 1, "ResAccess: AR 9999 does not exist"),
    (["plusu2", "2h", "nodes=1"], 1, "plusu1 may not act for another UserID"),
])
def test_resquery_refuses_bad_words_with_a_line_naming_them(api, words, status, message):
    daemon, _ = api
    result = daemon.run("plusu1", "plus_resquery", *words)
    assert (result.returncode, result.stdout) == (status, ""), result.stderr
    assert result.stderr.startswith("plus_resquery: ") and message in result.stderr


def test_a_trusted_principal_queries_for_a_userid_and_a_plain_user_may_not(api):
    daemon, url = api
    body = {"UserID": "plusu2", "TimeNeeded": "1h", "ResourceList": "nodes=1"}
    meta = httpx.post(url + "/ggf/resquery", headers=auth(token(daemon, "plusmgr")), json=body)
    assert meta.status_code == 200 and meta.json()["UserID"] == "plusu2"
    plain = httpx.post(url + "/ggf/resquery", headers=auth(token(daemon, "plusu1")), json=body)
    assert plain.status_code == 403
    bad = httpx.post(url + "/ggf/resquery", headers=auth(token(daemon, "plusu2")),
                     json={**body, "TimeNeeded": "1 hour"})
    assert bad.status_code == 400 and "TimeNeeded" in bad.json()["error"]


def test_a_body_too_long_is_refused_before_it_is_read_whole(api):
    daemon, url = api
    mine = auth(token(daemon, "plusu1"))
    before = daemon.status()
    declared = httpx.post(url + "/reservations", headers=mine,
                          content=b'{"nodes": 1, "name": "' + b"x" * (2 ** 20) + b'"}')
    assert declared.status_code == 413 and "longer than 1048576 bytes" in declared.json()["error"]

    def chunks():
        yield b'{"nodes": 1, "users": ['
        for _ in range(40_000):
            yield b'"plusu2", ' * 4
        yield b'"plusu2"]}'

    chunked = httpx.post(url + "/reservations", headers=mine, content=chunks())
    assert chunked.status_code == 413
    assert daemon.status() == before
    assert httpx.get(url + "/whoami", headers=mine).status_code == 200


def test_listings_come_a_page_at_a_time_with_the_total_and_the_next_page(api):
    daemon, url = api
    mine = auth(token(daemon, "plusmgr"))
    made = [httpx.post(url + "/reservations", headers=mine, json={**window(80 + n), "nodes": 1})
            for n in range(3)]            # max_advance_reservations
    assert all(answer.status_code == 201 for answer in made), made[-1].text
    everyone = httpx.get(url + "/reservations", headers=mine, params={"owner": "plusmgr"})
    assert everyone.headers["x-total-count"] == "3" and "link" not in everyone.headers
    assert len(everyone.json()) == 3
    seen, page = [], httpx.get(url + "/reservations", headers=mine,
                               params={"owner": "plusmgr", "limit": 2})
    while True:
        assert page.status_code == 200 and page.headers["x-total-count"] == "3"
        assert len(page.json()) <= 2
        seen += [ar["id"] for ar in page.json()]
        if "link" not in page.headers:
            break
        following, rel = page.headers["link"].split("; ")
        assert rel == 'rel="next"'
        page = httpx.get(following.strip("<>"), headers=mine)
    assert seen == sorted(answer.json()["id"] for answer in made)
    for limit in (0, 1001):
        refused = httpx.get(url + "/reservations", headers=mine, params={"limit": limit})
        assert refused.status_code == 422 and "query.limit" in refused.json()["error"]
    for answer in made:
        httpx.delete(url + f"/reservations/{answer.json()['id']}", headers=mine)


@pytest.mark.parametrize("field, value, why", [
    ("nodes", "1", "body.nodes: Input should be a valid integer"),
    ("nodes", True, "body.nodes: Input should be a valid integer"),
    ("start", 1.5, "body.start: Input should be a valid integer"),
    ("name", 7, "body.name: Input should be a valid string"),
    ("hard_error", "yes", "body.hard_error: Input should be a valid boolean"),
])
def test_bodies_are_strict_as_the_socket_is(api, field, value, why):
    daemon, url = api
    before = daemon.status()
    refused = httpx.post(url + "/reservations", headers=auth(token(daemon, "plusu1")),
                         json={**window(90), "nodes": 1, field: value})
    assert refused.status_code == 422 and refused.json()["error"].startswith(why)
    assert daemon.status() == before


def test_setres_takes_starttime_as_resquery_answers_it_and_timespecs_run_forwards(api):
    daemon, url = api
    mine = auth(token(daemon, "plusu1"))
    start = window(91)["start"]
    ranges = httpx.post(url + "/ggf/resquery", headers=mine, json={
        "UserID": "plusu1", "TimeNeeded": "1h", "TimeSpec": f"{start},{start + HOUR}",
        "ResourceList": "nodes=1"}).json()["ranges"]
    made = httpx.post(url + "/ggf/setres", headers=mine, json={
        "UserID": "plusu1", "TimeNeeded": "1h", "StartTime": ranges[0]["STime"],
        "ResourceList": "nodes=1"})
    assert made.status_code == 201 and made.json()["reservation"]["start"] == start
    daemon.ok("plusu1", "plus_destroy", "-r", str(made.json()["reservation"]["id"]))
    for spec, why in ((f"{start + HOUR},{start}", f"TimeSpec: the latest start {start} is before "
                                                  f"the earliest start {start + HOUR}"),
                      (f"{start},{start + HOUR},{start + 60}",
                       f"TimeSpec: the latest end {start + 60} leaves no room for TimeNeeded "
                       f"(3600 s) after the earliest start {start}")):
        backwards = httpx.post(url + "/ggf/resquery", headers=mine, json={
            "UserID": "plusu1", "TimeNeeded": "1h", "TimeSpec": spec, "ResourceList": "nodes=1"})
        assert backwards.status_code == 400 and backwards.json()["error"].startswith(why)


def test_resquery_with_no_range_says_why(api):
    daemon, url = api
    start = window(92)["start"]
    words = ["plusu1", "1h", f"{start},{start + HOUR}", "nodes=6"]     # 5 nodes in all
    none = httpx.post(url + "/ggf/resquery", headers=auth(token(daemon, "plusu1")), json=dict(
        zip(("UserID", "TimeNeeded", "TimeSpec", "ResourceList"), words, strict=True)))
    assert none.status_code == 200 and none.json()["ranges"] == []
    why = (f"no start between {start} and {start + HOUR} is free for 6 node(s) for 3600 s")
    assert none.json()["OtherInfo"] == why
    by_command = daemon.run("plusu1", "plus_resquery", *words)
    assert by_command.returncode == 0 and by_command.stdout == "\n"
    assert by_command.stderr == f"plus_resquery: {why}\n"


def test_a_hung_daemon_is_answered_503_within_the_apis_timeout():
    daemon, url = start_api("http: {address: {address}, timeout: 2}\n")
    try:
        mine = auth(token(daemon, "plusu1"))
        daemon.send(signal.SIGSTOP)
        try:
            began = time.monotonic()
            hung = httpx.get(url + "/whoami", headers=mine, timeout=30)
            taken = time.monotonic() - began
        finally:
            daemon.send(signal.SIGCONT)
        assert hung.status_code == 503 and hung.json()["kind"] == "unavailable"
        assert hung.headers["retry-after"] == "1"
        assert "did not answer within 2 s" in hung.json()["error"] and taken < 10
        assert httpx.get(url + "/whoami", headers=mine).status_code == 200
    finally:
        daemon.cleanup()


def test_every_answer_of_a_whole_cycle_is_what_the_document_says(api):
    """The typed schemas are the answers: a cycle through every operation,
    each answer checked against its operation's schema for its status
    (which forbids fields it does not name), refusals included."""
    daemon, url = api
    document = httpx.get(url + "/openapi.json").json()
    mine = auth(token(daemon, "plusu1"))

    def call(method: str, path: str, expected: int, **kwargs) -> httpx.Response:
        answer = httpx.request(method, url + "/v1" + path.format(**ids), headers=mine, **kwargs)
        assert answer.status_code == expected, (method, path, answer.text)
        conforms(document, method, "/v1" + path, answer)
        return answer

    ids: dict = {}
    made = call("POST", "/reservations", 201, json={**window(120), "nodes": 1, "name": "typed"})
    ids["ar_id"] = made.json()["id"]
    call("GET", "/whoami", 200)
    call("GET", "/reservations", 200, params={"owner": "plusu1"})
    call("GET", "/reservations/{ar_id}", 200)
    call("PATCH", "/reservations/{ar_id}", 200, json={"end": made.json()["end"] + HOUR,
                                                      "transactional": True})
    call("POST", "/reservations/{ar_id}/commit", 200)
    call("PATCH", "/reservations/{ar_id}", 200, json={"nodes": 2, "transactional": True})
    call("POST", "/reservations/{ar_id}/abort", 200)
    call("GET", "/nodes/available", 200, params=window(120))
    now = int(time.time())
    call("GET", "/usage", 200, params={"start": now - 86400, "end": now})
    call("GET", "/accounting", 200)
    call("GET", "/calendar", 200, params={"start": now, "end": now + 86400})
    start = window(121)["start"]
    words = {"UserID": "plusu1", "TimeNeeded": "1h", "ResourceList": "nodes=1"}
    call("POST", "/ggf/query", 409, json=words)      # the harness's hosts run no jobs
    call("POST", "/ggf/resquery", 200, json={**words, "TimeSpec": f"{start},{start + HOUR}"})
    setres = call("POST", "/ggf/setres", 201, json={**words, "StartTime": start})
    call("POST", "/reservations/{ar_id}/cancel", 200)
    call("DELETE", "/reservations/{ar_id}", 200)
    ids["ar_id"] = setres.json()["reservation"]["id"]
    call("DELETE", "/reservations/{ar_id}", 200)
    call("GET", "/reservations/{ar_id}", 404)
    call("POST", "/reservations", 422, json={"start": "soon"})


@pytest.fixture(scope="module")
def roomy():
    """A daemon without the module's AR limit."""
    daemon, url = start_api("http: {address: {address}}\n")
    yield daemon, url
    daemon.cleanup()


def test_lists_are_filtered_and_sorted_and_an_unknown_parameter_is_refused(roomy):
    """State, name (or pattern), node held, a user the access list lets in,
    and a sort order; a misspelt filter is refused, naming what is taken,
    rather than ignored (which would list everything as if filtered)."""
    daemon, url = roomy
    mine = auth(token(daemon, "plusu2"))
    made = [httpx.post(url + "/v1/reservations", headers=mine,
                       json={**window(130 + hours), "nodes": 1, "name": name, "users": users})
            .json() for hours, name, users in ((2, "alpha", []), (0, "beta", ["plusu3"]),
                                               (4, "alphabet", ["plusu3"]))]
    ids = [ar["id"] for ar in made]

    def listed(**params) -> list[int]:
        answer = httpx.get(url + "/v1/reservations", headers=mine,
                           params={"owner": "plusu2", **params})
        assert answer.status_code == 200, answer.text
        return [ar["id"] for ar in answer.json()]

    try:
        assert listed() == ids
        assert listed(name="alpha*") == [ids[0], ids[2]] and listed(name="beta") == [ids[1]]
        assert listed(access="plusu3") == [ids[1], ids[2]]
        assert listed(node=made[1]["allocations"][0]["node"]) == \
            [ar["id"] for ar in made if ar["allocations"] == made[1]["allocations"]]
        assert listed(state="w") == ids and listed(state="rE") == []
        assert listed(sort="start") == [ids[1], ids[0], ids[2]]
        assert listed(sort="-start,id") == [ids[2], ids[0], ids[1]]
        assert listed(sort="-name", limit=1) == [ids[1]]
        for params, why in (({"stat": "r"}, "unknown query parameter 'stat'; this endpoint "
                                            "takes: access, end, expired"),
                            ({"sort": "size"}, "sort: 'size' is not a field to sort by"),
                            ({"state": "q"}, "state: 'q' is no AR state")):
            refused = httpx.get(url + "/v1/reservations", headers=mine, params=params)
            assert refused.status_code == 400 and refused.json()["error"].startswith(why), \
                refused.text
    finally:
        for ar_id in ids:
            httpx.delete(url + f"/v1/reservations/{ar_id}", headers=mine)


def test_a_read_is_tagged_and_a_client_with_the_tag_gets_304_until_it_changes(api):
    """ETag on every JSON read; If-None-Match answers 304 with no body while
    the answer is the same, and the new answer once the AR changed. 201
    says where the AR made is."""
    daemon, url = api
    mine = auth(token(daemon, "plusu1"))
    made = httpx.post(url + "/v1/reservations", headers=mine, json={**window(140), "nodes": 1})
    assert made.status_code == 201 and made.headers["location"] == f"/v1/reservations/{made.json()['id']}"
    where = url + made.headers["location"]
    try:
        first = httpx.get(where, headers=mine)
        tag = first.headers["etag"]
        again = httpx.get(where, headers={**mine, "If-None-Match": f'W/{tag}, "other"'})
        assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", tag)
        listing = httpx.get(url + "/v1/reservations", headers=mine)
        assert httpx.get(url + "/v1/reservations", headers={
            **mine, "If-None-Match": listing.headers["etag"]}).status_code == 304
        httpx.patch(where, headers=mine, json={"end": made.json()["end"] + HOUR})
        changed = httpx.get(where, headers={**mine, "If-None-Match": tag})
        assert changed.status_code == 200 and changed.headers["etag"] != tag
        assert changed.json()["end"] == made.json()["end"] + HOUR
        refused = httpx.get(url + "/v1/reservations/9999999", headers={**mine, "If-None-Match": "*"})
        assert refused.status_code == 404 and "etag" not in refused.headers
    finally:
        httpx.delete(where, headers=mine)


def test_health_answers_a_load_balancer_without_a_token(api):
    _, url = api
    healthy = httpx.get(url + "/health")
    assert healthy.status_code == 200, healthy.text
    assert healthy.json() | {"observed_seconds_ago": 0} == {
        "serving": True, "role": "leader", "store": "ok", "lag": 0, "batch_system": "ok",
        "observed_seconds_ago": 0}
    assert httpx.get(url + "/health", params={"role": "leader"}).status_code == 200
    standby = httpx.get(url + "/health", params={"role": "standby"})
    assert standby.status_code == 503 and standby.json()["role"] == "leader"
    assert httpx.get(url + "/health", params={"role": "boss"}).status_code == 422


@pytest.fixture(scope="module")
def portal_api():
    daemon, url = start_api("http: {address: {address}, "
                            "cors_origins: ['https://portal.example.org']}\n")
    yield daemon, url
    daemon.cleanup()


def test_a_portal_on_a_named_origin_may_call_the_api_and_no_other_origin(portal_api, api):
    daemon, url = portal_api
    preflight = {"Origin": "https://portal.example.org", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization,content-type"}
    allowed = httpx.options(url + "/v1/reservations", headers=preflight)
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "https://portal.example.org"
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
    answer = httpx.get(url + "/v1/reservations", headers={
        **auth(token(daemon, "plusu1")), "Origin": "https://portal.example.org"})
    assert answer.headers["access-control-allow-origin"] == "https://portal.example.org"
    assert "x-total-count" in answer.headers["access-control-expose-headers"].lower()
    other = httpx.options(url + "/v1/reservations",
                          headers={**preflight, "Origin": "https://evil.example.org"})
    assert "access-control-allow-origin" not in other.headers
    _, plain = api                                   # no origins named: CORS is off
    assert "access-control-allow-origin" not in httpx.options(
        plain + "/v1/reservations", headers=preflight).headers


@pytest.mark.parametrize("origins", ["['http://portal.example.org']", "['https://p.org/app']",
                                     "https://p.org"])
def test_a_cors_origin_that_is_no_origin_is_refused_naming_what_is_taken(origins, tmp_path):
    path = tmp_path / "plus.yaml"
    path.write_text(f"http: {{cors_origins: {origins}}}\n")
    with pytest.raises((ConfigError, ValueError), match=r"http.cors_origins: expected a list of "
                                                       r"origins, each scheme://host\[:port\]"):
        load(str(path))
