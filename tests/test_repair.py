"""Self-repair (overlay/usecases/repair.py): an AR whose node goes down
gets a free one in its place, before its window (-repair before, the
default) or during it too (always), recorded as a modify and resources
satisfied, announced by mail (-m a) and the reservation.repaired event.
A native cluster edited by hand as an administrator marks a node dead, a
manager and its lifecycle with a clock moved by hand, a real SMTP server."""

from __future__ import annotations

import json
import os

import pytest

from overlay.language.model import Request, State
from overlay.language.request import RequestError
from overlay.persistence.events import EventLog
from overlay.usecases import manager as manager_module
from overlay.wire import codec
from test_ar_instance_states import ar_log
from test_ar_instance_states import env as instance_env  # noqa: F401 (a fixture)
from test_mail import ALICE, HOUR, T0, make_env, smtp  # noqa: F401 (fixtures)

NODES = ("n01", "n02", "n03")


class Cluster:
    """The cluster file, with the nodes named dead; each version a second
    later than the last, so the backend sees every one."""

    def __init__(self, env) -> None:
        self.env = env

    def set(self, *dead: str) -> None:
        path = self.env.cluster_file
        later = path.stat().st_mtime_ns + 1_000_000_000
        path.write_text("nodes:\n" + "".join(
            f"  - {{name: {name}, slots: 2, alive: {str(name not in dead).lower()}}}\n"
            for name in NODES))
        os.utime(path, ns=(later, later))


@pytest.fixture
def env(instance_env):  # noqa: F811
    """test_ar_instance_states' manager and mail, on three nodes any of which may die."""
    instance_env.cluster = Cluster(instance_env)
    instance_env.cluster.set()
    instance_env.tick_at(T0)
    return instance_env


def reserve(env, nodes: int = 2, start: int = T0 + HOUR, **extra):
    return env.manager.reserve(ALICE, Request(start=start, end=start + HOUR, nodes=nodes,
                                              mail_options="a", **extra))


def events(env, ar_id: int) -> list[tuple[str, dict]]:
    return [(event.type, json.loads(event.data)) for event in EventLog(env.store).after(0, 100)
            if event.ar_id == ar_id]


def test_a_node_down_before_the_window_is_replaced_in_the_same_pass(env, smtp):  # noqa: F811
    ar = reserve(env)
    assert ar.node_names == ["n01", "n02"]
    env.cluster.set("n02")
    env.tick_at(T0 + 10)
    repaired = env.manager.ars[ar.id]
    assert (repaired.state, repaired.message) == (State.WAITING, "")
    assert repaired.node_names == ["n01", "n03"]
    assert env.store.get(ar.id).node_names == ["n01", "n03"]
    assert ar_log(env, ar.id) == ["W:RESOURCES UNSATISFIED:AR resources unsatisfied",
                                  "w:MODIFIED:AR modified",
                                  "w:RESOURCES SATISFIED:AR resources satisfied"]
    told = events(env, ar.id)
    assert [kind for kind, _ in told] == ["reservation.granted", "reservation.error",
                                         "reservation.changed", "reservation.repaired"]
    assert told[-1][1]["replaced"] == {"n02": "n03"}
    assert told[-1][1]["reservation"]["nodes"] == ["n01", "n03"]
    warned, mail = smtp.mails(2)          # -m a: told it broke, then that it was repaired
    assert warned["Subject"] == f"Advance Reservation {ar.id} (none) Warning"
    assert mail["Subject"] == f"Advance Reservation {ar.id} (none) Repaired"
    assert "n02 replaced by n03" in mail.get_payload(decode=True).decode()
    # the enforcer moved the native window: the scheduler holds n03, not n02
    window = env.manager.backend.scheduler.windows.get(ar.id)
    assert sorted(window.slots) == ["n01", "n03"]
    env.tick_at(T0 + 20)                       # healthy on its new nodes: nothing more
    assert env.manager.ars[ar.id].state == State.WAITING
    assert len(ar_log(env, ar.id)) == 3


def test_repair_none_keeps_the_warning_as_before(env, smtp):  # noqa: F811
    ar = reserve(env, repair="none")
    env.cluster.set("n02")
    env.tick_at(T0 + 10)
    kept = env.manager.ars[ar.id]
    assert (kept.state, kept.message) == (State.WARNING, "reserved host(s) down: n02")
    assert kept.node_names == ["n01", "n02"]
    env.cluster.set()
    env.tick_at(T0 + 20)                       # back: satisfied again, on the same nodes
    assert env.manager.ars[ar.id].state == State.WAITING
    assert ar_log(env, ar.id) == ["W:RESOURCES UNSATISFIED:AR resources unsatisfied",
                                  "w:RESOURCES SATISFIED:AR resources satisfied"]


@pytest.mark.parametrize("mode, state, nodes", [
    ("before", State.ERROR, ["n01", "n02"]),
    ("always", State.RUNNING, ["n01", "n03"])])
def test_during_the_window_only_always_repairs(env, smtp, mode, state, nodes):  # noqa: F811
    ar = reserve(env, repair=mode)
    env.tick_at(T0 + HOUR + 10)
    assert env.manager.ars[ar.id].state == State.RUNNING
    env.cluster.set("n02")
    env.tick_at(T0 + HOUR + 20)
    now = env.manager.ars[ar.id]
    assert (now.state, now.node_names) == (state, nodes)
    if mode == "always":
        assert ar_log(env, ar.id)[-3:] == ["E:RESOURCES UNSATISFIED:AR resources unsatisfied",
                                           "r:MODIFIED:AR modified",
                                           "r:RESOURCES SATISFIED:AR resources satisfied"]
        subjects = [mail["Subject"] for mail in smtp.mails(2)]
        assert subjects[-1].endswith("Repaired")


def test_no_free_node_leaves_w_saying_so_and_a_node_freed_later_repairs(env, smtp, monkeypatch):  # noqa: F811
    ar = reserve(env)
    other = reserve(env, nodes=1)
    assert other.node_names == ["n03"]
    tries = []
    real = manager_module.Manager.repair
    monkeypatch.setattr(manager_module.Manager, "repair",
                        lambda self, *args: tries.append(args[0].id) or real(self, *args))
    env.cluster.set("n02")
    env.tick_at(T0 + 10)
    stuck = env.manager.ars[ar.id]
    assert stuck.state == State.WARNING
    assert stuck.message.startswith("reserved host(s) down: n02; not repaired: no free node "
                                    "matches to replace n02 (only 1 of the 2 requested nodes")
    assert stuck.node_names == ["n01", "n02"]
    for second in range(20, 60, 10):           # nothing changed: not tried again
        env.tick_at(T0 + second)
    assert len(tries) <= 2
    assert env.manager.ars[ar.id].message == stuck.message
    env.manager.cancel(ALICE, other.id, None)  # n03 is free: the next pass repairs
    env.tick_at(T0 + 70)
    repaired = env.manager.ars[ar.id]
    assert (repaired.state, repaired.node_names, repaired.message) == (
        State.WAITING, ["n01", "n03"], "")


def test_a_modify_changes_the_mode_and_bad_modes_are_refused_with_the_accepted_ones(env):
    ar = reserve(env)
    assert ar.request.repair == "before"
    changed = env.manager.modify(ALICE, ar.id, None, None, None, None, None, repair="always")
    assert (changed.request.repair, changed.node_names) == ("always", ar.node_names)
    assert env.store.get(ar.id).request.repair == "always"
    for bad in ("sometimes", "", "x" * 300):
        args = codec.Arguments("reserve", {"start": T0 + HOUR, "end": T0 + 2 * HOUR,
                                           "nodes": 1, "repair": bad}, T0)
        with pytest.raises(RequestError) as refused:
            codec.reserve_request(args)
        assert "accepted: none|before|always" in str(refused.value)
    with pytest.raises(codec.BadArguments):
        codec.reserve_request(codec.Arguments("reserve", {"start": T0 + HOUR, "end": T0 + 7200,
                                                          "nodes": 1, "repair": 1}, T0))
