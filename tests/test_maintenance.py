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
