"""Approval: a policy holds an AR for a manager (state h), with its nodes
held in the store and nothing on the backend; plus_approve grants it,
plus_deny and approval_timeout end it, each told in ar_log, the event
table and mail. A manager built through the plugin manager as
plus_scheduler builds it (policies and mail configured from plus.yaml), a
real SMTP server on loopback and a clock moved by hand."""

from __future__ import annotations

import json
import textwrap

import pytest

from overlay.contract import plugins
from overlay.daemon import config as config_module
from overlay.language.model import (
    InvalidRequest,
    NoCapacity,
    PermissionDenied,
    Request,
    ReservationError,
    State,
    UnknownReservation,
)
from overlay.persistence.events import Event, EventLog
from overlay.persistence.store import Store
from overlay.usecases.lifecycle import Lifecycle
from overlay.usecases.manager import Caller, Manager
from test_mail import close_env, smtp, text  # noqa: F401  (smtp: the fixture)
from test_manager import drained_at_once

T0 = 1_800_000_000
HOUR = 3600
ALICE = Caller(uid=5001, user="alice", groups=("staff",), is_manager=False)
BOB = Caller(uid=5002, user="bob", groups=("staff",), is_manager=False)
BOSS = Caller(uid=5003, user="boss", groups=("staff",), is_manager=True)
CLUSTER = """\
nodes:
  - {name: "n[01-04]", slots: 4}
"""
SETTINGS = """\
state_dir: state
managers: [root, boss]
approval_timeout: 7200
native: {cluster: cluster.yaml, local_host: false}
policies:
  big: {type: approval, max_nodes: 2, max_advance: 30d}
"""


class Env:
    """A manager on four native nodes, the approval policy ``big`` (more
    than 2 nodes, or a start more than 30 days ahead), mail to ``port``."""

    def __init__(self, tmp_path, port: int, settings: str = SETTINGS) -> None:
        (tmp_path / "cluster.yaml").write_text(CLUSTER)
        self.conf = tmp_path / "plus.yaml"
        self.conf.write_text(settings + textwrap.dedent(f"""\
            mail: {{host: 127.0.0.1, port: {port}, sender: plus@cluster.test, timeout: 5}}
            """))
        self.now = T0
        self.start()

    def start(self) -> None:
        config = config_module.load(str(self.conf))
        self.config = config
        self.pm = plugins.plugin_manager()
        claimed = plugins.configure(self.pm, config)
        self.backend = plugins.build_backend(self.pm, "native", config, config.backend_options(),
                                             claimed)
        self.store = Store(config.store_url)
        self.manager = Manager(config, self.store, self.backend, self.pm,
                               drained_at_once(self.store, config), clock=lambda: self.now)
        self.lifecycle = Lifecycle(self.manager, config.reconcile_interval)

    def reserve(self, caller: Caller = ALICE, nodes: int = 3, start: int = T0 + HOUR,
                **extra):
        return self.manager.reserve(caller, Request(start=start, end=start + HOUR, nodes=nodes,
                                                    **extra))

    def tick_at(self, now: int) -> None:
        self.now = now
        self.lifecycle.tick()

    def reporting(self) -> list[list[str]]:
        path = self.config.accounting_path
        with open(path, encoding="utf-8") as handle:
            return [line.rstrip("\n").split(":") for line in handle if not line.startswith("#")]

    def ar_log(self, ar_id: int) -> list[tuple[str, str, str]]:
        """(state, event, message) of the AR's ar_log records."""
        return [(f[5], f[6], ":".join(f[7:])) for f in self.reporting()
                if f[1] == "ar_log" and f[4] == str(ar_id)]

    def told(self, ar_id: int) -> list[Event]:
        return [event for event in EventLog(self.store).after(0, 1000) if event.ar_id == ar_id]

    def events(self, ar_id: int) -> list[str]:
        return [event.type for event in self.told(ar_id)]

    def applied(self) -> set[int]:
        """The ARs the native backend enforces (its scheduler's windows)."""
        self.manager.enforcer.settle()
        return set(self.backend.scheduler.windows)

    def close(self) -> None:
        close_env(self.pm, self.store)


@pytest.fixture
def env(tmp_path, smtp):  # noqa: F811
    made = Env(tmp_path, smtp.port)
    yield made
    made.close()


def test_a_large_request_waits_in_h_with_its_nodes_held_and_managers_asked(env, smtp):  # noqa: F811
    ar = env.reserve(name="big-run")
    assert ar.state is State.AWAITING and ar.state.value == "h"
    assert ar.message == ("awaiting a manager's approval: policy big: 3 nodes is more than "
                          "max_nodes 2")
    assert ar.approval_due == T0 + 7200
    assert len(ar.allocations) == 3
    assert len(env.manager.available_nodes(T0 + HOUR, T0 + 2 * HOUR)) == 1
    with pytest.raises(NoCapacity):
        env.reserve(BOB, nodes=2)
    assert env.applied() == set()
    assert env.ar_log(ar.id) == [("h", "APPROVAL REQUESTED",   # the file's fields take no ':'
                                  "policy big; 3 nodes is more than max_nodes 2")]
    assert env.events(ar.id) == ["reservation.approval_requested"]
    [mail] = smtp.mails(1)
    assert smtp.recipients() == [["root", "boss"]]
    assert mail["Subject"] == f"Advance Reservation {ar.id} (big-run) Awaits approval"
    assert f"approve it: plus_approve {ar.id}" in text(mail)
    assert f"deny it: plus_deny {ar.id} -reason" in text(mail)


def test_small_requests_and_managers_own_are_not_held(env):
    assert env.reserve(nodes=2).state is State.WAITING
    assert env.reserve(BOSS, nodes=2).state is State.WAITING
    far = T0 + 40 * 86400
    assert env.reserve(nodes=1, start=far).message.endswith(
        "a start 40d ahead is further than max_advance 30d")


def test_approve_grants_and_the_backend_enforces_it(env, smtp):  # noqa: F811
    ar = env.reserve(mail_options="n")
    smtp.mails(1)
    env.now = T0 + 60
    env.manager.awaiting(BOSS, [ar.id], "approve")
    approved = env.manager.approve(BOSS, ar.id)
    assert approved.state is State.WAITING and approved.message == ""
    assert approved.approval_due is None
    assert env.applied() == {ar.id}
    assert env.ar_log(ar.id)[-1] == ("w", "APPROVED", "approved by boss")
    assert env.events(ar.id) == ["reservation.approval_requested", "reservation.approved",
                                 "reservation.granted"]
    env.tick_at(ar.start)
    assert env.manager.ars[ar.id].state is State.RUNNING


def test_approved_after_its_start_runs_at_once_and_the_owner_is_told(env, smtp):  # noqa: F811
    ar = env.reserve()
    env.now = ar.start + 10
    approved = env.manager.approve(BOSS, ar.id)
    assert approved.state is State.RUNNING
    assert [e for _, e, _ in env.ar_log(ar.id)] == ["APPROVAL REQUESTED", "APPROVED",
                                                    "START TIME REACHED"]
    mails = smtp.mails(2)
    assert smtp.recipients()[1] == ["alice"]
    assert mails[1]["Subject"].endswith("Approved")
    assert "approved by boss" in text(mails[1])


def test_deny_ends_it_with_the_reason_and_frees_its_nodes(env, smtp):  # noqa: F811
    ar = env.reserve()
    denied = env.manager.deny(BOSS, ar.id, "the machine room is closed that day")
    assert denied.state is State.DELETED
    assert denied.message == "denied by boss: the machine room is closed that day"
    assert env.ar_log(ar.id)[-1] == ("d", "DENIED", denied.message.replace(":", ";"))
    assert env.events(ar.id)[-1] == "reservation.denied"
    assert len(env.manager.available_nodes(T0 + HOUR, T0 + 2 * HOUR)) == 4
    assert env.applied() == set()
    mails = smtp.mails(2)
    assert mails[1]["Subject"].endswith("Denied") and smtp.recipients()[1] == ["alice"]
    assert "the machine room is closed that day" in text(mails[1])


def test_bad_decisions_are_refused_and_store_nothing(env):
    held, granted = env.reserve(), env.reserve(nodes=1)
    revision = env.store.revision()
    with pytest.raises(PermissionDenied, match="only managers may approve advance reservations; "
                                               "alice is not one"):
        env.manager.awaiting(ALICE, [held.id], "approve")
    with pytest.raises(UnknownReservation, match="AR 999 does not exist"):
        env.manager.awaiting(BOSS, [held.id, 999], "approve")
    with pytest.raises(ReservationError, match=rf"AR {granted.id} is not awaiting approval "
                                               r"\(state w: it is granted already\)"):
        env.manager.awaiting(BOSS, [held.id, granted.id], "deny")
    env.manager.deny(BOSS, held.id, "")
    revision = env.store.revision()
    with pytest.raises(ReservationError, match="state d: it was denied or cancelled"):
        env.manager.approve(BOSS, held.id)
    assert env.store.revision() == revision
    assert env.manager.ars[granted.id].state is State.WAITING


def test_an_unanswered_request_lapses_at_its_due_time_kept_across_restarts(env, smtp):  # noqa: F811
    ar = env.reserve(start=T0 + 5 * HOUR)
    env.close()
    env.conf.write_text(env.conf.read_text().replace("approval_timeout: 7200",
                                                     "approval_timeout: 60"))
    env.start()
    assert env.manager.ars[ar.id].approval_due == T0 + 7200   # written once
    assert env.lifecycle.due_times(env.manager.ars[ar.id]) == [T0 + 7200]
    env.tick_at(T0 + 7199)
    assert env.manager.ars[ar.id].state is State.AWAITING
    env.tick_at(T0 + 7200)
    lapsed = env.manager.ars[ar.id]
    assert lapsed.state is State.DELETED
    assert lapsed.message == "lapsed: no manager approved it within approval_timeout (7200 s)"
    assert env.ar_log(ar.id)[-1] == ("d", "DENIED", lapsed.message.replace(":", ";"))
    assert env.events(ar.id)[-1] == "reservation.denied"
    assert smtp.mails(2)[1]["Subject"].endswith("Denied")


def test_a_window_that_ends_unanswered_lapses_at_its_end(env):
    ar = env.reserve(start=T0 + 60)
    env.tick_at(ar.end)
    assert env.manager.ars[ar.id].message == ("lapsed: its window ended before a manager "
                                              "approved it")


def test_changes_that_need_approval_are_refused_unless_a_manager_makes_them(env):
    held, small = env.reserve(start=T0 + 9 * HOUR), env.reserve(nodes=1)
    with pytest.raises(ReservationError, match=f"AR {held.id} awaits a manager's approval and "
                                               "cannot change"):
        env.manager.modify(ALICE, held.id, None, None, None, 1, None)
    with pytest.raises(PermissionDenied, match="3 nodes is more than max_nodes 2: this change "
                                               "needs a manager's approval"):
        env.manager.modify(ALICE, small.id, None, None, None, 3, None)
    assert len(env.manager.ars[small.id].allocations) == 1
    grown = env.manager.modify(BOSS, small.id, None, None, None, 3, None)
    assert grown.state is State.WAITING and len(grown.allocations) == 3
    with pytest.raises(InvalidRequest, match="which -T cannot wait for; reserve without -T"):
        env.manager.reserve(ALICE, Request(start=T0 + 5 * HOUR, end=T0 + 6 * HOUR, nodes=3),
                            transactional=True)


def test_a_ggf_reservation_that_needs_approval_is_refused_not_held(env):
    """SETRES and RESQANDSET answer with a reservation or a refusal: a
    metascheduler would take a held AR for a granted one."""
    request = Request(start=T0 + 5 * HOUR, end=T0 + 6 * HOUR, nodes=3)
    for attempt in (lambda: env.manager.reserve(ALICE, request, holdable=False),
                    lambda: env.manager.reserve_earliest(ALICE, request, T0 + 7 * HOUR,
                                                         holdable=False)):
        with pytest.raises(InvalidRequest, match="max_nodes 2: this AR needs a manager's "
                                                 "approval, which a GGF reservation cannot "
                                                 "wait for"):
            attempt()
    assert env.manager.ars == {} and env.events(1) == []
    assert env.manager.reserve_earliest(ALICE, request, T0 + 7 * HOUR).state is State.AWAITING


def test_the_owner_may_cancel_a_held_request(env):
    ar = env.reserve()
    [cancelled] = env.manager.cancel(ALICE, ar.id, None)
    assert cancelled.state is State.DELETED
    assert env.events(ar.id)[-1] == "reservation.cancelled"


def test_the_policy_section_is_checked():
    from overlay_policies.plugin import build
    with pytest.raises(ValueError, match="policies.big: give max_nodes, max_node_hours or "
                                         "max_advance"):
        build({"big": {"type": "approval"}})
    with pytest.raises(ValueError, match="policies.big.max_nodes"):
        build({"big": {"type": "approval", "max_nodes": -1}})


def test_an_event_tells_why(env):
    ar = env.reserve()
    told = json.loads(env.told(ar.id)[0].data)["reservation"]
    assert (told["state"], told["message"]) == ("h", ar.message)


def test_an_ar_whose_window_ended_unapproved_cannot_be_approved(env):
    ar = env.reserve(start=T0 + 60)
    env.now = ar.end
    revision = env.store.revision()
    with pytest.raises(ReservationError, match="window has ended: it can no longer be approved"):
        env.manager.approve(BOSS, ar.id)
    assert env.store.revision() == revision
