"""The store's revisions, on SQLite and on PostgreSQL (the ``store``
fixture of conftest.py): every write of ARs takes the next one, a daemon
that saw revision N learns all that changed after it, a write derived from
a copy another write has since changed is refused rather than overwriting
it, and PostgreSQL says each revision on its notification channel."""

from __future__ import annotations

import select as selector
import time
from dataclasses import replace

import psycopg
import pytest
from sqlalchemy import make_url

from overlay.contract.backend import Inventory, Job
from overlay.language.model import Node, State
from overlay.persistence import inventory
from overlay.persistence.inventory import NodesUnknown, PublishedInventory
from overlay.persistence.store import TOMBSTONE_SECONDS, Stale, Store, channel_of
from overlay.usecases.activity import Activity
from test_store import CAPACITY, new_ar, snapshot


def test_each_write_takes_the_next_revision_and_changes_since_tells_what_changed(store):
    start = store.revision()
    first = store.create(new_ar(), CAPACITY)
    second = store.create(new_ar(allocations=(("n2", 4),)), CAPACITY)
    assert (first.revision, second.revision) == (start + 1, start + 2)
    changes = store.changes_since(start)
    assert changes.revision == start + 2 and changes.removed == []
    assert [ar.id for ar in changes.written] == [first.id, second.id]
    moved = replace(first, state=State.RUNNING)
    store.save(moved)
    store.remove(second, used=second)                # its use is kept: told with it
    later = store.changes_since(start + 2)
    assert later.revision == start + 4
    assert [(ar.id, ar.state, ar.revision) for ar in later.written] == \
        [(first.id, State.RUNNING, start + 3)]
    assert later.removed == [(second.id, start + 4)]
    assert [(ar_id, used.end, used.node_names) for ar_id, used in later.used.items()] == \
        [(second.id, second.end, ["n2"])]
    assert store.changes_since(later.revision) == (later.revision, [], [], {})
    revision, everything = store.snapshot()
    assert revision == later.revision and [ar.id for ar in everything] == [first.id]


def test_a_write_from_a_copy_changed_meanwhile_is_refused_and_changes_nothing(store):
    mine = store.create(new_ar(), CAPACITY)
    theirs = replace(mine, message="changed at another daemon")
    store.save(theirs)                                  # another daemon got there first
    before = snapshot(store)
    with pytest.raises(Stale, match=f"AR {mine.id} was changed in the store meanwhile"):
        store.save(replace(mine, state=State.DELETED))
    assert snapshot(store) == before
    with pytest.raises(Stale, match=f"AR {mine.id} was changed in the store meanwhile"):
        store.remove(mine)                              # nor removed over what it did not see
    assert snapshot(store) == before
    store.remove(theirs)
    with pytest.raises(Stale, match=f"AR {mine.id} was removed from the store meanwhile"):
        store.save(theirs)
    with pytest.raises(Stale, match=f"AR {mine.id} was removed from the store meanwhile"):
        store.remove(theirs)                            # removed once, with one tombstone
    assert store.changes_since(0).removed == [(mine.id, theirs.revision + 1)]


def test_a_daemon_behind_the_kept_tombstones_is_told_to_read_everything(store, monkeypatch):
    ar = store.create(new_ar(), CAPACITY)
    behind = store.revision()
    store.remove(ar)
    later = time.time() + TOMBSTONE_SECONDS + 60
    monkeypatch.setattr(time, "time", lambda: later)
    other = store.create(new_ar(), CAPACITY)
    store.remove(other)                                 # a week on: the first tombstone goes
    assert store.changes_since(behind) is None
    assert store.changes_since(store.revision()) is not None


def test_postgresql_says_each_revision_on_its_channel(store_url):
    if store_url.startswith("sqlite"):
        pytest.skip("SQLite has no notifications: one daemon per SQLite store")
    store = Store(store_url)
    url = make_url(store_url).set(drivername="postgresql")
    with psycopg.connect(url.render_as_string(hide_password=False), autocommit=True) as listener:
        listener.execute(f'LISTEN "{store.channel}"')
        ar = store.create(new_ar(), CAPACITY)
        heard = []
        deadline = time.monotonic() + 60
        while not heard and time.monotonic() < deadline:
            selector.select([listener.fileno()], [], [], 1)
            heard = [note.payload for note in listener.notifies(timeout=0, stop_after=1)]
    assert heard == [str(ar.revision)]
    assert store.channel != channel_of(store_url.partition("?")[0])      # one per schema


def _by_name(nodes) -> list[Node]:
    return sorted(nodes, key=lambda node: node.name)


def test_the_leaders_inventory_is_written_where_it_changed_and_taken_in_by_the_others(
        store_url, monkeypatch):
    """Only the nodes and jobs that came, changed or went are written, each
    write the inventory's next revision (a node's load alone only past its
    step); another daemon reads only those rows, and a daemon behind the
    pruned tombstones reads every row again. On SQLite (one daemon) nothing
    is written."""
    n1, n2 = Node("n1", 4, properties={"gpu": "yes"}, queues=("all.q",)), Node("n2", 2)
    if store_url.startswith("sqlite"):
        store = Store(store_url)
        PublishedInventory(store).publish([n1], [Job("1", "bob", ("n1",))], 100)
        assert PublishedInventory(store).take() is False
        return
    leader, other = PublishedInventory(Store(store_url)), PublishedInventory(Store(store_url))
    one, two = Job("1", "bob", ("n1", "n2"), None, 500, 90), Job("2", "carol", ("n3",))
    with pytest.raises(NodesUnknown, match="nodes are not known at this daemon yet: no leader"):
        other.nodes_known()                            # before any leader published
    leader.publish([n1, n2], [one, two], 100)
    assert other.take() and set(other.current.jobs) == {one, two}
    assert _by_name(other.current.nodes) == [n1, n2]
    assert other.current.observed_at == 100 and other.revision == leader.revision == 1
    other.nodes_known()
    written = []
    real = PublishedInventory._prune
    monkeypatch.setattr(PublishedInventory, "_prune",
                        staticmethod(lambda *args: written.append(args[1]) or real(*args)))
    loaded = replace(n1, load=0.4)                     # the load moved, within its step
    leader.publish([n2, loaded], [two, one], 130)      # the same: only the time is new
    assert written == [] and leader.revision == 1
    assert other.take() and other.current.observed_at == 130 and other.take() is False
    assert leader.current.nodes == (n2, loaded)        # the leader holds what it observed
    down = replace(n1, alive=False, queue_states=(("all.q", "disabled"),), load=0.45)
    leader.publish([down, n2], [one, two], 140)        # n1 went down: its row alone
    assert written == [2] and other.take() and _by_name(other.current.nodes) == [down, n2]
    leader.publish([down, replace(n2, load=0.6)], [one, two], 150)  # past the step: written
    assert written == [2, 3] and other.take() and replace(n2, load=0.6) in other.current.nodes
    moved = replace(one, runtime_limit_end=900)
    leader.publish([down], [moved], 160)               # n2 gone, a job gone, one changed
    assert written == [2, 3, 4] and other.take() and other.current.jobs == (moved,)
    assert other.current.nodes == (down,) and other.revision == 4
    monkeypatch.setattr(inventory, "TOMBSTONES", 1)
    leader.publish([down], [], 190)                    # gone; its older tombstone pruned
    leader.publish([n2], [two], 200)
    behind = PublishedInventory(Store(store_url))
    behind.revision = 1                                # as a daemon stopped since revision 1
    behind.current = Inventory((one,), 100)
    assert behind.take() and behind.current == Inventory((two,), 200, (n2,))


def test_a_nodes_idle_time_is_the_leaders_at_every_daemon(store_url):
    """LongestIdleTime and the policies' idle time: a daemon that started
    after the node fell idle takes the leader's time, not its own first
    look; the row is written again only when the node's jobs change it."""
    if store_url.startswith("sqlite"):
        return                                         # one daemon: nothing published
    leader, other = PublishedInventory(Store(store_url)), PublishedInventory(Store(store_url))
    leading, standing_by = Activity(), Activity()

    def observe(jobs: list[Job], now: int) -> None:
        leader.publish(leading.apply([Node("n1")], jobs, now), jobs, now)
        other.take()

    def seen_by_the_other(now: int) -> Node:
        (node,) = standing_by.apply(other.current.nodes, other.current.jobs, now)
        return node

    observe([], 100)
    assert seen_by_the_other(500).idle_since == 100
    observe([], 400)
    assert leader.revision == 1                        # still idle since 100: nothing written
    observe([Job("1", "bob", ("n1",))], 600)
    assert (seen_by_the_other(650).idle_since, seen_by_the_other(650).running_jobs) == (0, 1)
    observe([], 700)
    assert seen_by_the_other(900).idle_since == 700 and leader.revision == 3
