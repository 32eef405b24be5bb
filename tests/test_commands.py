"""Every command and option against a running plus_scheduler, as real users."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import xmlschema

from daemon_harness import Daemon

SCHEMA = xmlschema.XMLSchema(str(Path(__file__).parents[1] / "overlay" / "schemas" / "qrstat.xsd"))


@pytest.fixture
def daemon():
    d = Daemon().start()
    yield d
    d.cleanup()


def wait_for(predicate, timeout: float = 120.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("condition not reached in time")


def granted_id(output: str) -> int:
    match = re.search(r"advance reservation (\d+)", output)
    assert match, output
    return int(match.group(1))


def test_reserve_status_availnodes_cancel_destroy(daemon):
    out = daemon.ok("plusu1", "plus_reserve", "-s", "now+1h", "-D", "1:00:00", "-n", "2", "-p")
    ar_id = granted_id(out)
    assert "has been granted" in out and "reserved nodes: big,n01" in out
    table = daemon.ok("plusu2", "plus_status")
    assert table.splitlines()[0].startswith("AR-ID   name       owner        state start at")
    row = table.splitlines()[2]
    assert re.match(rf"^ +{ar_id} +plusu1 +w +\d\d/\d\d/\d{{4}} \d\d:\d\d:\d\d .* 1:0:0$", row), row
    assert "big,n01" in daemon.ok("plusu1", "plus_status", "-n")
    detail = daemon.ok("plusu1", "plus_status", "-r", f"R{ar_id}")
    assert f"id:                         {ar_id}" in detail
    assert "granted_slots:              " + f"R{ar_id}@big=16,R{ar_id}@n01=4" in detail
    assert "owner:                      plusu1" in detail
    SCHEMA.validate(daemon.ok("plusu1", "plus_status", "-x"))
    avail = daemon.ok("plusu1", "plus_availnodes", "-s", "now+1h", "-e", "now+2h")
    assert avail.splitlines()[0].startswith("3 nodes available")
    assert avail.splitlines()[1:] == ["n02", "n03", "n04"]
    SCHEMA.validate(daemon.ok("plusu1", "plus_availnodes", "-s", "now+3h", "-e", "now+4h", "-x"))
    assert "Advance reservation" in daemon.ok("plusu1", "plus_cancel", "-r", str(ar_id))
    assert daemon.status() == []
    [cancelled] = daemon.status("-ne", "5")
    assert cancelled["state"] == "d"
    assert daemon.ok("plusu1", "plus_availnodes", "-s", "now+1h", "-e", "now+2h").startswith("5 nodes")
    daemon.ok("plusu1", "plus_destroy", "-r", str(ar_id))
    assert daemon.status("-ne", "5") == []


def test_every_reserve_option(daemon):
    view = daemon.reserve("plusu1", "-s", "now+1h", "-e", "now+3h", "-n", "1", "-U", "plusu2,@plusgrp",
                          "-mem", "100G", "-ncpu", "8", "-arch", "lx-*", "-os", "linux",
                          "-l", "gpu=yes", "-sn", "4", "-sgeq", "big.q", "-N", "myrun",
                          "-he", "yes", "-m", "ea", "-M", "plusu2,ops@example.org")
    assert [a["node"] for a in view["allocations"]] == ["big"]
    assert view["request"]["hard_error"] is True and view["request"]["mail_options"] == "ea"
    assert view["request"]["mail_list"] == ["plusu2", "ops@example.org"]
    detail = daemon.ok("plusu1", "plus_status", "-r", str(view["id"]))
    assert "error_handling:             hard" in detail
    assert "mail_options:               ea" in detail
    assert "mail_list:                  plusu2,ops@example.org" in detail
    xml = daemon.ok("plusu1", "plus_status", "-r", str(view["id"]), "-x")
    SCHEMA.validate(xml)
    assert '<mail user="ops" host="example.org" />' in xml
    assert view["allocations"][0]["slots"] == 4
    assert view["acl"] == ["plusu1", "plusu2", "@plusgrp"]
    assert view["name"] == "myrun" and view["duration"] == 7200
    assert view["request"]["memory_mb"] == 102400 and view["request"]["ncpus"] == 8
    xml = daemon.ok("plusu1", "plus_reserve", "-s", "now+1h", "-D", "30m", "-n", "1", "-sn", "4",
                    "-l", "gpu=yes", "-x")
    SCHEMA.validate(xml)
    assert "<resource name=\"gpu\" type=\"yes\" />" in xml
    pending = daemon.ok("plusu1", "plus_reserve", "-T", "-s", "now+5h", "-D", "1h", "-n", "5")
    pending_id = granted_id(pending)
    assert "is pending" in pending
    assert daemon.status("-r", str(pending_id))[0]["state"] == "p"
    assert "pending_operation:" in daemon.ok("plusu1", "plus_status", "-r", str(pending_id))
    daemon.ok("plusu1", "plus_commit", "-r", str(pending_id))
    assert daemon.status("-r", str(pending_id))[0]["state"] == "w"


def test_modify_options_and_transactions(daemon):
    ar_id = daemon.reserve("plusu1", "-s", "now+2h", "-D", "1h", "-n", "1")["id"]
    before = daemon.status("-r", str(ar_id))[0]
    daemon.ok("plusu1", "plus_modify", "-r", str(ar_id), "-s", "now+4h")
    moved = daemon.status("-r", str(ar_id))[0]
    assert moved["duration"] == 3600 and moved["start"] >= before["start"] + 7000
    daemon.ok("plusu1", "plus_modify", "-r", str(ar_id), "-D", "2h", "-n", "3", "-U", "plusu2")
    changed = daemon.status("-r", str(ar_id))[0]
    assert changed["duration"] == 7200 and len(changed["allocations"]) == 3
    assert changed["acl"] == ["plusu1", "plusu2"]
    daemon.ok("plusu1", "plus_modify", "-r", str(ar_id), "-e", "now+10h")
    assert daemon.status("-r", str(ar_id))[0]["end"] > changed["end"]
    out = daemon.ok("plusu1", "plus_modify", "-T", "-r", str(ar_id), "-n", "5")
    assert "pending" in out
    xml = daemon.ok("plusu1", "plus_status", "-x")
    SCHEMA.validate(xml)
    assert '<pending_operation operation="modify"' in xml
    assert daemon.run("plusu2", "plus_reserve", "-s", "now+5h", "-D", "1h", "-n", "1").returncode == 1
    daemon.ok("plusu1", "plus_abort", "-r", str(ar_id))
    assert len(daemon.status("-r", str(ar_id))[0]["allocations"]) == 3
    daemon.ok("plusu1", "plus_cancel", "-T", "-r", str(ar_id))
    assert daemon.status("-r", str(ar_id))[0]["state"] == "w"
    daemon.ok("plusu1", "plus_commit", "-r", str(ar_id))
    assert daemon.status("-r", str(ar_id))[0]["state"] == "d"
    daemon.ok("plusu1", "plus_destroy", "-T", "-r", str(ar_id))
    daemon.ok("plusu1", "plus_commit", "-r", str(ar_id))
    assert daemon.run("root", "plus_status", "-r", str(ar_id)).returncode == 1


def test_status_selection_options(daemon):
    early = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1")["id"]
    late = daemon.reserve("plusu2", "-s", "now+10h", "-D", "1h", "-n", "1")["id"]
    assert [v["id"] for v in daemon.status("-o", "plusu2")] == [late]
    assert [v["id"] for v in daemon.status("-s", "now+5h")] == [late]
    assert [v["id"] for v in daemon.status("-e", "now+5h")] == [early]
    assert [v["id"] for v in daemon.status("-s", "now", "-e", "now+20h")] == [early, late]


BAD_INPUT = [
    ("plusu1", ["plus_reserve", "-s", "tomorrow", "-D", "1h", "-n", "1"], 2, r"invalid time 'tomorrow'.*accepted forms"),
    ("plusu1", ["plus_reserve", "-s", "13011200", "-D", "1h", "-n", "1"], 2, r"invalid time '13011200'"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "1x", "-n", "1"], 2, r"invalid duration '1x'"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-e", "now", "-n", "1"], 2, r"end time must be later"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-e", "now+3h", "-D", "1h", "-n", "1"], 2, r"dissonant"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "1h"], 2, r"required: -n"),
    ("plusu1", ["plus_reserve", "-D", "1h", "-n", "1"], 2, r"required: -s"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "0"], 2, r"-n: the number of nodes must be at least 1"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "-3"], 2, r"-n: .*at least 1"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "two"], 2, r"whole number"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "99"], 1, r"only 5 of the 99 requested nodes"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1", "--bogus"], 2, r"unrecognized arguments: --bogus"),
    ("plusu1", ["plus_reserve", "-s", "now+3000000d", "-D", "1h", "-n", "1"], 2, r"^plus_reserve: -s: 'now\+3000000d' is more than 3650 days ahead \(the horizon\); accepted are times up to "),
    ("plusu1", ["plus_reserve", "-s", "999912310000", "-D", "1h", "-n", "1"], 2, r"-s: '999912310000' is more than 3650 days ahead"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "4000d", "-n", "1"], 2, r"-D: the duration '4000d' is longer than 3650 days"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "\uff11"], 2, r"-n: the number of nodes must be a whole number"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1", "-N", "ar\n"], 2, r"-N: invalid AR name 'ar\\n'"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1", "-arch", "x" * 300], 2, r"-arch: invalid pattern 'x+\.\.\. \(300 characters\)'"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1", "-l", "x=" + "y" * 2 ** 16], 2, r"argument 8 'x=y+\.\.\. \(65538 characters\)' is longer than 4096 characters"),
    ("plusu1", ["plus_modify", "-r", "\u0661", "-D", "2h"], 2, r"^plus_modify: -r: invalid reservation id '\u0661': accepted forms are 123 or R123"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1", "-mem", "12Q"], 2, r"invalid memory size '12Q'"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1", "-l", "gpu"], 2, r"attr=value"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1", "-U", "bad name"], 2, r"invalid name 'bad name'"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1", "-U", "nosuchuser9"], 1, r"unknown user 'nosuchuser9'"),
    ("plusu1", ["plus_reserve", "-s", "2020-01-01T00:00", "-D", "1h", "-n", "1"], 1, r"end time is in the past|start time is in the past"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "1s", "-n", "1"], 1, r"DURATION_OFFSET"),
    ("plusu3", ["plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1"], 1, r"plusu3 may not create.*arusers"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1", "-he", "maybe"], 2, r"-he: expected y\[es\] or n\[o\], got 'maybe'"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1", "-m", "bx"], 2, r"-m: invalid mail options 'bx'"),
    ("plusu1", ["plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1", "-M", "a b@c"], 2, r"-M: invalid mail address 'a b@c'"),
    ("plusu1", ["plus_status", "-r", "99999"], 1, r"AR 99999 does not exist"),
    ("plusu1", ["plus_status", "-r", "abc"], 2, r"invalid reservation id 'abc'"),
    ("plusu1", ["plus_status", "-ne", "-1"], 2, r"-ne: numShowExpired must be at least 0, got -1"),
    ("plusu1", ["plus_cancel"], 2, r"give -r rsvID or -o owner"),
    ("plusu1", ["plus_cancel", "-T", "-o", "plusu1"], 2, r"-T cannot be used with -o"),
    ("plusu2", ["plus_cancel", "-r", "{id}"], 1, r"AR {id} belongs to plusu1; only its owner or a manager"),
    ("plusu2", ["plus_cancel", "-o", "plusu1"], 1, r"only a manager may cancel the ARs of another user"),
    ("plusu2", ["plus_destroy", "-r", "{id}"], 1, r"belongs to plusu1"),
    ("plusu2", ["plus_modify", "-r", "{id}", "-D", "2h"], 1, r"belongs to plusu1"),
    ("plusu1", ["plus_modify", "-r", "{id}"], 2, r"nothing to change"),
    ("plusu1", ["plus_modify", "-r", "{id}", "-n", "99"], 1, r"requested nodes"),
    ("plusu1", ["plus_availnodes", "-s", "now+2h", "-e", "now+1h"], 2, r"end time must be later"),
    ("plusu1", ["plus_availnodes", "-s", "now+2h"], 2, r"required: -e"),
    ("plusu1", ["plus_commit", "-r", "{id}"], 1, r"no operation waiting"),
    ("plusu1", ["plus_abort"], 2, r"required: -r"),
    ("plusu1", ["plus_schedkill"], 1, r"only the owner of plus_scheduler or a manager"),
    ("plusu1", ["plus_account", "-f", "/nonexistent/reporting"], 1, r"cannot read /nonexistent/reporting"),
]


@pytest.mark.parametrize("user, argv, status, message", BAD_INPUT,
                         ids=[" ".join(case[1])[:60] for case in BAD_INPUT])
def test_bad_input_is_refused_with_one_clear_line(daemon, user, argv, status, message):
    ar_id = daemon.reserve("plusu1", "-s", "now+3h", "-D", "1h", "-n", "1")["id"]
    before = daemon.status("-ne", "100")
    argv = [a.replace("{id}", str(ar_id)) for a in argv]
    result = daemon.run(user, *argv)
    assert result.returncode == status, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(argv[0] + ": ")
    assert re.search(message.replace("{id}", str(ar_id)), lines[0]), lines[0]
    after = daemon.status("-ne", "100")
    refusals = [view.pop("refusal") for view in after]
    for view in before:
        view.pop("refusal")
    assert after == before
    if result.returncode == 1 and argv[0] == "plus_modify" and user == "plusu1":
        assert refusals == [{"operation": "modify", "reason": lines[0].split(": ", 1)[1],
                             "time": refusals[0]["time"]}]
    else:
        assert refusals == [None] * len(after)


def test_identity_comes_from_peer_credentials(daemon):
    spoofed = daemon.run("plusu1", "plus_reserve", "--json", "-s", "now+1h", "-D", "1h", "-n", "1",
                         env={"USER": "root", "LOGNAME": "root", "SUDO_USER": "root"})
    assert spoofed.returncode == 0, spoofed.stderr
    [view] = daemon.status()
    assert view["owner"] == "plusu1" and view["group"] == "plusu1"
    assert daemon.run("plusu2", "plus_cancel", "-r", str(view["id"])).returncode == 1
    daemon.ok("plusmgr", "plus_cancel", "-o", "plusu1")
    assert daemon.status("-ne", "1")[0]["state"] == "d"


def test_schedkill_by_the_owner_stops_the_daemon(daemon):
    daemon.ok("plusmgr", "plus_schedkill")
    daemon.process.wait(timeout=15)
    assert not daemon.socket.exists()
    result = daemon.run("plusu1", "plus_status")
    assert result.returncode == 3 and "cannot reach plus_scheduler" in result.stderr


def test_max_advance_reservations_exits_25():
    daemon = Daemon("max_advance_reservations: 1\n").start()
    try:
        daemon.ok("plusu1", "plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1")
        result = daemon.run("plusu1", "plus_reserve", "-s", "now+3h", "-D", "1h", "-n", "1")
        assert result.returncode == 25
        assert "max_advance_reservations (1)" in result.stderr
    finally:
        daemon.cleanup()


def test_windows_open_and_close_on_time(daemon):
    ar = daemon.reserve("plusu1", "-s", "now+5s", "-D", "3s", "-n", "1")
    ar_id = ar["id"]
    assert ar["state"] == "w"          # as granted: a later plus_status may find it started
    wait_for(lambda: daemon.status("-r", str(ar_id))[0]["state"] == "r")
    wait_for(lambda: daemon.status("-r", str(ar_id))[0]["state"] == "x")
    account = daemon.ok("plusu1", "plus_account", "-l", "-o")
    assert f"{ar_id:>7} plusu1" in account and "plusu1" in account.split("OWNER")[1]


def test_uncommitted_operations_are_aborted_after_the_timeout():
    daemon = Daemon("commit_timeout: 2\n").start()
    try:
        ar_id = granted_id(daemon.ok("plusu1", "plus_reserve", "-T", "-s", "now+1h", "-D", "1h", "-n", "5"))
        wait_for(lambda: daemon.run("root", "plus_status", "-r", str(ar_id)).returncode == 1)
        daemon.ok("plusu2", "plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "5")
    finally:
        daemon.cleanup()


def test_kill9_and_restart_loses_nothing_and_catches_up(daemon):
    short = daemon.reserve("plusu1", "-s", "now+1s", "-D", "2s", "-n", "1")["id"]
    later = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "2")["id"]
    pending = granted_id(daemon.ok("plusu2", "plus_reserve", "-T", "-s", "now+2h", "-D", "1h", "-n", "1"))
    daemon.kill9()
    time.sleep(3.5)
    daemon.start()
    states = {v["id"]: v["state"] for v in daemon.status("-ne", "10")}
    assert states == {short: "x", later: "w", pending: "p"}
    daemon.ok("plusu2", "plus_commit", "-r", str(pending))
    assert daemon.status("-r", str(pending))[0]["state"] == "w"


def test_a_second_daemon_on_the_same_state_refuses_to_start(daemon):
    second = daemon.run("root", "plus_scheduler")
    assert second.returncode == 1 and "already running" in second.stderr


def test_malformed_configuration_stops_the_daemon_naming_the_key():
    daemon = Daemon("max_expired: many\n")
    try:
        result = daemon.run("root", "plus_scheduler")
        assert result.returncode == 1
        assert "max_expired: expected a whole number" in result.stderr
    finally:
        daemon.cleanup()


def test_scheduler_options():
    daemon = Daemon()
    try:
        bad = daemon.run("root", "plus_scheduler", "-t", "nosuch")
        assert bad.returncode == 1 and "unknown backend 'nosuch'" in bad.stderr
        bad = daemon.run("root", "plus_scheduler", "-a", "Fastest")
        assert bad.returncode == 1 and "unknown sort key 'Fastest'" in bad.stderr
        store = daemon.dir / "elsewhere" / "rsv.db"
        daemon.start("-t", "native", "-a", "LargestPhysicalMemory", "-r", str(store), "-ne", "1",
                     "-sgeq", "big.q")
        assert store.exists()
        out = daemon.ok("plusu1", "plus_availnodes", "-s", "now+1h", "-e", "now+2h")
        assert out.splitlines()[1:] == ["big"]
        for _ in range(2):
            ar_id = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1")["id"]
            daemon.ok("plusu1", "plus_cancel", "-r", str(ar_id))
        wait_for(lambda: len(daemon.status("-ne", "10")) == 1)
    finally:
        daemon.cleanup()


def test_misspelt_section_is_refused():
    daemon = Daemon("polices: {max: 1}\n")
    try:
        result = daemon.run("root", "plus_scheduler")
        assert result.returncode == 1
        assert "unknown setting 'polices'" in result.stderr and "native" in result.stderr
    finally:
        daemon.cleanup()
