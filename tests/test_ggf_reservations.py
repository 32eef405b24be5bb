"""Seed 003's SETRES and RESQANDSET, by command and over HTTP, and the
ResKey they return once: claims signed with it submit a job into the AR,
cancel or change it as its owner; sniffed (altered), replayed, stale and
foreign claims are refused and logged."""

from __future__ import annotations

import json
import os
import time

import httpx
import pytest

from http_harness import HOUR, auth, secret_file, start_api, token, window
from overlay.network import reskey


@pytest.fixture(scope="module")
def api():
    daemon, url = start_api("http: {address: {address}, trusted_principals: [plusmgr]}\n")
    yield daemon, url
    daemon.cleanup()


def iso(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def jobs(daemon) -> list[list[str]]:
    lines = daemon.ok("root", "plus_qstat", "-u", "*").splitlines()[2:]
    return [line.split() for line in lines]


def setres(daemon, user: str, userid: str, start: int, resources: str = "nodes=1") -> list[str]:
    return daemon.ok(user, "plus_setres", userid, "1h", str(start), resources).split()


def test_setres_reserves_at_the_start_and_prints_the_reskey_once(api):
    daemon, _ = api
    start = window(40)["start"]
    success, key, other = setres(daemon, "plusu1", "plusu1", start)
    ar_id = int(other.removeprefix("R"))
    assert success == "true" and reskey.parse_reskey(key)[0] == ar_id
    (ar,) = daemon.status("-r", str(ar_id))
    assert (ar["owner"], ar["start"], ar["end"]) == ("plusu1", start, start + HOUR)
    assert key not in json.dumps(ar)                  # shown once, never by plus_status
    daemon.ok("plusu1", "plus_destroy", "-r", str(ar_id))


def test_setres_refused_says_false_with_the_reason_and_stores_nothing(api):
    daemon, _ = api
    start = window(41)["start"]
    before = daemon.status()
    refused = daemon.run("plusu1", "plus_setres", "plusu1", "1h", str(start), "nodes=6")
    assert refused.returncode == 1 and refused.stdout.startswith("false ")
    assert "5" in refused.stdout and daemon.status() == before
    as_json = daemon.run("plusu1", "plus_setres", "--json", "plusu1", "1h", str(start), "nodes=6")
    assert json.loads(as_json.stdout)["SuccessOrNot"] is False


@pytest.mark.parametrize("command, words, message", [
    ("plus_setres", ["plusu1", "1h", "nodes=1"],
     "expected UserID TimeNeeded StartTime {ResAccess} ResourceList, got 3 argument(s)"),
    ("plus_setres", ["plusu1", "1h", "R1", "nodes=1"], "StartTime is missing"),
    ("plus_setres", ["plusu1", "1h", "soon", "nodes=1"], "StartTime: invalid time 'soon'"),
    ("plus_setres", ["plusu1", "1x", "now+1h", "nodes=1"], "TimeNeeded: invalid '1x'"),
    ("plus_resqandset", ["plusu1", "1h", "now,now+1h,now+2h", "ppn=1"],
     "ResourceList: nodes=N is required"),
    ("plus_resqandset", ["plusu1", "1h", "a", "b", "c", "d"], "expected UserID TimeNeeded"),
])
def test_bad_words_are_a_usage_error_naming_them(api, command, words, message):
    daemon, _ = api
    before = daemon.status()
    result = daemon.run("plusu1", command, *words)
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert result.stderr.startswith(f"{command}: ") and message in result.stderr
    assert daemon.status() == before


def test_resqandset_takes_the_earliest_start_the_bookings_leave(api):
    daemon, _ = api
    start = window(50)["start"]
    busy = daemon.reserve("plusu1", "-s", iso(start), "-e", iso(start + 2 * HOUR), "-n", "5")
    line = daemon.ok("plusu2", "plus_resqandset", "plusu2", "1h",
                     f"{start},{start + 5 * HOUR}", "nodes=5").split()
    assert line[0] == "true" and int(line[1]) == start + 2 * HOUR
    (ar,) = daemon.status("-r", line[3].removeprefix("R"))
    assert ar["owner"] == "plusu2" and ar["start"] == start + 2 * HOUR
    none = daemon.run("plusu2", "plus_resqandset", "plusu2", "3h",
                      f"{start},{start + 3 * HOUR},{start + 5 * HOUR}", "nodes=5")
    assert none.returncode == 1 and none.stdout.startswith("false no start between")
    for ar_id in (busy["id"], ar["id"]):
        daemon.ok("root", "plus_destroy", "-r", str(ar_id))


def test_over_http_a_metascheduler_reserves_for_a_userid(api):
    daemon, url = api
    start = window(60)["start"]
    meta = auth(token(daemon, "plusmgr"))
    made = httpx.post(url + "/ggf/setres", headers=meta, json={
        "UserID": "plusu2", "TimeNeeded": "1h", "StartTime": str(start),
        "ResourceList": "nodes=2;ppn=2"})
    assert made.status_code == 201, made.text
    answer = made.json()
    assert answer["SuccessOrNot"] is True and answer["reservation"]["owner"] == "plusu2"
    assert answer["OtherInfo"] == f"R{answer['reservation']['id']}"
    earliest = httpx.post(url + "/ggf/resqandset", headers=meta, json={
        "UserID": "plusu2", "TimeNeeded": "1h", "TimeSpec": f"{start}", "ResourceList": "nodes=4"})
    assert earliest.status_code == 201 and earliest.json()["StartTime"] >= start
    refused = httpx.post(url + "/ggf/setres", headers=meta, json={
        "UserID": "plusu2", "TimeNeeded": "1h", "StartTime": str(start),
        "ResourceList": "nodes=5"})
    assert refused.status_code == 409 and refused.json()["SuccessOrNot"] is False
    for view in (answer["reservation"], earliest.json()["reservation"]):
        daemon.ok("root", "plus_destroy", "-r", str(view["id"]))


def test_a_job_claimed_with_the_reskey_runs_as_the_ars_owner(api):
    daemon, url = api
    start = window(70)["start"]
    _, key, other = setres(daemon, "plusu1", "plusu1", start)
    ar_id = other.removeprefix("R")
    submitted = daemon.run("plusu3", "plus_qsub", "--reskey", secret_file(daemon.dir / "k1", key, "plusu3"),
                           "-b", "y", "-N", "claimed", "/bin/true")
    assert submitted.returncode == 0, submitted.stderr
    assert submitted.stdout.startswith("Your job ") and '("claimed")' in submitted.stdout
    job_id = submitted.stdout.split()[2]
    (row,) = [row for row in jobs(daemon) if row[0] == job_id]
    assert row[3] == "plusu1"                                # the owner, not plusu3
    detail = json.loads(daemon.ok("root", "plus_qstat", "-j", job_id, "--json"))
    assert detail[0]["ar"] == int(ar_id)
    daemon.ok("root", "plus_qdel", job_id)
    over_http = httpx.post(url + "/jobs", headers=auth(token(daemon, "plusu3")),
                           json=reskey.make_claim(key, "submit", {"command": ["/bin/true"],
                                                                 "binary": True}))
    assert over_http.status_code == 201, over_http.text
    daemon.ok("root", "plus_qdel", str(over_http.json()["id"]))
    daemon.ok("plusu1", "plus_destroy", "-r", ar_id)


def test_sniffed_replayed_stale_and_foreign_claims_are_refused_and_logged(api):
    daemon, url = api
    start = window(80)["start"]
    _, key, other = setres(daemon, "plusu1", "plusu1", start)
    _, foreign, _ = setres(daemon, "plusu2", "plusu2", start + HOUR)
    holder = auth(token(daemon, "plusu3"))
    job = {"command": ["/bin/true"], "binary": True}
    before = jobs(daemon)
    claim = reskey.make_claim(key, "submit", job)
    sniffed = {**claim, "payload": {"command": ["/bin/rm", "-rf", "/tmp/x"], "binary": True}}
    stale = reskey.make_claim(key, "submit", job, now=time.time() - 3600)
    guessed = {**reskey.make_claim(foreign, "submit", job), "id": claim["id"]}
    for bad, why in ((sniffed, "not signed with its ResKey"), (stale, "more than 300 s"),
                     (guessed, "not signed with its ResKey")):
        refused = httpx.post(url + "/jobs", headers=holder, json=bad)
        assert refused.status_code == 403 and why in refused.json()["error"], refused.text
    assert jobs(daemon) == before
    first = httpx.post(url + "/jobs", headers=holder, json=claim)
    assert first.status_code == 201
    replayed = httpx.post(url + "/jobs", headers=holder, json=claim)
    assert replayed.status_code == 403 and "replay" in replayed.json()["error"]
    borrowed = {**reskey.make_claim(foreign, "submit", job), "nonce": claim["nonce"]}
    borrowed["hmac"] = reskey.claim_digest(foreign, borrowed["id"], borrowed["nonce"],
                                           borrowed["timestamp"], "submit", job)
    reused = httpx.post(url + "/jobs", headers=holder, json=borrowed)
    assert reused.status_code == 403
    assert reused.json()["error"] == (f"the claim's nonce was used before, by a claim on AR "
                                      f"{claim['id']}: sign each claim with a fresh nonce")
    assert len(jobs(daemon)) == len(before) + 1
    log = daemon.log.read_text()
    assert log.count("claim refused: submit") >= 4 and "replay" in log
    daemon.ok("root", "plus_qdel", str(first.json()["id"]))
    daemon.ok("root", "plus_destroy", "-r", other.removeprefix("R"))
    daemon.ok("root", "plus_destroy", "-o", "plusu2")


def test_the_key_holder_changes_and_cancels_the_ar(api):
    daemon, url = api
    start = window(90)["start"]
    _, key, other = setres(daemon, "plusu1", "plusu1", start)
    ar_id = other.removeprefix("R")
    holder = auth(token(daemon, "plusu3"))
    longer = httpx.post(url + "/claims", headers=holder,
                        json=reskey.make_claim(key, "modify", {"duration": 2 * HOUR}))
    assert longer.status_code == 200 and longer.json()["end"] == start + 2 * HOUR
    bad = httpx.post(url + "/claims", headers=holder,
                     json=reskey.make_claim(key, "modify", {"colour": "red"}))
    assert bad.status_code == 400 and "unknown argument 'colour'" in bad.json()["error"]
    wrong = httpx.post(url + "/jobs", headers=holder, json=reskey.make_claim(key, "cancel", {}))
    assert wrong.status_code == 400 and "POST /claims" in wrong.json()["error"]
    key_file = secret_file(daemon.dir / "k2", key, "plusu3")
    by_command = daemon.run("plusu3", "plus_modify", "--reskey", key_file, "-D", "3:0:0",
                            "-U", "plusu2")
    assert by_command.returncode == 0, by_command.stderr
    assert by_command.stdout == f"Advance reservation {ar_id} has been modified\n"
    (changed,) = daemon.status("-r", ar_id)
    assert (changed["owner"], changed["end"]) == ("plusu1", start + 3 * HOUR)
    assert "plusu2" in changed["acl"]
    too_many = daemon.run("plusu3", "plus_modify", "--reskey", key_file, "-n", "6")
    assert too_many.returncode == 1 and daemon.status("-r", ar_id)[0]["end"] == start + 3 * HOUR
    cancelled = daemon.run("plusu3", "plus_cancel", "--reskey", key_file)
    assert cancelled.returncode == 0 and f"{ar_id} has been cancelled" in cancelled.stdout
    assert daemon.status("-r", ar_id)[0]["state"] == "d"
    daemon.ok("root", "plus_destroy", "-r", ar_id)


@pytest.mark.parametrize("command, args, message", [
    ("plus_cancel", ["--reskey", "/nonexistent"], "--reskey: cannot read /nonexistent"),
    ("plus_cancel", ["--reskey", "NOT-A-KEY"], "not a ResKey"),
    ("plus_cancel", ["--reskey", "NOT-A-KEY", "-r", "1"], "cannot be used with -r"),
    ("plus_qsub", ["--reskey", "NOT-A-KEY", "-b", "y", "/bin/true"], "not a ResKey"),
    ("plus_modify", ["--reskey", "NOT-A-KEY", "-D", "1:0:0"], "not a ResKey"),
    ("plus_modify", ["--reskey", "NOT-A-KEY", "-r", "1", "-D", "1:0:0"],
     "--reskey names the AR itself: it cannot be used with -r or -T"),
    ("plus_modify", ["--reskey", "NOT-A-KEY", "-T", "-D", "1:0:0"], "cannot be used with -r or -T"),
    ("plus_modify", ["--reskey", "NOT-A-KEY"], "nothing to change"),
    ("plus_modify", ["-D", "1:0:0"], "-r rsvID is required (or --reskey FILE)"),
])
def test_a_bad_reskey_file_is_a_usage_error(api, command, args, message):
    daemon, _ = api
    not_a_key = secret_file(daemon.dir / "not-a-key", "hello", "plusu1")
    result = daemon.run("plusu1", command, *(not_a_key if a == "NOT-A-KEY" else a for a in args))
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_a_reskey_file_others_may_read_or_change_is_refused_as_ssh_refuses_such_a_key(api):
    daemon, _ = api
    _, key, other = setres(daemon, "plusu1", "plusu1", window(110)["start"])
    ar_id = other.removeprefix("R")
    path = secret_file(daemon.dir / "open", key, "plusu3")
    before = jobs(daemon)
    for mode in (0o644, 0o620):                     # world-readable, group-writable
        os.chmod(path, mode)
        for command, args in (("plus_qsub", ["-b", "y", "/bin/true"]), ("plus_cancel", []),
                              ("plus_modify", ["-D", "3:0:0"])):
            result = daemon.run("plusu3", command, "--reskey", path, *args)
            assert result.returncode == 2, result.stderr
            assert result.stderr.startswith(f"{command}: --reskey: {path}: the ResKey file is "
                                            f"open to others (mode {mode:04o})")
            assert result.stderr.rstrip().endswith(f"chmod 600 {path}"), result.stderr
    assert jobs(daemon) == before and daemon.status("-r", ar_id)[0]["state"] == "w"
    daemon.ok("root", "plus_destroy", "-r", ar_id)


def test_accounting_lists_each_ars_use_as_plus_account_does(api):
    daemon, url = api
    now = int(time.time())
    ar = daemon.reserve("plusu2", "-s", "now", "-e", "now+10m", "-n", "1")
    deadline = time.monotonic() + 120
    while daemon.status("-r", str(ar["id"]))[0]["state"] != "r":
        assert time.monotonic() < deadline, "the AR did not start"
        time.sleep(0.2)
    time.sleep(1.1)                                  # a second of use to account for
    answer = httpx.get(url + "/accounting", headers=auth(token(daemon, "plusu2")),
                       params={"start": now - 60, "owner": ["plusu2"], "limit": 1})
    records = answer.json()
    assert len(records) == 1 and int(answer.headers["x-total-count"]) >= 1
    if int(answer.headers["x-total-count"]) > 1:
        assert "offset=1" in answer.headers["link"]
    records += httpx.get(url + "/accounting", headers=auth(token(daemon, "plusu2")),
                         params={"start": now - 60, "owner": ["plusu2"], "offset": 1}).json()
    (mine,) = [r for r in records if r["id"] == ar["id"]]
    assert mine["owner"] == "plusu2" and mine["node_seconds"] >= 1
    assert set(mine["hosts"]) == {a["node"] for a in ar["allocations"]}
    listed = daemon.ok("plusu2", "plus_account", "-l", "-o", "plusu2", "-s", iso(now - 60))
    assert any(line.split()[0] == str(ar["id"]) for line in listed.splitlines())
    daemon.ok("plusu2", "plus_destroy", "-r", str(ar["id"]))


def test_query_says_when_a_job_would_start_by_command_and_over_http(api):
    """This daemon's hosts run no jobs (exec: none): QUERY says no job
    would start, by command and over HTTP (it used to say the AR's end).
    When jobs would start: tests/test_query_native.py."""
    daemon, url = api
    ar = daemon.reserve("plusu1", "-s", "now", "-e", "now+1h", "-n", "5")
    never = daemon.run("plusu2", "plus_query", "plusu2", "30m", "nodes=5")
    why = ("no start can be estimated: only 0 of the 5 node(s) matching the request run jobs "
           "(exec: none runs none); it needs 5")
    assert never.returncode == 1 and why in never.stderr
    over_http = httpx.post(url + "/ggf/query", headers=auth(token(daemon, "plusu2")),
                           json={"UserID": "plusu2", "TimeNeeded": "30m", "ResourceList": "nodes=5"})
    assert over_http.status_code == 409 and over_http.json()["error"] == why
    too_many = daemon.run("plusu2", "plus_query", "plusu2", "30m", "nodes=6")
    assert too_many.returncode == 1 and "only 5 node(s) match the request" in too_many.stderr
    daemon.ok("plusu1", "plus_destroy", "-r", str(ar["id"]))


def test_a_group_carves_reservations_for_its_members_out_of_its_ar(api):
    daemon, url = api
    start = window(100)["start"]
    group = daemon.reserve("plusu1", "-s", iso(start), "-e", iso(start + 4 * HOUR), "-n", "5",
                           "-U", "plusu2")                     # every node, plusu2 may use it
    spec = f"{start},{start + 3 * HOUR}"
    assert daemon.ok("plusu2", "plus_resquery", "plusu2", "1h", spec, "nodes=1").strip() == ""
    ranges = daemon.ok("plusu2", "plus_resquery", "plusu2", "1h", spec, f"R{group['id']}",
                       "nodes=2;ppn=2").split()
    assert [int(t) for t in ranges] == [start, start + 3 * HOUR]
    line = daemon.ok("plusu2", "plus_setres", "plusu2", "1h", str(start + HOUR),
                     f"R{group['id']}", "nodes=2;ppn=2").split()
    (inner,) = daemon.status("-r", line[2].removeprefix("R"))
    assert {a["within"] for a in inner["allocations"]} == {group["id"]}
    assert daemon.status("-r", str(group["id"]))[0]["inner"] == [inner["id"]]
    detail = daemon.ok("plusu2", "plus_status", "-r", str(inner["id"]))
    assert f"inside:                     R{group['id']}" in detail
    daemon.ok("plusu1", "plus_cancel", "-r", str(group["id"]))
    (cancelled,) = daemon.status("-r", str(inner["id"]))
    assert cancelled["state"] == "d" and f"cancelled with AR {group['id']}" in cancelled["message"]
    for ar_id in (group["id"], inner["id"]):
        daemon.ok("root", "plus_destroy", "-r", str(ar_id))


def test_a_claimed_job_refused_at_submission_is_bad_input_and_logged_as_not_carried_out(api):
    daemon, url = api
    _, key, other = setres(daemon, "plusu1", "plusu1", window(100)["start"])
    holder = auth(token(daemon, "plusu3"))
    refused = httpx.post(url + "/jobs", headers=holder, json=reskey.make_claim(
        key, "submit", {"command": ["/bin/true"], "binary": True, "name": "bad\tname"}))
    assert refused.status_code == 400 and refused.json()["kind"] == "invalid", refused.text
    assert f"claim carried out: submit AR {other.removeprefix('R')} " not in daemon.log.read_text()
    daemon.ok("plusu1", "plus_destroy", "-r", other.removeprefix("R"))
