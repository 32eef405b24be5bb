"""overlay.persistence.store on SQLite and on PostgreSQL (every test runs on both, via the
``store_url`` / ``store`` fixtures of conftest.py).

Covers the round trip of every Reservation field, replacing and removing
ARs, the AR id sequence (1..9999999, wrapping, skipping ids in use), the
capacity re-check that raises Conflict instead of double-booking, and races
between several Store instances (threads and processes) on one database, as
between two daemons.
"""

from __future__ import annotations

import multiprocessing
import threading
from dataclasses import replace

import pytest
from sqlalchemy import event, func
from sqlmodel import Session, select

from overlay.language.model import Allocation, Operation, Request, RequestKind, Reservation, State
from overlay.persistence.store import AllocationRow, Conflict, CounterRow, ReservationRow, Store

MAX_ID = 9_999_999  # Grid Engine 6.2: the highest AR id (seed 000, 5.2.1)
CAPACITY = {"n1": 4, "n2": 4, "n3": 8}
RACERS = 8


# -- helpers -----------------------------------------------------------------------


def new_ar(start: int = 1000, end: int = 2000, allocations=(("n1", 4),),
           state: State = State.WAITING, **fields) -> Reservation:
    """An unstored AR (id 0, as the manager builds it) holding ``allocations``."""
    request = fields.pop("request", None) or Request(start=start, end=end, nodes=len(allocations))
    return Reservation(id=0, owner="alice", group="staff", request=request, state=state,
                       submission_time=500,
                       allocations=[Allocation(node, slots) for node, slots in allocations],
                       **fields)


def allocation_rows(store: Store) -> list[tuple]:
    """Every allocation row that books capacity (held), as plain tuples, sorted."""
    with Session(store.engine) as session:
        rows = session.exec(select(AllocationRow).where(AllocationRow.held)).all()
        return sorted((r.reservation_id, r.node, r.slots, r.start_time, r.end_time, r.pending)
                      for r in rows)


def reservation_ids(store: Store) -> list[int]:
    with Session(store.engine) as session:
        return sorted(session.exec(select(ReservationRow.id)).all())


def counter(store: Store) -> int | None:
    with Session(store.engine) as session:
        row = session.get(CounterRow, "arseqnum")
        return None if row is None else row.value


def set_counter(store: Store, value: int) -> None:
    with Session(store.engine) as session:
        with session.begin():
            row = session.get(CounterRow, "arseqnum")
            if row is None:
                row = CounterRow(name="arseqnum", value=value)
            row.value = value
            session.add(row)


def snapshot(store: Store) -> tuple:
    """Everything the store holds, for before/after comparisons."""
    return (store.load_all(), allocation_rows(store), counter(store))


def full_request() -> Request:
    """A request with every field set to a non-default value."""
    return Request(start=10_000, end=13_600, nodes=2, users=("alice", "bob", "@staff"),
                   slots_per_node=2, memory_mb=2048, ncpus=4, arch="lx-amd64", os="linux",
                   attributes=(("gpu", "yes"), ("fabric", "ib")), queues=("all.q", "big.q"),
                   name="nightly")


# -- round trip --------------------------------------------------------------------


def test_round_trip_of_every_field_with_a_pending_modify(store):
    ar = new_ar(request=full_request(), allocations=(("n1", 2), ("n2", 2)),
                state=State.WARNING, acl=("alice", "bob", "@staff"), account="proj42",
                message="node n2 is down", finished_time=123_456,
                pending=Operation.MODIFY, pending_since=9_000,
                pending_request=replace(full_request(), start=20_000, end=27_200, nodes=3,
                                        users=("alice",), attributes=(("gpu", "no"),),
                                        queues=("big.q",), name="renamed"),
                pending_allocations=[Allocation("n2", 2), Allocation("n3", 2),
                                     Allocation("n1", 2)])
    expected = replace(ar, allocations=list(ar.allocations),
                       pending_allocations=list(ar.pending_allocations))

    returned = store.create(ar, CAPACITY)

    assert returned.id == 1
    expected.id = 1
    got = store.get(1)
    assert got == expected
    # Tuples must come back as tuples (a list would compare unequal above,
    # but say so plainly), enums as enums.
    assert type(got.request.users) is tuple and type(got.request.queues) is tuple
    assert type(got.request.attributes) is tuple
    assert all(type(pair) is tuple for pair in got.request.attributes)
    assert all(type(pair) is tuple for pair in got.pending_request.attributes)
    assert type(got.acl) is tuple
    assert got.state is State.WARNING and got.pending is Operation.MODIFY
    assert store.load_all() == [expected]
    # A second instance (another daemon) reads the same.
    other = Store(store.url)
    try:
        assert other.get(1) == expected
        assert other.load_all() == [expected]
    finally:
        other.close()


@pytest.mark.parametrize("state", [State.WAITING, State.RUNNING, State.ERROR, State.PENDING])
def test_round_trip_of_plain_ars_in_holding_states(store, state):
    pending = Operation.RESERVE if state == State.PENDING else None
    ar = new_ar(state=state, pending=pending, pending_since=600 if pending else None)
    store.create(ar, CAPACITY)
    assert store.get(ar.id) == ar
    assert store.get(ar.id).acl == () and store.get(ar.id).pending_request is None
    assert store.load_all() == [ar]


def test_round_trip_of_a_finished_ar(store):
    ar = new_ar(allocations=(("n1", 4), ("n2", 1)))
    store.create(ar, CAPACITY)
    ar.state, ar.finished_time, ar.message = State.DELETED, 1_500, "cancelled"
    store.save(ar)
    got = store.get(ar.id)
    assert (got.state, got.finished_time, got.message) == (State.DELETED, 1_500, "cancelled")
    assert (got.request, got.owner, got.group, got.submission_time) == \
        (ar.request, "alice", "staff", 500)
    assert [a.id for a in store.load_all()] == [ar.id]


def test_get_of_an_unknown_id_is_none(store):
    assert store.get(1) is None
    store.create(new_ar(), CAPACITY)
    assert store.get(2) is None
    assert store.get(1) is not None


def test_load_all_is_ordered_by_id(store):
    for window in [(1000, 2000), (3000, 4000), (5000, 6000)]:
        store.create(new_ar(*window), CAPACITY)
    set_counter(store, 0)
    store.remove(store.get(2))
    store.create(new_ar(7000, 8000), CAPACITY)  # reuses id 2
    assert [ar.id for ar in store.load_all()] == [1, 2, 3]
    assert store.get(2).start == 7000


# -- save, remove --------------------------------------------------------------------


def test_save_replaces_fields_and_allocations(store):
    ar = store.create(new_ar(allocations=(("n1", 4), ("n2", 4))), CAPACITY)
    changed = replace(ar, request=Request(start=5000, end=6000, nodes=1),
                      allocations=[Allocation("n3", 2)], state=State.RUNNING, message="moved")
    store.save(changed, CAPACITY)

    assert store.get(ar.id) == changed
    assert store.load_all() == [changed]
    assert allocation_rows(store) == [(ar.id, "n3", 2, 5000, 6000, False)]
    assert reservation_ids(store) == [ar.id]
    # n1 and n2 are free again over the old window.
    assert store.create(new_ar(allocations=(("n1", 4), ("n2", 4))), CAPACITY).id == 2


def test_save_without_capacity_does_not_check(store):
    store.create(new_ar(), CAPACITY)
    second = store.create(new_ar(3000, 4000), CAPACITY)
    second.request = Request(start=1500, end=2500, nodes=1)
    store.save(second)  # no capacity: trusted, stored as given
    assert store.get(second.id).start == 1500


def test_remove_deletes_the_ar_and_its_allocations(store):
    first = store.create(new_ar(), CAPACITY)
    second = store.create(new_ar(allocations=(("n2", 4),)), CAPACITY)
    pending = store.create(new_ar(3000, 4000, allocations=(("n3", 2),)), CAPACITY)
    pending.pending, pending.pending_since = Operation.MODIFY, 700
    pending.pending_request = Request(start=5000, end=6000, nodes=1)
    pending.pending_allocations = [Allocation("n3", 4)]
    store.save(pending, CAPACITY)

    store.remove(first)
    store.remove(pending)

    assert store.get(first.id) is None and store.get(pending.id) is None
    assert store.load_all() == [second]
    assert allocation_rows(store) == [(second.id, "n2", 4, 1000, 2000, False)]
    assert store.create(new_ar(), CAPACITY).id == 4  # n1 is free; ids are not reused yet
    assert reservation_ids(store) == [2, 4]


# -- AR ids ----------------------------------------------------------------------------


def test_ids_count_from_one(store):
    ids = [store.create(new_ar(1000 * i, 1000 * i + 500), CAPACITY).id for i in range(1, 4)]
    assert ids == [1, 2, 3]
    assert reservation_ids(store) == [1, 2, 3]
    assert counter(store) == 3


def test_ids_wrap_after_the_highest_and_skip_ids_in_use(store):
    for i in range(1, 4):
        store.create(new_ar(1000 * i, 1000 * i + 500, allocations=()), CAPACITY)
    store.remove(store.get(2))
    set_counter(store, MAX_ID - 1)

    assert store.create(new_ar(allocations=()), CAPACITY).id == MAX_ID
    assert store.create(new_ar(allocations=()), CAPACITY).id == 2  # 1 in use, 2 free
    assert store.create(new_ar(allocations=()), CAPACITY).id == 4  # 3 in use
    assert counter(store) == 4

    set_counter(store, MAX_ID - 1)  # MAX_ID, 1, 2, 3 and 4 are all in use now
    assert store.create(new_ar(allocations=()), CAPACITY).id == 5
    assert reservation_ids(store) == [1, 2, 3, 4, 5, MAX_ID]


def test_counter_at_the_highest_id_wraps_to_one(store):
    set_counter(store, MAX_ID)
    assert store.create(new_ar(), CAPACITY).id == 1
    assert counter(store) == 1


# -- capacity re-check ------------------------------------------------------------------


@pytest.mark.parametrize("window", [(1500, 2500), (500, 1500), (1200, 1300), (500, 2500),
                                    (1000, 2000), (1999, 2001)])
def test_a_full_node_conflicts_over_an_overlapping_window(store, window):
    first = store.create(new_ar(1000, 2000), CAPACITY)
    late = new_ar(*window)
    with pytest.raises(Conflict, match="n1"):
        store.create(late, CAPACITY)
    assert late.id == 0
    assert store.load_all() == [first]


def test_partial_slots_conflict_only_when_their_sum_exceeds_capacity(store):
    store.create(new_ar(1000, 2000, allocations=(("n1", 3),)), CAPACITY)
    store.create(new_ar(1500, 2500, allocations=(("n1", 1),)), CAPACITY)  # peak 4 of 4
    for window, slots in [((1800, 1900), 1),    # 3 + 1 + 1 during [1800, 1900)
                          ((900, 2600), 1),     # spans both
                          ((1000, 1001), 2),    # 3 + 2 at the start
                          ((2400, 2600), 4)]:   # 1 + 4 at the end
        with pytest.raises(Conflict):
            store.create(new_ar(*window, allocations=(("n1", slots),)), CAPACITY)
    assert len(allocation_rows(store)) == 2
    # These fit: the peaks of the overlapped bookings leave room.
    store.create(new_ar(2000, 2100, allocations=(("n1", 3),)), CAPACITY)  # only the 1 overlaps
    store.create(new_ar(2500, 2600, allocations=(("n1", 4),)), CAPACITY)  # nothing overlaps
    store.create(new_ar(500, 1000, allocations=(("n1", 4),)), CAPACITY)   # touches the first
    # Two bookings one after the other never add up: only the peak counts.
    store.create(new_ar(1000, 2000, allocations=(("n2", 3),)), CAPACITY)
    store.create(new_ar(2000, 3000, allocations=(("n2", 3),)), CAPACITY)
    store.create(new_ar(1500, 2500, allocations=(("n2", 1),)), CAPACITY)  # 3 + 1 at most
    assert [ar.id for ar in store.load_all()] == [1, 2, 3, 4, 5, 6, 7, 8]


def test_touching_windows_do_not_conflict(store):
    store.create(new_ar(1000, 2000), CAPACITY)
    store.create(new_ar(2000, 3000), CAPACITY)  # [a,b) then [b,c)
    store.create(new_ar(0, 1000), CAPACITY)     # [c,a) before it
    assert [ar.id for ar in store.load_all()] == [1, 2, 3]
    with pytest.raises(Conflict):
        store.create(new_ar(999, 1001), CAPACITY)


def test_slots_that_fit_are_booked_side_by_side(store):
    for _ in range(4):
        store.create(new_ar(allocations=(("n3", 2),)), CAPACITY)  # 4 x 2 = 8 of 8
    with pytest.raises(Conflict):
        store.create(new_ar(allocations=(("n3", 1),)), CAPACITY)
    assert sum(row[2] for row in allocation_rows(store)) == 8


def test_one_full_node_among_several_fails_the_whole_create(store):
    store.create(new_ar(allocations=(("n2", 4),)), CAPACITY)
    before = snapshot(store)
    with pytest.raises(Conflict, match="n2"):
        store.create(new_ar(allocations=(("n1", 4), ("n2", 1), ("n3", 8))), CAPACITY)
    assert snapshot(store) == before


def test_a_node_unknown_to_the_capacity_map_conflicts(store):
    with pytest.raises(Conflict):
        store.create(new_ar(allocations=(("ghost", 1),)), CAPACITY)
    with pytest.raises(Conflict):
        store.create(new_ar(allocations=(("n1", 5),)), CAPACITY)  # more than the node has
    assert store.load_all() == [] and allocation_rows(store) == []


def test_a_failed_create_leaves_the_store_unchanged(store):
    store.create(new_ar(), CAPACITY)
    store.create(new_ar(3000, 4000), CAPACITY)
    before = snapshot(store)
    assert before[2] == 2

    for _ in range(3):
        with pytest.raises(Conflict):
            store.create(new_ar(1500, 3500), CAPACITY)

    assert snapshot(store) == before
    assert reservation_ids(store) == [1, 2]
    assert store.create(new_ar(2000, 3000), CAPACITY).id == 3  # the counter did not move


@pytest.mark.parametrize("finished", [State.EXITED, State.DELETED])
def test_a_finished_ar_holds_no_allocation_rows(store, finished):
    ar = store.create(new_ar(allocations=(("n1", 4), ("n2", 4))), CAPACITY)
    ar.state, ar.finished_time = finished, 1_200
    store.save(ar)
    assert allocation_rows(store) == []
    assert store.get(ar.id).state == finished
    taker = store.create(new_ar(allocations=(("n1", 4), ("n2", 4))), CAPACITY)
    assert allocation_rows(store) == [(taker.id, "n1", 4, 1000, 2000, False),
                                      (taker.id, "n2", 4, 1000, 2000, False)]


def test_save_rechecks_capacity_without_counting_the_ar_itself(store):
    ar = store.create(new_ar(1000, 2000), CAPACITY)
    blocker = store.create(new_ar(3000, 4000), CAPACITY)

    # Longer, over its own booking: fine.
    longer = replace(ar, request=Request(start=1000, end=2500, nodes=1))
    store.save(longer, CAPACITY)
    assert allocation_rows(store) == [(ar.id, "n1", 4, 1000, 2500, False),
                                      (blocker.id, "n1", 4, 3000, 4000, False)]

    # Into the blocker's window: refused, nothing changes.
    before = snapshot(store)
    with pytest.raises(Conflict):
        store.save(replace(longer, request=Request(start=1000, end=3001, nodes=1)), CAPACITY)
    assert snapshot(store) == before


def test_a_pending_modify_holds_both_windows_and_does_not_conflict_with_itself(store):
    ar = store.create(new_ar(1000, 2000), CAPACITY)
    ar.pending, ar.pending_since = Operation.MODIFY, 800
    ar.pending_request = Request(start=1000, end=3000, nodes=1)
    ar.pending_allocations = [Allocation("n1", 4)]
    store.save(ar, CAPACITY)  # current and pending bookings are alternatives

    assert allocation_rows(store) == [(ar.id, "n1", 4, 1000, 2000, False),
                                      (ar.id, "n1", 4, 1000, 3000, True)]
    with pytest.raises(Conflict):  # the pending window is held for others
        store.create(new_ar(2500, 3500), CAPACITY)

    other = store.create(new_ar(3000, 4000), CAPACITY)
    ar.pending_request = Request(start=1000, end=3500, nodes=1)
    with pytest.raises(Conflict):  # a pending window must fit with others
        store.save(ar, CAPACITY)
    assert [a.id for a in store.load_all()] == [ar.id, other.id]
    assert store.get(ar.id).pending_request.end == 3000


# -- races between stores (daemons) on one database -------------------------------------


def _race(url: str, ars: list[Reservation]) -> tuple[list[int], list[Exception]]:
    """Each AR created at once from its own Store; the ids granted and the errors."""
    stores = [Store(url) for _ in ars]
    barrier = threading.Barrier(len(ars))
    granted: list[int] = []
    errors: list[Exception] = []
    lock = threading.Lock()

    def attempt(own: Store, ar: Reservation) -> None:
        try:
            own.get(1)  # connect before the start line
            barrier.wait(timeout=20)
            own.create(ar, CAPACITY)
            with lock:
                granted.append(ar.id)
        except Exception as exc:  # noqa: BLE001 - reported by the test
            with lock:
                errors.append(exc)

    threads = [threading.Thread(target=attempt, args=pair) for pair in zip(stores, ars, strict=True)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in threads), "a racer hung"
    finally:
        for own in stores:
            own.close()
    return granted, errors


def test_racing_stores_book_a_full_node_once(store):
    ars = [new_ar(1000 + 10 * i, 2000 + 10 * i) for i in range(RACERS)]
    granted, errors = _race(store.url, ars)

    assert len(granted) == 1, (granted, errors)
    assert len(errors) == RACERS - 1
    assert all(type(exc) is Conflict for exc in errors), errors
    assert granted == [1]
    assert reservation_ids(store) == [1]
    assert len(allocation_rows(store)) == 1
    assert counter(store) == 1


def test_racing_stores_book_exactly_the_slots_that_fit(store):
    fits = CAPACITY["n3"] // 3  # 2 racers of 3 slots each fit into 8
    ars = [new_ar(1000 + i, 2000 - i, allocations=(("n3", 3),)) for i in range(RACERS)]
    granted, errors = _race(store.url, ars)

    assert len(granted) == fits, (granted, errors)
    assert all(type(exc) is Conflict for exc in errors) and len(errors) == RACERS - fits, errors
    assert sorted(granted) == list(range(1, fits + 1))
    assert reservation_ids(store) == sorted(granted)
    assert [row[0] for row in allocation_rows(store)] == sorted(granted)
    assert sum(row[2] for row in allocation_rows(store)) == 3 * fits


def _process_racer(url: str, start: int, barrier, results) -> None:
    """Runs in a spawned process: one daemon's Store tries to book n1."""
    own = Store(url)
    try:
        own.get(1)
        barrier.wait(timeout=60)
        try:
            ar = own.create(new_ar(start, start + 1000), CAPACITY)
            results.put(("granted", ar.id))
        except Conflict:
            results.put(("conflict", None))
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        results.put(("error", repr(exc)))
    finally:
        own.close()


def test_racing_processes_book_a_full_node_once(store):
    processes = 4
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes)
    results = context.Queue()
    workers = [context.Process(target=_process_racer,
                               args=(store.url, 1000 + 7 * i, barrier, results))
               for i in range(processes)]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=90) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)
    assert all(worker.exitcode == 0 for worker in workers)

    assert sorted(kind for kind, _ in outcomes) == ["conflict"] * (processes - 1) + ["granted"], \
        outcomes
    assert reservation_ids(store) == [1]
    assert len(allocation_rows(store)) == 1


# -- bugs found while writing these tests ----------------------------------------------


def test_daemons_starting_together_on_a_fresh_database_all_come_up(store_url):
    """Store.__init__ runs SQLModel.metadata.create_all outside the write lock:
    on a fresh PostgreSQL database, concurrent starts race to CREATE TABLE
    and all but one die with a UniqueViolation (pg_type_typname_nsp_index)."""
    barrier = threading.Barrier(RACERS)
    stores: list[Store] = []
    errors: list[Exception] = []
    lock = threading.Lock()

    def start() -> None:
        try:
            barrier.wait(timeout=20)
            own = Store(store_url)
            with lock:
                stores.append(own)
        except Exception as exc:  # noqa: BLE001
            with lock:
                errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    try:
        assert errors == []
        assert len(stores) == RACERS
        stores[0].create(new_ar(), CAPACITY)
        assert stores[-1].get(1) is not None
    finally:
        for own in stores:
            own.close()


def test_a_finished_ar_keeps_its_allocations_when_read_back(store):
    """A finished AR frees its nodes (no held rows), but its record still
    names them after a reload: the daemon shows finished ARs (plus_status
    -r/-ne) and tears them down in the backend until they expire."""
    ar = store.create(new_ar(allocations=(("n1", 4), ("n2", 2))), CAPACITY)
    ar.state, ar.finished_time = State.EXITED, 2_000
    store.save(ar)
    assert allocation_rows(store) == []  # the nodes are free ...
    assert store.get(ar.id).allocations == [Allocation("n1", 4), Allocation("n2", 2)]  # ... but named
    assert store.load_all()[0].allocations == [Allocation("n1", 4), Allocation("n2", 2)]


def test_create_ignores_the_callers_placeholder_id_in_the_capacity_check(store):
    """create() stores the AR under a fresh id, yet its capacity check skips
    the rows of whatever id the caller's object carries, so an AR built from a
    stored one (its id still set) is checked against nothing of that AR and
    double-books its nodes. (The manager passes id 0 today, so it is latent.)"""
    first = store.create(new_ar(), CAPACITY)
    copy = replace(first, allocations=list(first.allocations))  # id 1, same node and window
    with pytest.raises(Conflict):
        store.create(copy, CAPACITY)
    assert len(allocation_rows(store)) == 1


@pytest.mark.parametrize("reader", ["load_all", "get"])
def test_reads_see_one_consistent_state_while_another_store_writes(store, reader):
    """load_all() and get() read reservation rows and allocation rows in two
    statements. On PostgreSQL (READ COMMITTED) a write committed between them
    shows up half: the AR's old window with its new nodes."""
    ar = store.create(new_ar(1000, 2000, allocations=(("n1", 4),)), CAPACITY)
    moved = replace(ar, request=Request(start=5000, end=6000, nodes=1),
                    allocations=[Allocation("n2", 4)])
    writer = Store(store.url)
    fired: list[threading.Thread] = []

    def between_statements(conn, cursor, statement, *_args) -> None:
        if not fired and "FROM reservation" in statement and "allocation" not in statement:
            thread = threading.Thread(target=writer.save, args=(moved, CAPACITY))
            fired.append(thread)
            thread.start()
            # The writer commits at once on PostgreSQL; on SQLite our read
            # holds the lock, so it waits until we finish.
            thread.join(timeout=0.5 if store.is_sqlite else 10)

    event.listen(store.engine, "after_cursor_execute", between_statements)
    try:
        got = store.load_all()[0] if reader == "load_all" else store.get(ar.id)
    finally:
        event.remove(store.engine, "after_cursor_execute", between_statements)
        if fired:
            fired[0].join(timeout=30)
        writer.close()
    assert fired, "the hook never ran"
    assert store.get(ar.id) == moved  # the write itself went through
    assert (got.start, got.allocations) in [(1000, [Allocation("n1", 4)]),
                                            (5000, [Allocation("n2", 4)])], got


def test_fixture_databases_start_empty(store):
    """Each test gets its own database: nothing from other tests is visible."""
    with Session(store.engine) as session:
        assert session.exec(select(func.count()).select_from(ReservationRow)).one() == 0
        assert session.exec(select(func.count()).select_from(AllocationRow)).one() == 0
    assert counter(store) is None
    store.create(new_ar(), CAPACITY)
    assert counter(store) == 1


def test_a_store_from_another_version_is_refused_with_the_missing_columns(store_url):
    from sqlalchemy import create_engine
    from sqlalchemy import text as sql

    from overlay.persistence.store import StoreError

    engine = create_engine(store_url)
    with engine.begin() as connection:
        connection.execute(sql("CREATE TABLE allocation (id INTEGER PRIMARY KEY, reservation_id INTEGER)"))
    engine.dispose()
    with pytest.raises(StoreError, match=r"table allocation lacks node, slots, start_time"):
        Store(store_url)


def test_a_store_made_before_res_access_gains_its_column(store_url):
    from sqlalchemy import create_engine
    from sqlalchemy import text as sql

    Store(store_url).close()
    engine = create_engine(store_url)
    with engine.begin() as connection:
        connection.execute(sql("DROP INDEX ix_allocation_within_id"))
        connection.execute(sql("ALTER TABLE allocation DROP COLUMN within_id"))
    engine.dispose()
    store = Store(store_url)
    inner = store.create(new_ar(start=1000, end=5000), CAPACITY)
    assert store.get(inner.id).allocations == [Allocation("n1", 4)]
    store.close()


OLDER_ROWS = {
    "nodes": '{"start":1000,"end":2000,"nodes":1,"users":["alice"],"slots_per_node":null,'
             '"memory_mb":null,"ncpus":null,"arch":null,"os":null,"attributes":[],"queues":[],'
             '"name":"","hard_error":false,"mail_options":"","mail_list":[],"res_access":[],'
             '"pe":"","pe_range":[],"alloc_rule":"","master_queues":[],"ckpt":"",'
             '"interactive":false,"account":""}',
    "slots": '{"start":1000,"end":2000,"nodes":0,"users":["alice"],"slots_per_node":null,'
             '"memory_mb":null,"ncpus":null,"arch":null,"os":null,"attributes":[],'
             '"queues":["all.q"],"name":"","hard_error":false,"mail_options":"","mail_list":[],'
             '"res_access":[],"pe":"mpi","pe_range":[[2,2]],"alloc_rule":"","master_queues":[],'
             '"ckpt":"","interactive":false,"account":""}'}
"""Requests as the versions before the request's kind wrote them: every
field but the kind."""


@pytest.mark.parametrize("kind", [RequestKind.NODES, RequestKind.SLOTS])
def test_an_ar_stored_before_the_kind_existed_loads_with_the_kind_its_nodes_imply(store, kind):
    from sqlalchemy import text as sql

    ar = store.create(new_ar(allocations=(("n1", 2),)), CAPACITY)
    with store.engine.begin() as connection:
        connection.execute(sql("UPDATE reservation SET request = :old WHERE id = :id"),
                           {"old": OLDER_ROWS[kind.value], "id": ar.id})
    other = Store(store.url)       # a daemon of this version on the older rows
    try:
        loaded = other.get(ar.id)
        assert loaded.request.kind is kind and loaded.request.by_slots is (kind is RequestKind.SLOTS)
        assert other.load_all()[0].request == loaded.request
        other.save(loaded, CAPACITY)
        with other.engine.connect() as connection:
            written = connection.execute(sql("SELECT request FROM reservation")).scalar_one()
        assert f'"kind":"{kind.value}"' in written and other.get(ar.id) == loaded
    finally:
        other.close()


def test_a_removed_ar_can_leave_its_usage_behind(store):
    kept = store.create(new_ar(start=1000, end=5000, allocations=(("n1", 4), ("n:2", 2))),
                        {**CAPACITY, "n:2": 2})
    gone = store.create(new_ar(start=6000, end=7000), CAPACITY)
    kept.state = State.EXITED
    store.remove(kept, kept)
    store.remove(gone)
    assert reservation_ids(store) == [] and allocation_rows(store) == []
    [used] = store.load_usage(since=4999)
    assert (used.id, used.owner, used.group, used.start, used.end) == (kept.id, "alice", "staff",
                                                                      1000, 5000)
    assert used.allocations == [Allocation("n1", 4), Allocation("n:2", 2)]
    assert used.state == State.EXITED and not used.holds_resources
    assert store.load_usage(since=5000) == []
    store.forget_usage(before=4999)
    assert len(store.load_usage(since=0)) == 1
    store.forget_usage(before=5000)
    assert store.load_usage(since=0) == []
