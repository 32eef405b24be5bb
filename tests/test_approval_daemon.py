"""Approval end to end on the native backend: plus_reserve held by the
policy, plus_status and plus_qrstat showing it, no job into it before a
manager approves, plus_approve and plus_deny (managers only, bad input
refused with a clear line, nothing stored) and the HTTP API's approve and
deny (403 for anyone else), as real users against a running daemon."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from http_harness import auth, conforms, start_api, token

SETTINGS = """\
http: {address: {address}}
policies:
  big: {type: approval, max_nodes: 2}
"""
HELD = re.compile(r"Your advance reservation (\d+) awaits a manager's approval \(policy big: "
                  r"3 nodes is more than max_nodes 2\); it lapses unless approved before ")


@pytest.fixture(scope="module")
def api():
    daemon, url = start_api(SETTINGS)
    yield daemon, url
    daemon.cleanup()


_windows = iter(range(2, 200, 2))


def held(daemon) -> int:
    """A new AR the policy holds, in a window of its own (5 nodes, 3 each)."""
    out = daemon.ok("plusu1", "plus_reserve", "-s", f"now+{next(_windows)}h", "-D", "1h",
                    "-n", "3")
    match = HELD.match(out)
    assert match, out
    return int(match.group(1))


def test_commands(api):
    daemon, _ = api
    ar_id = held(daemon)
    row = next(line for line in daemon.ok("plusu1", "plus_status").splitlines()
               if line.split()[0] == str(ar_id))
    assert row.split()[2] == "h"
    detail = daemon.ok("plusu1", "plus_status", "-r", str(ar_id))
    assert "message:                    awaiting a manager's approval: policy big" in detail
    assert "approval:                   awaited: plus_approve or plus_deny by a manager" in detail
    assert "\nsubmit:" not in detail          # a held AR takes no job yet: no way to use it shown
    qrstat = daemon.ok("plusu1", "plus_qrstat")
    assert re.search(rf"^ +{ar_id} +plusu1 +hw ", qrstat, re.M), qrstat
    refused = daemon.run("plusu1", "plus_qsub", "-ar", str(ar_id), "-b", "y", "/bin/true")
    assert refused.returncode != 0
    assert f"AR {ar_id} awaits a manager's approval: it takes jobs once approved" in refused.stderr

    not_manager = daemon.run("plusu1", "plus_approve", str(ar_id))
    assert (not_manager.returncode, not_manager.stderr) == (
        1, "plus_approve: only managers may approve advance reservations; plusu1 is not one "
           "(managers: in plus.yaml)\n")
    unknown = daemon.run("plusmgr", "plus_approve", str(ar_id), "9999")
    assert (unknown.returncode, unknown.stderr) == (1, "plus_approve: AR 9999 does not exist\n")
    too_long = daemon.run("plusmgr", "plus_deny", str(ar_id), "-reason", "x" * 600)
    assert too_long.returncode == 2
    assert "-reason: 600 characters; at most 512 are accepted" in too_long.stderr
    line_break = daemon.run("plusmgr", "plus_deny", str(ar_id), "-reason", "a\nb")
    assert line_break.returncode == 2 and "holds a line break" in line_break.stderr
    assert daemon.status("-r", str(ar_id))[0]["state"] == "h"   # nothing stored

    assert daemon.ok("plusmgr", "plus_approve", f"R{ar_id}") == (
        f"Advance reservation {ar_id} of plusu1 has been approved (state w)\n")
    again = daemon.run("plusmgr", "plus_approve", str(ar_id))
    assert again.returncode == 1
    assert f"AR {ar_id} is not awaiting approval (state w: it is granted already)" in again.stderr
    assert "\nsubmit:" in daemon.ok("plusu1", "plus_status", "-r", str(ar_id))
    daemon.ok("plusu1", "plus_qsub", "-ar", str(ar_id), "-b", "y", "/bin/true")

    denied = held(daemon)
    assert daemon.ok("plusmgr", "plus_deny", str(denied), "-reason", "not this week") == (
        f"Advance reservation {denied} of plusu1 has been denied\n")
    [view] = daemon.status("-r", str(denied))
    assert (view["state"], view["message"]) == ("d", "denied by plusmgr: not this week")


def test_http(api):
    daemon, url = api
    document = httpx.get(url + "/openapi.json").json()
    first, second = held(daemon), held(daemon)
    user, manager = auth(token(daemon, "plusu1")), auth(token(daemon, "plusmgr"))
    refused = httpx.post(f"{url}/v1/reservations/{first}/approve", headers=user)
    assert refused.status_code == 403
    assert refused.json()["error"].startswith("only managers may approve advance reservations")
    refused = httpx.post(f"{url}/v1/reservations/{first}/deny", headers=user, json={})
    assert refused.status_code == 403
    bad = httpx.post(f"{url}/v1/reservations/{first}/deny", headers=manager,
                     json={"reason": "y" * 513})
    assert bad.status_code == 400 and "at most 512" in bad.json()["error"]
    missing = httpx.post(f"{url}/v1/reservations/9999999/approve", headers=manager)
    assert missing.status_code == 404
    approved = httpx.post(f"{url}/v1/reservations/{first}/approve", headers=manager)
    assert approved.status_code == 200 and approved.json()["state"] == "w"
    conforms(document, "POST", "/v1/reservations/{ar_id}/approve", approved)
    denied = httpx.post(f"{url}/v1/reservations/{second}/deny", headers=manager,
                        json={"reason": "too big"})
    assert denied.status_code == 200
    assert (denied.json()["state"], denied.json()["message"]) == ("d", "denied by plusmgr: too big")
    conforms(document, "POST", "/v1/reservations/{ar_id}/deny", denied)
    ggf = httpx.post(f"{url}/v1/ggf/setres", headers=user, json={
        "UserID": "plusu1", "TimeNeeded": "1h", "StartTime": str(int(time.time()) + 190 * 3600),
        "ResourceList": "nodes=3"})
    assert ggf.status_code == 400, ggf.text
    assert "which a GGF reservation cannot wait for" in ggf.json()["error"]
    held_view = httpx.get(f"{url}/v1/reservations/{held(daemon)}", headers=user).json()
    assert held_view["approval"]["reason"] == "policy big: 3 nodes is more than max_nodes 2"
