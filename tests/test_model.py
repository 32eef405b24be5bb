"""overlay/language/model.py: AR states by the clock (seed 000, 5.2.3.1), the error
statuses and the per-node slot count of a request. (The time window check,
request.window_end, is tested in test_request.py.)"""

from __future__ import annotations

import pytest

from overlay.language.model import (
    FINISHED_STATES,
    HOLDING_STATES,
    Allocation,
    LimitExceeded,
    Node,
    PermissionDenied,
    Request,
    RequestKind,
    Reservation,
    ReservationError,
    State,
)


def test_exit_statuses():
    assert ReservationError("x").exit_status == 1
    assert LimitExceeded("x").exit_status == 25        # qrsub's status (seed 000, 5.1.3.9)
    assert PermissionDenied("x").exit_status == 1
    assert issubclass(LimitExceeded, ReservationError)
    assert issubclass(PermissionDenied, ReservationError)


def test_state_letters_are_grid_engines():
    assert [s.value for s in (State.WAITING, State.RUNNING, State.EXITED, State.DELETED,
                              State.WARNING, State.ERROR)] == ["w", "r", "x", "d", "W", "E"]
    assert HOLDING_STATES.isdisjoint(FINISHED_STATES)
    assert HOLDING_STATES | FINISHED_STATES == set(State)


# --- Reservation --------------------------------------------------------------------------

def make_ar(start: int = 1000, end: int = 2000, state: State = State.WAITING) -> Reservation:
    return Reservation(id=42, owner="alice", group="staff",
                       request=Request(start=start, end=end, nodes=2, name="sim"),
                       state=state, submission_time=500,
                       allocations=[Allocation("n1", 4), Allocation("n2", 2)])


@pytest.mark.parametrize("now,state", [
    (0, State.WAITING),
    (999, State.WAITING),
    (1000, State.RUNNING),      # the start instant belongs to the window
    (1500, State.RUNNING),
    (1999, State.RUNNING),
    (2000, State.EXITED),       # the end instant does not
    (5000, State.EXITED),
])
def test_window_state_follows_the_clock(now, state):
    assert make_ar().window_state(now) is state


@pytest.mark.parametrize("now,state", [
    (0, State.WARNING),
    (999, State.WARNING),
    (1000, State.ERROR),
    (1999, State.ERROR),
    (2500, State.ERROR),
])
def test_error_state_is_w_before_and_e_after_the_start(now, state):
    assert make_ar().error_state(now) is state


def test_reservation_properties():
    ar = make_ar()
    assert (ar.start, ar.end, ar.name) == (1000, 2000, "sim")
    assert ar.node_names == ["n1", "n2"]
    assert ar.request.duration == 1000


@pytest.mark.parametrize("state,holds", [
    (State.WAITING, True), (State.RUNNING, True), (State.WARNING, True),
    (State.ERROR, True), (State.PENDING, True), (State.EXITED, False), (State.DELETED, False),
])
def test_which_states_hold_nodes(state, holds):
    assert make_ar(state=state).holds_resources is holds


# --- Request ------------------------------------------------------------------------------

def test_slots_on_whole_nodes_takes_every_slot():
    request = Request(start=0, end=10, nodes=1)
    assert request.slots_on(Node(name="a", slots=8)) == 8
    assert request.slots_on(Node(name="b", slots=1)) == 1
    assert request.slots_on(Node(name="c", slots=16)) == 16


def test_slots_on_with_slots_per_node():
    request = Request(start=0, end=10, nodes=1, slots_per_node=2)
    assert request.slots_on(Node(name="a", slots=8)) == 2
    assert request.slots_on(Node(name="c", slots=16)) == 2


def test_a_requests_kind_is_what_its_nodes_imply_unless_it_names_one():
    assert Request(start=0, end=10, nodes=2).kind is RequestKind.NODES
    by_slots = Request(start=0, end=10, nodes=0, pe="mpi", pe_range=((2, 4),))
    assert by_slots.kind is RequestKind.SLOTS and by_slots.by_slots
    named = Request(start=0, end=10, nodes=0, kind=RequestKind.NODES)   # refused by the manager
    assert named.kind is RequestKind.NODES and not named.by_slots
    assert Request(start=0, end=10, nodes=0, kind="slots").kind is RequestKind.SLOTS


def test_a_request_keeps_its_kind_through_changes():
    """The kind is the request's, not its node count's, once it is set."""
    by_slots = Request(start=0, end=10, nodes=0)
    assert by_slots.with_changes(end=20).kind is RequestKind.SLOTS
    assert Request(start=0, end=10, nodes=2).with_changes(nodes=0).kind is RequestKind.NODES
    with pytest.raises(ValueError):
        Request(start=0, end=10, nodes=0, kind="maintenance")


def test_with_changes_leaves_the_original_alone():
    request = Request(start=0, end=10, nodes=1, users=("alice",))
    changed = request.with_changes(end=20, nodes=3)
    assert (changed.start, changed.end, changed.nodes, changed.users) == (0, 20, 3, ("alice",))
    assert (request.end, request.nodes) == (10, 1)
    assert changed.duration == 20
