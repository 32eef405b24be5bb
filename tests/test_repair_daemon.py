"""Self-repair end to end on the native backend: a real plus_scheduler, the
installed commands run as real users, and a node of the cluster made dead
as an administrator marks it in the cluster file."""

from __future__ import annotations

import os
import time

import pytest

from daemon_harness import Daemon

NODES = ("n01", "n02", "n03")


def cluster(*dead: str) -> str:
    return "nodes:\n" + "".join(
        f"  - {{name: {name}, slots: 4, queues: [all.q], alive: {str(name not in dead).lower()}}}\n"
        for name in NODES)


@pytest.fixture
def daemon():
    made = Daemon(cluster=cluster())
    made.start()
    yield made
    made.cleanup()


def mark_dead(daemon: Daemon, *dead: str) -> None:
    """The cluster file with ``dead`` marked down, a second newer than before."""
    path = daemon.dir / "cluster.yaml"
    later = path.stat().st_mtime_ns + 1_000_000_000
    path.write_text(cluster(*dead))
    os.utime(path, ns=(later, later))


def wait_for(condition, what: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.1)
    return found


def ar_log(daemon: Daemon, ar_id: int) -> list[str]:
    path = daemon.dir / "state" / "reporting"
    lines = path.read_text().splitlines() if path.exists() else []
    return [":".join(line.split(":")[5:]) for line in lines
            if ":ar_log:" in line and line.split(":")[4] == str(ar_id)]


def test_a_node_down_before_the_window_is_replaced_and_said_so(daemon):
    made = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "2")
    assert [a["node"] for a in made["allocations"]] == ["n01", "n02"]
    mark_dead(daemon, "n02")
    repaired = wait_for(lambda: [ar for ar in daemon.status("-r", str(made["id"]))
                                 if [a["node"] for a in ar["allocations"]] == ["n01", "n03"]],
                        "AR moved to n03")[0]
    assert (repaired["state"], repaired["message"]) == ("w", "")
    wait_for(lambda: ar_log(daemon, made["id"]) == [
        "W:RESOURCES UNSATISFIED:AR resources unsatisfied", "w:MODIFIED:AR modified",
        "w:RESOURCES SATISFIED:AR resources satisfied"], "the ar_log records")
    detail = daemon.ok("plusu1", "plus_status", "-r", str(made["id"]))
    assert "reserved_nodes:             n01,n03" in detail
    assert "repair:                     before" in detail
    assert "repaired: n02 by n03" in daemon.log.read_text()


def test_repair_none_waits_for_its_node_and_no_free_node_leaves_w_saying_so(daemon):
    stuck = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "2")
    blocker = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1")
    kept = daemon.reserve("plusu1", "-s", "now+3h", "-D", "1h", "-n", "1", "-l", "h=n02",
                          "-repair", "none")
    assert [a["node"] for a in stuck["allocations"]] == ["n01", "n02"]
    assert [a["node"] for a in blocker["allocations"]] == ["n03"]
    mark_dead(daemon, "n02")

    def shown() -> dict[int, dict]:
        return {ar["id"]: ar for ar in daemon.status()}
    now = wait_for(lambda: (found := shown())[stuck["id"]]["state"] == "W" and
                   found[kept["id"]]["state"] == "W" and found, "both ARs in W")
    assert now[kept["id"]]["message"] == "reserved host(s) down: n02"
    assert now[stuck["id"]]["message"].startswith(
        "reserved host(s) down: n02; not repaired: no free node matches to replace n02 (")
    daemon.ok("plusu1", "plus_cancel", "-r", str(blocker["id"]))    # n03 is free now
    wait_for(lambda: [a["node"] for a in shown()[stuck["id"]]["allocations"]] == ["n01", "n03"],
             "repaired onto n03 once it was free")
    assert shown()[stuck["id"]]["state"] == "w"
    assert [a["node"] for a in shown()[kept["id"]]["allocations"]] == ["n02"]
    assert shown()[kept["id"]]["state"] == "W"
    mark_dead(daemon)                           # n02 back: the AR of none is satisfied
    wait_for(lambda: shown()[kept["id"]]["state"] == "w", "n02 back")


def test_bad_modes_are_refused_naming_the_accepted_ones_and_store_nothing(daemon):
    refused = daemon.run("plusu1", "plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1",
                         "-repair", "sometimes")
    assert refused.returncode == 2
    assert "-repair: invalid repair mode 'sometimes'; accepted: none|before|always" \
        in refused.stderr
    assert daemon.status() == []
    made = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1")
    refused = daemon.run("plusu1", "plus_modify", "-r", str(made["id"]), "-repair", "never")
    assert refused.returncode == 2 and "accepted: none|before|always" in refused.stderr
    daemon.ok("plusu1", "plus_modify", "-r", str(made["id"]), "-repair", "always")
    assert daemon.status("-r", str(made["id"]))[0]["request"]["repair"] == "always"
