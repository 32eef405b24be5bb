"""SIGHUP re-reads plus.yaml in a running plus_scheduler: what can change
live changes at once, what cannot is named in the log, and a file that
cannot be used leaves the daemon and its configuration as they were."""

from __future__ import annotations

import time

import pytest

from daemon_harness import Daemon

RESERVE = ("plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1")


def wait_for(condition, what: str, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while not condition():
        if time.time() > deadline:
            raise AssertionError(f"not reached in {timeout} s: {what}")
        time.sleep(0.05)


@pytest.fixture
def limited():
    daemon = Daemon("max_advance_reservations: 1\n").start()
    yield daemon
    daemon.cleanup()


def test_max_advance_reservations_changes_at_once(limited):
    text = limited.conf.read_text()
    limited.ok("plusu1", *RESERVE)
    assert limited.run("plusu1", *RESERVE).returncode == 25
    new = limited.reread(text.replace("max_advance_reservations: 1", "max_advance_reservations: 2"),
                         "re-read; in effect now")
    assert "max_advance_reservations 1 -> 2" in new
    limited.ok("plusu1", *RESERVE)
    refused = limited.run("plusu1", *RESERVE)
    assert refused.returncode == 25 and "max_advance_reservations (2)" in refused.stderr


@pytest.mark.parametrize("broken, named", [
    ("max_advance_reservations: [1\n", "not valid YAML"),
    ("max_advance_reservations: -3\n", "max_advance_reservations: expected a whole number"),
    ("max_advance_reservation: 5\n", "unknown setting 'max_advance_reservation'"),
    ("policies: {cap: {type: limits, max_duration: soon}}\n", "policies.cap.max_duration"),
])
def test_a_broken_file_keeps_the_daemon_and_the_running_limit(limited, broken, named):
    text = limited.conf.read_text()
    limited.ok("plusu1", *RESERVE)
    new = limited.reread(text.replace("max_advance_reservations: 1\n", broken), "not re-read")
    line = next(line for line in new.splitlines() if "not re-read" in line)
    assert named in line and "the running configuration stays" in line
    refused = limited.run("plusu1", *RESERVE)
    assert refused.returncode == 25 and "max_advance_reservations (1)" in refused.stderr


def test_keys_built_at_the_start_are_named_and_wait_for_a_restart(limited):
    text = limited.conf.read_text()
    new = limited.reread(text + "request_timeout: 3\nlog_keep: 2\nnative: {cluster: cluster.yaml}\n",
                         "in effect only when plus_scheduler restarts")
    line = next(line for line in new.splitlines() if "restarts" in line)
    assert "request_timeout, log_keep, native" in line
    assert "re-read; in effect now" not in new


def test_a_policy_changes_at_once():
    daemon = Daemon("policies: {cap: {type: limits, max_duration: 2h}}\n").start()
    try:
        daemon.ok("plusu1", *RESERVE)
        text = daemon.conf.read_text()
        new = daemon.reread(text.replace("max_duration: 2h", "max_duration: 30m"),
                            "re-read; in effect now")
        assert "policies: section" in new
        refused = daemon.run("plusu1", *RESERVE)
        assert refused.returncode != 0 and "policy cap" in refused.stderr
    finally:
        daemon.cleanup()


def restarted(daemon: Daemon) -> Daemon:
    """The daemon stopped and started again: its first pass, done before it
    serves, has timed every stored AR by the running configuration."""
    daemon.stop()
    return daemon.start()


def test_a_shorter_expiry_forgets_ended_ars_at_once():
    daemon = Daemon("expiry: 86400\n").start()
    try:
        ar_id = daemon.reserve("plusu1", *RESERVE[1:])["id"]
        daemon.ok("plusu1", "plus_cancel", "-r", str(ar_id))
        restarted(daemon)
        assert daemon.run("root", "plus_status", "-r", str(ar_id)).returncode == 0
        text = daemon.conf.read_text()
        daemon.reread(text.replace("expiry: 86400", "expiry: 1"), "expiry 86400 -> 1")
        wait_for(lambda: daemon.run("root", "plus_status", "-r", str(ar_id)).returncode == 1,
                 f"cancelled AR {ar_id} forgotten by the new expiry")
    finally:
        daemon.cleanup()


def test_a_shorter_commit_timeout_aborts_a_waiting_operation_on_time():
    daemon = Daemon("commit_timeout: 3600\n").start()
    try:
        ar_id = daemon.reserve("plusu1", "-T", *RESERVE[1:])["id"]
        restarted(daemon)
        text = daemon.conf.read_text()
        daemon.reread(text.replace("commit_timeout: 3600", "commit_timeout: 1"),
                      "commit_timeout 3600 -> 1")
        wait_for(lambda: daemon.run("root", "plus_status", "-r", str(ar_id)).returncode == 1,
                 f"AR {ar_id} aborted by the new commit_timeout")
    finally:
        daemon.cleanup()


def test_each_key_is_live_or_waits_for_a_restart(tmp_path):
    """Which keys a re-read changes at once: those read at each request."""
    from overlay.daemon import config, reconfigure
    before, after = tmp_path / "before.yaml", tmp_path / "after.yaml"
    before.write_text("http: {address: 'off'}\nnative: {local_host: false}\n")
    after.write_text("http: {address: '127.0.0.1:7000', trusted_principals: [portal]}\n"
                     "native: {local_host: true}\npolicies: {cap: {type: limits}}\n"
                     "managers: [root, plusmgr]\nnode_order: [LowestLoadAverage]\n")
    running, read = config.load(str(before)), config.load(str(after))
    changes = reconfigure.compare(running, read)
    assert [key for key, _, _ in changes.live] == ["managers", "http.trusted_principals"]
    assert changes.sections == ("policies",)
    assert changes.restart == ("node_order", "http.address", "native")
    merged = reconfigure.merged(running, read)
    assert merged.managers == ["root", "plusmgr"] and merged.http.address == "off"
    assert merged.sections == {"policies": {"cap": {"type": "limits"}},
                               "native": {"local_host": False}}
