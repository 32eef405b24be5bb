"""The use cases in-process, with a clock the tests move by hand."""

from __future__ import annotations

import json
import textwrap
from typing import Callable

import pytest

from overlay.contract import plugins
from overlay.contract.hookspecs import hookimpl
from overlay.daemon import config as config_module
from overlay.events.catalog import ENDING_SOON
from overlay.language.model import (
    LimitExceeded,
    Operation,
    PermissionDenied,
    Request,
    ReservationError,
    State,
)
from overlay.language.request import RequestError
from overlay.persistence.events import EventLog
from overlay.persistence.outbox import Outbox
from overlay.persistence.store import Store
from overlay.reporting.drain import ReportingDrain
from overlay.usecases.lifecycle import Lifecycle
from overlay.usecases.manager import Caller, Manager
from overlay_native.simulation.simhosts import Clock

T0 = 1_800_000_000
HOUR = 3600

ALICE = Caller(uid=5001, user="alice", groups=("staff",), is_manager=False)
BOB = Caller(uid=5002, user="bob", groups=("other",), is_manager=False)
ADMIN = Caller(uid=0, user="root", groups=("root",), is_manager=True)

CLUSTER = """\
nodes:
  - {name: "n[01-04]", slots: 4, memory: 16G, arch: lx-amd64, queues: [all.q]}
  - {name: big, slots: 16, memory: 256G, ncpus: 32, arch: lx-amd64, queues: [all.q, big.q],
     properties: {gpu: "yes"}}
"""


def drained_at_once(store: Store, config) -> Callable[[], int]:
    """What a manager tells of its records in these tests: they are drained
    into the reporting file at once (the daemon's drain runs on a thread)."""
    return ReportingDrain(Outbox(store.engine, store.url), config.accounting_path).drain


class Env:
    """A manager on a five-node embedded cluster, a SQLite store and a fake clock."""

    def __init__(self, tmp_path, settings: str = "", cluster: str = CLUSTER) -> None:
        self.dir = tmp_path
        self.cluster_file = tmp_path / "cluster.yaml"
        self.cluster_file.write_text(cluster)
        self.conf = tmp_path / "plus.yaml"
        self.conf.write_text(textwrap.dedent("""\
            state_dir: state
            duration_offset: 60
            commit_timeout: 300
            expiry: 3600
            native: {cluster: cluster.yaml, local_host: false}
            """) + settings)
        self.config = config_module.load(str(self.conf))
        self.clock = Clock(T0)
        self.pm = plugins.plugin_manager()
        self.claimed = plugins.configure(self.pm, self.config)
        self.manager = self.restart()

    def restart(self) -> Manager:
        """A new manager on the same store, as after a daemon restart."""
        self.backend = plugins.build_backend(self.pm, "native", self.config,
                                             self.config.backend_options(), self.claimed)
        self.store = Store(self.config.store_url)
        self.manager = Manager(self.config, self.store, self.backend, self.pm,
                               drained_at_once(self.store, self.config), clock=self.clock)
        self.lifecycle = Lifecycle(self.manager, self.config.reconcile_interval)
        return self.manager

    def request(self, start: int = T0 + HOUR, hours: float = 1, nodes: int = 1, **extra) -> Request:
        return Request(start=start, end=start + int(hours * HOUR), nodes=nodes, **extra)

    def reserve(self, caller: Caller = ALICE, transactional: bool = False, **kwargs):
        return self.manager.reserve(caller, self.request(**kwargs), transactional)

    def settle(self) -> None:
        """Make the backend follow the ARs now (the daemon's enforcer thread
        does it after each command)."""
        self.manager.enforcer.settle()

    def stored_ids(self) -> list[int]:
        return [ar.id for ar in Store(self.config.store_url).load_all()]

    def reporting(self) -> str:
        path = self.dir / "state" / "reporting"
        return path.read_text() if path.exists() else ""


def _with_alive(cluster: str, name: str, alive: bool) -> str:
    """The cluster text with node ``name`` (one of n01..n04) split out and marked."""
    others = [n for n in ("n01", "n02", "n03", "n04") if n != name]
    lines = [f'  - {{name: {n}, slots: 4, memory: 16G, queues: [all.q]}}' for n in others]
    lines.append(f'  - {{name: {name}, slots: 4, memory: 16G, queues: [all.q], alive: {str(alive).lower()}}}')
    rest = cluster.split("\n", 2)[2]
    return "nodes:\n" + "\n".join(lines) + "\n" + rest


@pytest.fixture
def env(tmp_path):
    return Env(tmp_path)


# -- reserve ---------------------------------------------------------------------

def test_reserve_grants_whole_nodes_in_name_order(env):
    ar = env.reserve(nodes=2)
    assert ar.state == State.WAITING
    assert ar.node_names == ["big", "n01"]
    assert [a.slots for a in ar.allocations] == [16, 4]
    assert ar.acl == ("alice",)
    assert env.stored_ids() == [ar.id]
    assert "new_ar" in env.reporting() and ":ar_log:" not in env.reporting()   # as 8.1.9
    env.settle()
    assert tuple(env.backend.scheduler.windows[ar.id].slots) == ("big", "n01")


def test_overlapping_reservations_get_other_nodes_and_touching_ones_reuse(env):
    first = env.reserve(nodes=2)
    second = env.reserve(nodes=2, start=T0 + HOUR + 1800)
    assert not set(first.node_names) & set(second.node_names)
    touching = env.reserve(nodes=5, start=T0 + 3 * HOUR)  # starts when the second ends
    assert len(touching.node_names) == 5


def test_too_many_nodes_is_refused_and_nothing_stored(env):
    env.reserve(nodes=3)
    with pytest.raises(ReservationError, match=r"only 2 of the 3 requested nodes"):
        env.reserve(nodes=3)
    assert len(env.stored_ids()) == 1


def test_partial_slots_let_reservations_share_a_node(env):
    env.reserve(nodes=5, slots_per_node=2)
    shared = env.reserve(nodes=5, slots_per_node=2)
    assert sorted(shared.node_names) == ["big", "n01", "n02", "n03", "n04"]
    with pytest.raises(ReservationError):
        env.reserve(nodes=4, slots_per_node=1)  # only big has slots left
    assert env.reserve(nodes=1, slots_per_node=12).node_names == ["big"]


@pytest.mark.parametrize("extra, expected", [
    ({"memory_mb": 100_000}, ["big"]),
    ({"ncpus": 8}, ["big"]),
    ({"attributes": (("gpu", "yes"),)}, ["big"]),
    ({"queues": ("big.q",)}, ["big"]),
    ({"arch": "lx-*"}, ["big", "n01", "n02", "n03", "n04"]),
])
def test_node_filters(env, extra, expected):
    ar = env.reserve(nodes=len(expected), **extra)
    assert sorted(ar.node_names) == expected
    with pytest.raises(ReservationError, match="requested nodes"):
        env.reserve(nodes=len(expected) + 1, start=T0 + 10 * HOUR, **extra)


def test_window_rules(env):
    with pytest.raises(ReservationError, match="in the past"):
        env.reserve(start=T0 - 120)
    with pytest.raises(ReservationError, match="DURATION_OFFSET"):
        env.reserve(hours=60 / HOUR)
    with pytest.raises(ReservationError, match="later than the start"):
        env.manager.reserve(ALICE, Request(start=T0 + 100, end=T0 + 100, nodes=1))
    late = env.reserve(start=T0 - 30)  # within the grace: taken as now
    assert late.start == T0
    assert env.lifecycle.tick() is not None
    assert env.manager.ars[late.id].state == State.RUNNING


def test_unknown_user_in_access_list(env):
    with pytest.raises(ReservationError, match="unknown user 'no_such_user_x'"):
        env.reserve(users=("no_such_user_x",))
    with pytest.raises(ReservationError, match="unknown group 'no_such_group_x'"):
        env.reserve(users=("@no_such_group_x",))
    ar = env.reserve(users=("root", "@root", "alice"))
    assert ar.acl == ("alice", "root", "@root")


def test_max_advance_reservations_exit_status_25(tmp_path):
    env = Env(tmp_path, "max_advance_reservations: 2\n")
    env.reserve()
    second = env.reserve()
    with pytest.raises(LimitExceeded, match=r"max_advance_reservations \(2\)") as refused:
        env.reserve()
    assert refused.value.exit_status == 25
    env.manager.cancel(ALICE, second.id, None)  # finished ARs do not count
    env.reserve()


def test_only_managers_and_arusers_may_reserve(tmp_path):
    env = Env(tmp_path, 'arusers: ["@staff", carol]\n')
    env.reserve(ALICE)
    env.reserve(ADMIN)
    with pytest.raises(PermissionDenied, match="arusers"):
        env.reserve(BOB)
    assert len(env.stored_ids()) == 2


# -- modify ------------------------------------------------------------------------

def test_modify_moves_the_window_and_keeps_its_length(env):
    ar = env.reserve(nodes=2)
    moved = env.manager.modify(ALICE, ar.id, start=T0 + 5 * HOUR, end=None, duration=None,
                               nodes=None, users=None)
    assert (moved.start, moved.end) == (T0 + 5 * HOUR, T0 + 6 * HOUR)
    assert moved.node_names == ar.node_names
    assert env.store.get(ar.id).start == T0 + 5 * HOUR
    assert len(env.reserve(nodes=5).node_names) == 5  # the old window is free again


def test_modify_grows_on_its_own_nodes_first(env):
    ar = env.reserve(nodes=1, start=T0 + HOUR)
    env.reserve(nodes=1, start=T0 + HOUR)
    grown = env.manager.modify(ALICE, ar.id, None, None, 2 * HOUR, 3, ("root",))
    assert grown.node_names[0] == ar.node_names[0]
    assert len(grown.node_names) == 3 and grown.end == T0 + 3 * HOUR
    assert grown.acl == ("alice", "root")


def test_modify_refusals_leave_the_ar_unchanged(env):
    ar = env.reserve(nodes=2)
    other = env.reserve(BOB, nodes=3)
    with pytest.raises(ReservationError, match="only 2 of the 4"):
        env.manager.modify(ALICE, ar.id, None, None, None, 4, None)
    with pytest.raises(RequestError, match="dissonant"):
        env.manager.modify(ALICE, ar.id, T0 + 2 * HOUR, T0 + 3 * HOUR, 2 * HOUR, None, None)
    with pytest.raises(PermissionDenied, match="belongs to bob"):
        env.manager.modify(ALICE, other.id, None, None, 2 * HOUR, None, None)
    with pytest.raises(ReservationError, match="does not exist"):
        env.manager.modify(ALICE, 999, None, None, 2 * HOUR, None, None)
    stored = env.store.get(ar.id)
    assert (stored.start, stored.end, stored.node_names) == (ar.start, ar.end, ar.node_names)


def test_started_ar_keeps_its_start_but_may_be_extended(env):
    ar = env.reserve()
    env.clock.now = ar.start + 10
    env.lifecycle.tick()
    with pytest.raises(ReservationError, match="has started"):
        env.manager.modify(ALICE, ar.id, ar.start + 600, None, None, None, None)
    extended = env.manager.modify(ALICE, ar.id, None, ar.end + HOUR, None, None, None)
    assert extended.end == ar.end + HOUR and extended.state == State.RUNNING


# -- cancel and destroy ------------------------------------------------------------

def test_cancel_releases_nodes_and_keeps_the_record(env):
    ar = env.reserve(nodes=5)
    [cancelled] = env.manager.cancel(ALICE, ar.id, None)
    assert cancelled.state == State.DELETED
    assert env.store.get(ar.id).state == State.DELETED
    assert len(env.reserve(nodes=5).node_names) == 5
    assert ar.id not in env.backend.scheduler.windows
    with pytest.raises(ReservationError, match="already ended"):
        env.manager.cancel(ALICE, ar.id, None)
    assert ":ar_acct:" in env.reporting()


def test_cancel_by_owner_and_permissions(env):
    mine = [env.reserve().id, env.reserve().id]
    theirs = env.reserve(BOB).id
    with pytest.raises(PermissionDenied, match="only its owner or a manager"):
        env.manager.cancel(ALICE, theirs, None)
    with pytest.raises(PermissionDenied, match="only a manager"):
        env.manager.cancel(ALICE, None, "bob")
    with pytest.raises(ReservationError, match="-T cannot be used with -o"):
        env.manager.cancel(ALICE, None, "alice", transactional=True)
    assert [ar.id for ar in env.manager.cancel(ALICE, None, "alice")] == mine
    assert env.manager.ars[theirs].state == State.WAITING
    assert [ar.id for ar in env.manager.cancel(ADMIN, None, "bob")] == [theirs]


def ar_logs(env, ar_id: int) -> list[str]:
    """The AR's ar_log records as state:event:message."""
    records = [line.split(":", 2)[2].split(":") for line in env.reporting().splitlines()
               if ":ar_log:" in line]
    return [":".join(fields[3:]) for fields in records if fields[2] == str(ar_id)]


def test_a_deletion_is_logged_in_8_1_9s_words(env):
    """qrdel's record, state d, event DELETED, "AR deleted", for a cancel
    and a destroy alike; destroying an ended AR adds no record."""
    cancelled, destroyed = env.reserve(), env.reserve()
    env.manager.cancel(ALICE, cancelled.id, None)
    env.manager.destroy(ALICE, destroyed.id, None)
    env.manager.destroy(ALICE, cancelled.id, None)
    assert ar_logs(env, cancelled.id) == ["d:DELETED:AR deleted"]
    assert ar_logs(env, destroyed.id) == ["d:DELETED:AR deleted"]


def test_destroy_removes_everything(env):
    ar = env.reserve(nodes=5)
    env.manager.cancel(ALICE, ar.id, None)
    env.manager.destroy(ALICE, ar.id, None)
    assert env.stored_ids() == []
    with pytest.raises(ReservationError, match="does not exist"):
        env.manager.status(ar_id=ar.id)


# -- two-phase operations (-T) -------------------------------------------------------

def test_pending_reserve_holds_nodes_until_commit(env):
    ar = env.reserve(nodes=5, transactional=True)
    assert ar.state == State.PENDING and ar.pending == Operation.RESERVE
    assert ar.id not in env.backend.scheduler.windows
    with pytest.raises(ReservationError):
        env.reserve(BOB)
    committed = env.manager.commit(ALICE, ar.id)
    assert committed.state == State.WAITING and committed.pending is None
    assert env.store.get(ar.id).state == State.WAITING
    env.settle()
    assert ar.id in env.backend.scheduler.windows


def test_abort_of_pending_reserve_forgets_it(env):
    ar = env.reserve(nodes=5, transactional=True)
    with pytest.raises(PermissionDenied):
        env.manager.abort(BOB, ar.id)
    env.manager.abort(ALICE, ar.id)
    assert env.stored_ids() == []
    assert len(env.reserve(BOB, nodes=5).node_names) == 5
    assert "new_ar" in env.reporting()  # only Bob's
    assert env.reporting().count("new_ar") == 1


def test_pending_operations_time_out(env):
    ar = env.reserve(nodes=5, transactional=True)
    env.clock.now = T0 + 299
    env.lifecycle.tick()
    assert ar.id in env.manager.ars
    env.clock.now = T0 + 300
    assert env.lifecycle.next_due() is not None
    env.lifecycle.tick()
    assert ar.id not in env.manager.ars and env.stored_ids() == []


def test_pending_modify_holds_old_and_new_until_commit(env):
    ar = env.reserve(nodes=2)
    pending = env.manager.modify(ALICE, ar.id, T0 + 3 * HOUR, None, None, None, None,
                                 transactional=True)
    assert pending.pending == Operation.MODIFY and pending.start == T0 + HOUR
    with pytest.raises(ReservationError):  # the old window is still held
        env.reserve(BOB, nodes=4)
    with pytest.raises(ReservationError):  # and so is the new one
        env.reserve(BOB, nodes=4, start=T0 + 3 * HOUR)
    with pytest.raises(ReservationError, match="uncommitted modify"):
        env.manager.cancel(ALICE, ar.id, None)
    committed = env.manager.commit(ALICE, ar.id)
    assert committed.start == T0 + 3 * HOUR and committed.pending is None
    assert env.store.get(ar.id).start == T0 + 3 * HOUR
    assert len(env.reserve(BOB, nodes=5).node_names) == 5


def test_aborted_modify_restores_the_ar(env):
    ar = env.reserve(nodes=2)
    env.manager.modify(ALICE, ar.id, None, None, None, 4, None, transactional=True)
    env.manager.abort(ALICE, ar.id)
    stored = env.store.get(ar.id)
    assert stored.pending is None and stored.pending_allocations == []
    assert len(stored.allocations) == 2
    assert len(env.reserve(BOB, nodes=3).node_names) == 3


def test_pending_cancel_keeps_nodes_until_commit(env):
    ar = env.reserve(nodes=5)
    env.manager.cancel(ALICE, ar.id, None, transactional=True)
    assert env.manager.ars[ar.id].state == State.WAITING
    with pytest.raises(ReservationError):
        env.reserve(BOB)
    env.manager.commit(ALICE, ar.id)
    assert env.manager.ars[ar.id].state == State.DELETED
    env.reserve(BOB)


def test_pending_destroy_and_commit_without_pending(env):
    ar = env.reserve()
    with pytest.raises(ReservationError, match="no operation waiting"):
        env.manager.commit(ALICE, ar.id)
    env.manager.destroy(ALICE, ar.id, None, transactional=True)
    assert env.stored_ids() == [ar.id]
    env.manager.commit(ALICE, ar.id)
    assert env.stored_ids() == []


def test_pending_operation_survives_restart(env):
    ar = env.reserve(nodes=5, transactional=True)
    modified = env.reserve(nodes=0 + 1, start=T0 + 5 * HOUR)
    env.manager.modify(ALICE, modified.id, None, None, 2 * HOUR, None, None, transactional=True)
    manager = env.restart()
    assert manager.ars[ar.id].pending == Operation.RESERVE
    assert manager.ars[modified.id].pending_request.end == T0 + 7 * HOUR
    with pytest.raises(ReservationError):
        env.reserve(BOB)
    manager.commit(ALICE, ar.id)
    manager.commit(ALICE, modified.id)
    assert env.store.get(modified.id).end == T0 + 7 * HOUR


def test_a_restarted_manager_plans_exactly_what_was_stored(env):
    """The stored ARs are taken in at once at start: each holds its own
    window on its nodes, no more, and nodes are free before and after it."""
    later = env.reserve(nodes=5, start=T0 + 10 * HOUR)
    moved = env.reserve(nodes=2, start=T0 + 20 * HOUR)
    env.manager.modify(ALICE, moved.id, T0 + 30 * HOUR, None, None, None, None, transactional=True)
    manager = env.restart()
    assert len(env.reserve(nodes=5, start=T0 + 2 * HOUR).node_names) == 5     # before it
    assert len(env.reserve(nodes=3, start=T0 + 11 * HOUR).node_names) == 3    # after it
    with pytest.raises(ReservationError, match="only 0 of the 1"):
        env.reserve(nodes=1, start=T0 + 10 * HOUR + 1800)
    with pytest.raises(ReservationError, match="only 3 of the 4"):              # the pending move
        env.reserve(nodes=4, start=T0 + 30 * HOUR)
    manager.cancel(ALICE, later.id, None)
    assert len(env.reserve(nodes=5, start=T0 + 10 * HOUR).node_names) == 5


# -- time ---------------------------------------------------------------------------

def test_window_transitions_and_expiry(env):
    ar = env.reserve(nodes=2)
    assert env.lifecycle.next_due() == ar.start
    env.clock.now = ar.start
    env.lifecycle.tick()
    assert env.manager.ars[ar.id].state == State.RUNNING
    assert env.backend.scheduler.windows[ar.id].open
    assert env.lifecycle.next_due() == ar.end - 900      # ending soon, at ending_soon's leads
    env.clock.now = ar.end - 900
    env.lifecycle.tick()
    told = [(e.type, json.loads(e.data)["lead"]) for e in EventLog(env.store).after(0, 100)
            if e.type == ENDING_SOON]
    assert told == [(ENDING_SOON, 3600), (ENDING_SOON, 900)]   # 3600: at the start, once
    assert env.lifecycle.next_due() == ar.end - 300
    env.clock.now = ar.end
    env.lifecycle.tick()
    assert env.manager.ars[ar.id].state == State.EXITED
    assert ar.id not in env.backend.scheduler.windows
    assert env.store.get(ar.id).finished_time == ar.end
    assert ar_logs(env, ar.id) == ["r:START TIME REACHED:start time of AR reached",
                                   "x:TERMINATED:end time of AR reached"]
    env.clock.now = ar.end + 3599
    env.lifecycle.tick()
    assert ar.id in env.manager.ars
    env.clock.now = ar.end + 3600
    env.lifecycle.tick()
    assert ar.id not in env.manager.ars and env.stored_ids() == []


def test_max_expired_keeps_the_most_recent(tmp_path):
    env = Env(tmp_path, "max_expired: 2\n")
    ids = [env.reserve().id for _ in range(4)]
    for ar_id in ids:
        env.clock.now += 1
        env.manager.cancel(ALICE, ar_id, None)
    env.lifecycle.tick()
    assert sorted(env.manager.ars) == ids[2:]
    assert [ar.id for ar in env.manager.status(expired=5)] == ids[2:]


def test_restart_catches_up_missed_transitions(env):
    ended = env.reserve()
    started = env.reserve(start=T0 + 2 * HOUR, hours=5)
    env.clock.now = T0 + 3 * HOUR
    manager = env.restart()
    env.lifecycle.tick()
    assert manager.ars[ended.id].state == State.EXITED
    assert manager.ars[started.id].state == State.RUNNING
    assert env.backend.scheduler.windows[started.id].open


def test_node_failure_puts_ar_in_warning_then_error(env):
    """Without repair (-repair none): the AR waits for its node to return."""
    ar = env.reserve(nodes=2, attributes=(), repair="none")
    failed = [n for n in ar.node_names if n.startswith("n")][0]
    env.cluster_file.write_text(_with_alive(CLUSTER, failed, False))
    env.lifecycle.tick()
    assert env.manager.ars[ar.id].state == State.WARNING
    assert failed in env.manager.ars[ar.id].message
    env.clock.now = ar.start
    env.lifecycle.tick()
    assert env.manager.ars[ar.id].state == State.ERROR
    env.cluster_file.write_text(_with_alive(CLUSTER, failed, True))
    env.lifecycle.tick()
    assert env.manager.ars[ar.id].state == State.RUNNING
    assert env.manager.ars[ar.id].message == ""
    assert ar_logs(env, ar.id) == ["W:RESOURCES UNSATISFIED:AR resources unsatisfied",
                                   "E:START TIME REACHED:start time of AR reached",
                                   "r:RESOURCES SATISFIED:AR resources satisfied"]


def test_dead_nodes_are_not_reserved(env):
    env.cluster_file.write_text(_with_alive(CLUSTER, "n01", False))
    env.manager.refresh_nodes()
    assert "n01" not in env.reserve(nodes=4).node_names
    assert "n01" not in env.manager.available_nodes(T0, T0 + HOUR)


def test_a_node_that_dies_after_a_request_of_the_same_kind_is_not_reserved(env):
    env.reserve(nodes=1)     # the manager now knows which nodes this kind of request fits
    env.cluster_file.write_text(_with_alive(CLUSTER, "n02", False))
    env.manager.refresh_nodes()
    assert "n02" not in env.reserve(nodes=4, start=T0 + 5 * HOUR).node_names
    assert env.manager.capacity()["n02"] == env.manager.nodes["n02"].slots


# -- queries -------------------------------------------------------------------------

def test_status_filters(env):
    a = env.reserve(nodes=1, start=T0 + HOUR)
    b = env.reserve(BOB, nodes=1, start=T0 + 5 * HOUR)
    c = env.reserve(nodes=1, start=T0 + 10 * HOUR)
    env.manager.cancel(ALICE, c.id, None)
    status = env.manager.status
    assert [ar.id for ar in status()] == [a.id, b.id]
    assert [ar.id for ar in status(owner="bob")] == [b.id]
    assert [ar.id for ar in status(start=T0 + 3 * HOUR)] == [b.id]
    assert [ar.id for ar in status(end=T0 + 3 * HOUR)] == [a.id]
    assert [ar.id for ar in status(expired=1)] == [a.id, b.id, c.id]
    assert [ar.id for ar in status(ar_id=c.id)] == [c.id]


def test_status_asks_the_backend_for_lingering_jobs_only_over_a_deleted_ar(env):
    """Backend.lingering copies every job: a listing of live ARs, or one
    AR by id, never asks; a deleted AR is listed while its jobs linger."""
    a = env.reserve(nodes=1, start=T0 + HOUR)
    asked = []

    def lingering():
        asked.append(1)
        return {gone.id}
    assert [ar.id for ar in env.manager.status(lingering=lingering)] == [a.id]
    assert env.manager.status(ar_id=a.id, lingering=lingering) == [env.manager.ars[a.id]]
    assert asked == []
    gone = env.reserve(nodes=1, start=T0 + 2 * HOUR)
    env.manager.cancel(ALICE, gone.id, None)
    other = env.reserve(nodes=1, start=T0 + 3 * HOUR)
    env.manager.cancel(ALICE, other.id, None)
    assert [ar.id for ar in env.manager.status(lingering=lingering)] == [a.id, gone.id]
    assert asked == [1]                                 # once for both deleted ARs


def test_available_nodes(env):
    env.reserve(nodes=1)
    env.reserve(nodes=1, slots_per_node=1)
    assert env.manager.available_nodes(T0 + HOUR, T0 + 2 * HOUR) == ["n02", "n03", "n04"]
    assert len(env.manager.available_nodes(T0 + 2 * HOUR, T0 + 3 * HOUR)) == 5


class SeesContext:
    """Keeps what the policy hooks were given."""

    def __init__(self) -> None:
        self.validated: list[dict] = []
        self.node_calls: list[dict] = []

    @hookimpl
    def plus_validate_request(self, request, owner, groups, operation, context):
        len(context.reservations)    # read during the request, as docs/policies.md says
        self.validated.append(dict(request=request, owner=owner, groups=groups,
                                   operation=operation, context=context))

    @hookimpl
    def plus_node_reservable(self, node, owner, groups, allocated, context):
        self.node_calls.append(dict(node=node.name, owner=owner, groups=groups,
                                    allocated=[n.name for n in allocated], context=context))


def test_usage_counts_like_plus_rsvutil(env):
    env.reserve(nodes=2, hours=2)
    env.reserve(nodes=1, hours=1, start=T0 + 5 * HOUR)
    cancelled = env.reserve(nodes=1, start=T0 + 8 * HOUR)
    env.manager.cancel(ALICE, cancelled.id, None)
    env.reserve(BOB, nodes=1, start=T0 + 9 * HOUR)
    seen = SeesContext()
    env.pm.register(seen, name="seen")
    env.reserve(nodes=1, start=T0 + 20 * HOUR)
    context = seen.validated[0]["context"]
    assert context.usage("alice", T0, T0 + 24 * HOUR) == (2, 3 * HOUR, 5.0)
    assert context.usage("alice", T0 + 4 * HOUR, T0 + 24 * HOUR).count == 1
    assert context.usage("bob", T0, T0 + 24 * HOUR) == (1, HOUR, 1.0)
    assert context.now == T0
    assert len(context.all_nodes) == 5


def usage_seen(env: Env, owner: str = "alice", start: int = T0 - 40 * 24 * HOUR,
               end: int = T0 + 40 * 24 * HOUR):
    """plus_rsvutil as the policies of the next request see it."""
    seen = SeesContext()
    env.pm.register(seen)
    try:
        env.reserve(BOB, nodes=1, start=env.clock.now + 30 * 24 * HOUR)
    finally:
        env.pm.unregister(seen)
    return seen.validated[0]["context"].usage(owner, start, end)


def test_ended_ars_count_for_usage_history_after_plus_status_forgot_them(tmp_path):
    env = Env(tmp_path, "usage_history: 864000\n")              # 10 days
    ar = env.reserve(nodes=2, hours=2)
    env.clock.now = ar.end
    env.lifecycle.tick()
    env.clock.now = ar.end + 3600                                  # expiry: 3600 s
    env.lifecycle.tick()
    assert ar.id not in env.manager.ars
    assert usage_seen(env) == (1, 2 * HOUR, 4.0)
    env.restart()
    assert usage_seen(env) == (1, 2 * HOUR, 4.0)
    env.clock.now = ar.end + 864000
    env.lifecycle.tick()
    assert usage_seen(env).count == 0
    env.restart()
    assert usage_seen(env).count == 0


def test_cancelled_and_destroyed_ars_count_as_far_as_they_ran(env):
    before_start = env.reserve(nodes=1, start=T0 + HOUR)
    env.manager.cancel(ALICE, before_start.id, None)
    cancelled = env.reserve(nodes=2, start=T0 + HOUR, hours=4, slots_per_node=1)
    destroyed = env.reserve(nodes=1, start=T0 + HOUR, hours=4, slots_per_node=1)
    pending = env.reserve(nodes=1, start=T0 + HOUR, transactional=True, slots_per_node=1)
    env.clock.now = T0 + 2 * HOUR
    env.lifecycle.tick()
    env.manager.cancel(ALICE, cancelled.id, None)                  # ran 1 h on 2 nodes
    env.manager.destroy(ADMIN, destroyed.id, None)                 # ran 1 h on 1 node
    assert pending.id not in env.manager.ars                       # -T never committed
    assert usage_seen(env) == (2, 2 * HOUR, 3.0)
    env.clock.now = T0 + 30 * HOUR                                 # all expired from view
    env.lifecycle.tick()
    assert env.manager.ars.keys() == {a.id for a in env.manager.ars.values() if a.owner == "bob"}
    assert usage_seen(env) == (2, 2 * HOUR, 3.0)


def test_no_usage_history_keeps_nothing(tmp_path):
    env = Env(tmp_path, "usage_history: 0\n")
    ar = env.reserve(nodes=1)
    env.clock.now = ar.end
    env.lifecycle.tick()
    env.clock.now = ar.end + 3600
    env.lifecycle.tick()
    assert ar.id not in env.manager.ars
    assert usage_seen(env).count == 0


def test_hooks_see_the_owner_and_one_context_per_request(env):
    seen = SeesContext()
    env.pm.register(seen, name="seen")
    env.reserve(nodes=2)
    assert [v["operation"] for v in seen.validated] == ["reserve"]
    assert [(c["node"], c["allocated"]) for c in seen.node_calls] == [("big", []), ("n01", ["big"])]
    assert {id(c["context"]) for c in seen.node_calls} == {id(seen.validated[0]["context"])}
    assert seen.validated[0]["owner"] == "alice" and seen.validated[0]["groups"] == ("staff",)


def test_a_modify_is_judged_without_the_ar_it_changes(env):
    ar = env.reserve(nodes=2, hours=2)
    other = env.reserve(nodes=1, start=T0 + 5 * HOUR)
    seen = SeesContext()
    env.pm.register(seen, name="seen")
    env.manager.modify(ADMIN, ar.id, None, None, 3 * HOUR, None, None)
    call = seen.validated[-1]
    assert call["operation"] == "modify" and call["owner"] == "alice"
    assert call["request"].duration == 3 * HOUR
    assert [r.id for r in call["context"].reservations] == [other.id]
    assert call["context"].usage("alice", T0, T0 + 24 * HOUR) == (1, HOUR, 1.0)


# -- policy hooks ------------------------------------------------------------------

class RefuseLongWindows:
    @hookimpl
    def plus_validate_request(self, request):
        if request.duration > 2 * HOUR:
            return "windows longer than 2 hours are not allowed"


class NoBigForAlice:
    @hookimpl
    def plus_node_reservable(self, node, owner, allocated):
        if node.name == "big" and owner == "alice":
            return False
        return len(allocated) < 3


class Reversed:
    @hookimpl
    def plus_node_order(self, nodes):
        return list(reversed(nodes))


def test_validation_hook_refusal_names_the_policy(env):
    env.pm.register(RefuseLongWindows(), name="max-window")
    with pytest.raises(ReservationError, match="policy max-window: windows longer than 2 hours"):
        env.reserve(hours=3)
    assert env.stored_ids() == []
    env.reserve(hours=2)


def test_node_hook_vetoes_and_order_hook(env):
    env.pm.register(NoBigForAlice(), name="nobig")
    assert "big" not in env.reserve(nodes=3).node_names
    with pytest.raises(ReservationError, match="policy nobig: refused"):
        env.reserve(nodes=2)
    env.pm.register(Reversed(), name="reversed")
    assert env.reserve(BOB, nodes=1, start=T0 + 9 * HOUR).node_names == ["n04"]


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple] = []

    @hookimpl
    def plus_reservation_granted(self, reservation):
        self.events.append(("granted", reservation.id))

    @hookimpl
    def plus_reservation_started(self, reservation):
        self.events.append(("started", reservation.id))

    @hookimpl
    def plus_reservation_ended(self, reservation):
        self.events.append(("ended", reservation.id))

    @hookimpl
    def plus_reservation_cancelled(self, reservation):
        self.events.append(("cancelled", reservation.id))

    @hookimpl
    def plus_reservation_error(self, reservation, reason):
        self.events.append(("error", reservation.id, reason is not None))


def test_lifecycle_events_reach_plugins(env):
    recorder = Recorder()
    env.pm.register(recorder, name="recorder")
    first = env.reserve(nodes=1)
    second = env.reserve(nodes=1, transactional=True, repair="none")
    assert recorder.events == [("granted", first.id)]
    env.manager.commit(ALICE, second.id)
    env.cluster_file.write_text(_with_alive(CLUSTER, second.node_names[0], False))
    env.lifecycle.tick()
    env.cluster_file.write_text(CLUSTER)
    env.clock.now = first.start
    env.lifecycle.tick()
    env.manager.cancel(ALICE, second.id, None)
    env.clock.now = first.end
    env.lifecycle.tick()
    assert recorder.events == [
        ("granted", first.id), ("granted", second.id), ("error", second.id, True),
        ("started", first.id), ("started", second.id), ("error", second.id, False),
        ("cancelled", second.id), ("ended", first.id)]
