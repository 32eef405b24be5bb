"""Acting for another user goes only as far as the site allows: a trusted
principal (or a manager on the socket) never acts for root, a system
account or a manager, nor for anyone act_for leaves out; and no path (the
socket, HTTP, a ResKey claim) ever starts a job as root or a system
account. Each case here went wrong before (issue 27, item 1): a trusted
principal's ?user=root answered manager: true, cancelled another user's AR,
and a root AR's claim ran `id` as uid 0."""

from __future__ import annotations

import os
import pwd

import httpx
import pytest

from http_harness import auth, start_api, token, window
from overlay.network import reskey

PRINCIPAL = "plusu3"      # a trusted principal that is no manager


@pytest.fixture(scope="module")
def api():
    daemon, url = start_api("http: {address: {address}, trusted_principals: [plusu3]}\n"
                            "act_for: [plusu1]\n")
    yield daemon, url
    daemon.cleanup()


@pytest.mark.parametrize("target, why", [
    ("root", "uid 0 is root or a system account (below min_uid 1000)"),
    ("daemon", "uid 1 is root or a system account (below min_uid 1000)"),
    ("nobody", "uid 65534 is root or a system account (below min_uid 1000)"),
    ("plusmgr", "a manager acts only as itself"),
    ("plusu2", "act_for in plus.yaml does not name the user or a group of theirs"),
])
def test_a_trusted_principal_acts_only_for_whom_the_site_allows(api, target, why):
    daemon, url = api
    meta = auth(token(daemon, PRINCIPAL))
    before = daemon.status()
    asked = [httpx.get(url + "/whoami", headers=meta, params={"user": target}),
             httpx.post(url + "/reservations", headers=meta, params={"user": target},
                        json={**window(3), "nodes": 1}),
             httpx.post(url + "/ggf/setres", headers=meta, json={
                 "UserID": target, "TimeNeeded": "1h", "StartTime": str(window(4)["start"]),
                 "ResourceList": "nodes=1"})]
    for answer in asked:
        assert answer.status_code == 403, answer.text
        assert answer.json()["error"] == f"{PRINCIPAL} may not act for {target}: {why}"
    assert daemon.status() == before


def test_acting_for_root_cancels_nobodys_ar(api):
    daemon, url = api
    mine = daemon.reserve("plusu2", "-s", "now+5h", "-D", "1h", "-n", "1")
    cancelled = httpx.post(url + f"/reservations/{mine['id']}/cancel",
                           headers=auth(token(daemon, PRINCIPAL)), params={"user": "root"})
    assert cancelled.status_code == 403
    (still,) = daemon.status("-r", str(mine["id"]))
    assert still["state"] == "w"
    daemon.ok("plusu2", "plus_destroy", "-r", str(mine["id"]))


def test_a_principal_acts_for_a_user_act_for_names(api):
    daemon, url = api
    meta = auth(token(daemon, PRINCIPAL))
    who = httpx.get(url + "/whoami", headers=meta, params={"user": "plusu1"})
    assert who.status_code == 200 and who.json() == {"user": "plusu1", "manager": False}
    made = httpx.post(url + "/reservations", headers=meta, params={"user": "plusu1"},
                      json={**window(6), "nodes": 1})
    assert made.status_code == 201 and made.json()["owner"] == "plusu1"
    daemon.ok("plusu1", "plus_destroy", "-r", str(made.json()["id"]))


def test_a_manager_on_the_socket_acts_for_no_system_account(api):
    daemon, _ = api
    refused = daemon.run("plusmgr", "plus_resquery", "daemon", "1h", "nodes=1")
    assert refused.returncode != 0
    assert "plusmgr may not act for daemon: uid 1 is root or a system account" in refused.stderr
    assert daemon.run("plusmgr", "plus_resquery", "plusu1", "1h", "nodes=1").returncode == 0


def test_no_claim_and_no_command_starts_a_job_as_root(api):
    daemon, url = api
    success, key, other = daemon.ok("root", "plus_setres", "root", "1h",
                                    str(window(7)["start"]), "nodes=1").split()
    assert success == "true"
    job = {"command": ["/usr/bin/id"], "binary": True}
    claimed = httpx.post(url + "/jobs", headers=auth(token(daemon, "plusu1")),
                         json=reskey.make_claim(key, "submit", job))
    assert claimed.status_code == 403
    assert claimed.json()["error"] == ("root (uid 0) is root or a system account (below min_uid "
                                       "1000): no job runs as one for a client")
    key_path = daemon.dir / "root.reskey"
    key_path.write_text(key + "\n")
    entry = pwd.getpwnam("plusu1")
    os.chown(key_path, entry.pw_uid, entry.pw_gid)
    os.chmod(key_path, 0o600)
    by_command = daemon.run("plusu1", "plus_qsub", "--reskey", str(key_path), "-b", "y",
                            "/usr/bin/id")
    assert by_command.returncode != 0 and "no job runs as one" in by_command.stderr
    direct = daemon.run("root", "plus_qsub", "-b", "y", "/usr/bin/id")
    assert direct.returncode != 0
    assert ("job rejected: root (uid 0) is root or a system account (below min_uid 1000): jobs "
            "never run as one; submit as a user") in direct.stderr
    assert daemon.ok("root", "plus_qstat", "-u", "*") == ""
    daemon.ok("root", "plus_destroy", "-r", other.removeprefix("R"))

