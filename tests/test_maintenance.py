"""Maintenance ARs (plus_reserve --maint, overlay/usecases/maintenance.py):
managers only; granted on busy and down nodes; over other ARs only with
--force, which puts them in W (or E) naming the maintenance AR (ar_log,
event, mail with -m a), until it is gone; bad input refused, nothing
stored. test_repair's manager on a native cluster edited by hand, its
lifecycle on a clock moved by hand, a real SMTP server."""

from __future__ import annotations

import json

import pytest

from overlay.language.model import (
    InvalidRequest,
    NoCapacity,
    PermissionDenied,
    Request,
    State,
)
from overlay.language.request import RequestError
from overlay.persistence.events import EventLog
from overlay.usecases.manager import Caller
from overlay.wire import codec
from test_ar_instance_states import ar_log
from test_ar_instance_states import env as instance_env  # noqa: F401 (a fixture)
from test_mail import ALICE, HOUR, T0, make_env, smtp, text  # noqa: F401 (fixtures)
from test_repair import env  # noqa: F401 (a fixture)
from test_repair_daemon import ar_log as reported_ar_log
from test_repair_daemon import (
    daemon,  # noqa: F401 (a fixture)
    mark_dead,
    wait_for,
)

ROOT = Caller(uid=0, user="root", groups=("root",), is_manager=True)


def maint(env, nodes: str = "n01", count: int = 1, force: bool = False,  # noqa: F811
          caller: Caller = ROOT, **extra):
    request = Request(start=T0 + HOUR, end=T0 + 2 * HOUR, nodes=count, maint=True,
                      attributes=(("h", nodes),), name="kernel", **extra)
    return env.manager.reserve(caller, request, force=force)


def events(env, ar_id: int) -> list[tuple[str, dict]]:  # noqa: F811
    return [(event.type, json.loads(event.data)) for event in EventLog(env.store).after(0, 100)
            if event.ar_id == ar_id]


def test_only_managers_reserve_for_maintenance_and_force_needs_maint(env):  # noqa: F811
    with pytest.raises(PermissionDenied, match="--maint: alice is not a manager"):
        maint(env, caller=ALICE)
    with pytest.raises(InvalidRequest, match="--force: only a maintenance AR"):
        env.manager.reserve(ROOT, Request(start=T0 + HOUR, end=T0 + 2 * HOUR, nodes=1),
                            force=True)
    with pytest.raises(InvalidRequest, match="cannot wait for plus_commit"):
        env.manager.reserve(ROOT, Request(start=T0 + HOUR, end=T0 + 2 * HOUR, nodes=1,
                                          maint=True), transactional=True, force=True)
    with pytest.raises(RequestError, match="--maint reserves whole nodes"):
        codec.reserve_request(codec.Arguments("reserve", {
            "start": T0 + HOUR, "end": T0 + 2 * HOUR, "nodes": 0, "maint": True,
            "pe_range": [[1, 1]], "alloc_rule": "1"}, T0))
    assert env.store.load_all() == [] and env.manager.ars == {}


def test_a_down_node_is_granted_for_maintenance_and_stays_w(env):  # noqa: F811
    env.cluster.set("n02")
    env.tick_at(T0 + 1)
    with pytest.raises(NoCapacity):      # an ordinary AR never gets a node down
        env.manager.reserve(ROOT, Request(start=T0 + HOUR, end=T0 + 2 * HOUR, nodes=1,
                                          attributes=(("h", "n02"),)))
    ar = maint(env, "n02")
    assert ar.node_names == ["n02"] and ar.state == State.WAITING and ar.request.maint
    env.tick_at(T0 + 2)
    env.tick_at(T0 + HOUR + 1)
    assert env.manager.ars[ar.id].state == State.RUNNING
    assert env.store.get(ar.id).request.maint


def test_an_overlap_is_refused_naming_the_ars_and_force_puts_them_in_w(env, smtp):  # noqa: F811
    env.cluster.set()
    env.tick_at(T0 + 1)
    other = env.manager.reserve(ALICE, Request(start=T0 + HOUR, end=T0 + 3 * HOUR, nodes=3,
                                               mail_options="a", repair="none"))
    with pytest.raises(NoCapacity, match=rf"held by AR\(s\) {other.id} over the window; "
                                         "--force takes them"):
        maint(env, "n01")
    assert [ar.id for ar in env.store.load_all()] == [other.id]
    made = maint(env, "n01", force=True)
    degraded = env.manager.ars[other.id]
    message = f"reserved node(s) n01 taken for maintenance by AR {made.id} (kernel)"
    assert (degraded.state, degraded.message) == (State.WARNING, message)
    assert env.store.get(other.id).state == State.WARNING
    assert ar_log(env, other.id)[-1] == "W:RESOURCES UNSATISFIED:AR resources unsatisfied"
    told = events(env, other.id)
    assert told[-1][0] == "reservation.error"
    assert told[-1][1]["reservation"]["message"] == message
    warned, = smtp.mails(1)
    assert warned["Subject"] == f"Advance Reservation {other.id} (none) Warning"
    assert f"AR {made.id}" in text(warned)
    env.tick_at(T0 + 10)                  # the pass keeps it so
    assert env.manager.ars[other.id].message == message
    env.tick_at(T0 + HOUR + 1)            # its start: E, still naming it
    assert (env.manager.ars[other.id].state, env.manager.ars[other.id].message) == (
        State.ERROR, message)
    env.manager.cancel(ROOT, made.id, None)
    env.tick_at(T0 + HOUR + 2)            # the maintenance gone: satisfied again
    assert (env.manager.ars[other.id].state, env.manager.ars[other.id].message) == (
        State.RUNNING, "")


def test_a_forced_ar_that_may_be_repaired_moves_to_a_free_node(env):  # noqa: F811
    env.cluster.set()
    env.tick_at(T0 + 1)
    other = env.manager.reserve(ALICE, Request(start=T0 + HOUR, end=T0 + 3 * HOUR, nodes=1))
    assert other.node_names == ["n01"]
    maint(env, "n01", force=True)
    env.tick_at(T0 + 10)
    moved = env.manager.ars[other.id]
    assert (moved.state, moved.message, moved.node_names) == (State.WAITING, "", ["n02"])


def test_end_to_end_on_native_with_the_installed_commands(daemon):  # noqa: F811
    """A real plus_scheduler: refusals name what was wrong and store
    nothing; a manager's --maint on a node down; --force puts a user's AR
    in W naming the maintenance AR, in plus_status and the reporting file."""
    mark_dead(daemon, "n03")
    wait_for(lambda: "n03" not in daemon.ok("plusu1", "plus_availnodes", "-s", "now+1h",
                                            "-e", "now+2h"), "n03 seen down")
    for user, argv, status, why in (
            ("plusu1", ["--maint"], 1, "--maint: plusu1 is not a manager"),
            ("root", ["--force"], 2, "--force: only a maintenance AR (--maint)"),
            ("root", ["--maint", "--clear-notice", "0"], 2, "--clear-notice: the lead 0 s is out"),
            ("root", ["--maint", "--force", "-T"], 1, "cannot wait for plus_commit")):
        refused = daemon.run(user, "plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1", *argv)
        assert (refused.returncode, why in refused.stderr) == (status, True), refused.stderr
    assert daemon.status() == []
    down = daemon.reserve("root", "--maint", "-s", "now+1h", "-D", "1h", "-n", "1",
                          "-l", "h=n03", "-N", "psu")
    assert (down["state"], [a["node"] for a in down["allocations"]]) == ("w", ["n03"])
    user = daemon.reserve("plusu1", "-s", "now+1h", "-D", "2h", "-n", "2", "-repair", "none")
    overlap = daemon.run("root", "plus_reserve", "--maint", "-s", "now+1h", "-D", "1h",
                         "-n", "1", "-l", "h=n01")
    assert overlap.returncode == 1 and f"held by AR(s) {user['id']}" in overlap.stderr
    forced = daemon.reserve("root", "--maint", "--force", "-s", "now+1h", "-D", "1h", "-n", "1",
                            "-l", "h=n01", "--clear-notice", "30m")
    [shown] = daemon.status("-r", str(user["id"]))
    assert shown["state"] == "W"
    assert shown["message"] == f"reserved node(s) n01 taken for maintenance by AR {forced['id']}"
    wait_for(lambda: "W:RESOURCES UNSATISFIED:AR resources unsatisfied"
             in reported_ar_log(daemon, user["id"]), "the ar_log record")
    detail = daemon.ok("plusu1", "plus_status", "-r", str(forced["id"]))
    assert "maintenance:                yes" in detail
    assert "clear_notice:               0:30:0\n" in detail
    assert "[M]psu" in daemon.ok("plusu1", "plus_status")
