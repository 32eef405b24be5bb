"""Two daemons' use cases on one store (issue 30, item 1), in-process with
a clock moved by hand: each keeps the ARs in memory as a cache of the
store, takes in what the other wrote (``catch_up``, which the change feed
calls), never books a node the other holds, and a write from a copy the
other changed meanwhile is run again on the fresh copy instead of
overwriting it."""

from __future__ import annotations

import logging
import threading

import pytest
from sqlalchemy import event

from overlay.contract import plugins
from overlay.language.model import State
from overlay.persistence.store import Stale, Store
from overlay.usecases.manager import Manager
from test_manager import ALICE, BOB, HOUR, T0, Env, drained_at_once


@pytest.fixture
def pair(tmp_path):
    """(env, the first daemon's manager, the second's) on one SQLite store."""
    env = Env(tmp_path)
    backend = plugins.build_backend(env.pm, "native", env.config, env.config.backend_options(),
                                    env.claimed)
    store = Store(env.config.store_url)
    other = Manager(env.config, store, backend, env.pm, drained_at_once(store, env.config),
                    clock=env.clock)
    return env, env.manager, other


def test_an_ar_made_at_one_daemon_is_shown_and_respected_at_the_other(pair):
    env, first, second = pair
    mine = first.reserve(ALICE, env.request(nodes=5))
    assert second.catch_up() == {mine.id}
    assert [ar.id for ar in second.status()] == [mine.id]
    with pytest.raises(Exception, match="requested nodes"):
        second.reserve(BOB, env.request(nodes=1))
    assert second.catch_up() == set()                  # nothing new: nothing changes


def test_an_ar_made_at_one_daemon_a_moment_ago_is_found_at_the_other(pair):
    """Before the change feed told the other daemon (or while it cannot):
    a command naming the AR there finds it in the store. An id no AR has
    (a client may send them at will) costs one lookup by key, no catch-up,
    the refusal's re-check included."""
    env, first, second = pair
    ar = first.reserve(ALICE, env.request(nodes=1))
    [cancelled] = second.cancel(ALICE, ar.id, None)
    assert cancelled.state == State.DELETED
    first.reserve(ALICE, env.request(nodes=1))          # the store moved on since second looked
    statements = []
    event.listen(second.store.engine, "before_cursor_execute",
                 lambda _c, _cursor, statement, *_: statements.append(statement))
    for refused in (lambda: second.cancel(ALICE, 99, None), lambda: second.status(99),
                    lambda: second.commit(ALICE, 99)):
        statements.clear()
        with pytest.raises(Exception, match="AR 99 does not exist"):
            refused()
        [lookup] = [" ".join(s.split()) for s in statements if not s.startswith("BEGIN")]
        assert "FROM reservation WHERE reservation.id = " in lookup


def test_a_lookup_the_store_is_slow_to_answer_holds_up_no_one_else(pair, monkeypatch):
    """The store cut off (a connection that waits its timeout out): a client
    naming an id memory lacks waits alone, outside the use cases' lock;
    another user's commands at the daemon answer meanwhile."""
    env, first, second = pair
    mine = second.reserve(ALICE, env.request(nodes=1))
    asked, answer = threading.Event(), threading.Event()

    def slow_lookup(ar_id: int) -> bool:
        asked.set()
        assert answer.wait(30)
        return False
    monkeypatch.setattr(second.store, "holds", slow_lookup)
    outcome = []
    waiting = threading.Thread(target=lambda: outcome.append(_refusal(
        lambda: second.cancel(BOB, 99, None))))
    waiting.start()
    assert asked.wait(30)
    assert [ar.id for ar in second.status()] == [mine.id]     # not held up by the lookup
    second.modify(ALICE, mine.id, None, mine.end + HOUR, None, None, None)
    answer.set()
    waiting.join(30)
    assert outcome == ["AR 99 does not exist"]


def _refusal(use_case) -> str:
    try:
        use_case()
    except Exception as error:
        return str(error)
    return "no refusal"


def test_a_refusal_is_decided_again_on_what_the_other_daemon_stored(pair):
    """A -T modify at one daemon, then plus_commit at the other before its
    feed told it: committed, not "no operation waiting"."""
    env, first, second = pair
    ar = first.reserve(ALICE, env.request(nodes=1))
    second.catch_up()
    first.modify(ALICE, ar.id, None, ar.end + HOUR, None, None, None, transactional=True)
    committed = second.commit(ALICE, ar.id)
    assert committed.pending is None and committed.end == ar.end + HOUR
    with pytest.raises(Exception, match="no operation waiting"):
        second.commit(ALICE, ar.id)


def test_a_write_from_a_copy_the_other_changed_runs_again_on_the_fresh_copy(pair):
    env, first, second = pair
    ar = first.reserve(ALICE, env.request(nodes=1))
    second.catch_up()
    longer = first.modify(ALICE, ar.id, None, ar.end + HOUR, None, None, None)
    [cancelled] = second.cancel(ALICE, ar.id, None)    # second's copy is the old one
    assert cancelled.state == State.DELETED
    assert cancelled.end == longer.end                 # first's change kept, not overwritten
    first.catch_up()
    assert first.ars[ar.id].state == State.DELETED and first.ars[ar.id].end == longer.end


def test_a_destroy_from_a_copy_the_other_changed_is_decided_again_on_the_fresh_copy(pair):
    """A -T modify at one daemon, then plus_destroy at the other before its
    feed told it: refused for the operation waiting, as at the first (the
    kill -9 loop found the stale copy's removal going through)."""
    env, first, second = pair
    ar = first.reserve(ALICE, env.request(nodes=1))
    second.catch_up()
    first.modify(ALICE, ar.id, None, ar.end + HOUR, None, None, None, transactional=True)
    with pytest.raises(Exception, match="has an uncommitted"):
        second.destroy(ALICE, ar.id, None)
    assert env.manager.store.get(ar.id).pending is not None
    first.commit(ALICE, ar.id)
    second.destroy(ALICE, ar.id, None)                 # taken in again: now it goes
    assert env.manager.store.get(ar.id) is None


def test_an_ar_destroyed_at_one_daemon_leaves_the_others_memory_and_frees_its_nodes(pair):
    env, first, second = pair
    ar = first.reserve(ALICE, env.request(nodes=5))
    second.catch_up()
    first.destroy(ALICE, ar.id, None)
    assert second.catch_up() == {ar.id}
    assert ar.id not in second.ars
    assert len(second.reserve(BOB, env.request(nodes=5)).node_names) == 5


def _late(manager: Manager, monkeypatch) -> None:
    """``manager``'s next catch-up applies the read taken now, as a
    catch-up overtaken by others (the feed's, a retry's) does."""
    read = manager.store.changes_since(manager.seen_revision)
    monkeypatch.setattr(manager.store, "changes_since", lambda _revision: read)


def test_a_catch_up_overtaken_by_another_never_brings_back_what_that_one_removed(
        pair, monkeypatch):
    env, first, second = pair
    ar = first.reserve(ALICE, env.request(nodes=1))
    early = second.store.changes_since(second.seen_revision)    # ar as made, read first...
    first.destroy(ALICE, ar.id, None)
    second.catch_up()                                   # ...another read, applied first
    monkeypatch.setattr(second.store, "changes_since", lambda _revision: early)
    assert second.catch_up() == set()
    assert ar.id not in second.ars and second.status() == []


def test_a_catch_up_read_before_this_daemon_removed_an_ar_does_not_bring_it_back(
        pair, monkeypatch):
    env, first, second = pair
    ar = first.reserve(ALICE, env.request(nodes=1))
    second.catch_up()
    first.reserve(BOB, env.request(nodes=1))            # a write second has not taken in
    second.modify(ALICE, ar.id, None, ar.end + HOUR, None, None, None)
    _late(second, monkeypatch)                          # both, ar as second modified it
    second.destroy(ALICE, ar.id, None)
    second.catch_up()
    assert ar.id not in second.ars
    assert [a.owner for a in second.status()] == [BOB.user]


def test_a_daemon_whose_tombstones_were_pruned_reads_everything_again(pair, monkeypatch):
    env, first, second = pair
    kept = first.reserve(ALICE, env.request(nodes=1))
    gone = first.reserve(ALICE, env.request(nodes=1))
    second.catch_up()
    first.destroy(ALICE, gone.id, None)
    monkeypatch.setattr(second.store, "changes_since", lambda revision: None)
    assert second.catch_up() == {gone.id}                  # all read, only that one changed
    assert sorted(second.ars) == [kept.id]


def test_the_leaders_pass_opens_a_window_the_other_daemon_changed_meanwhile(pair, monkeypatch):
    env, first, second = pair
    ar = first.reserve(ALICE, env.request(nodes=1))
    env.lifecycle.tick()
    second.catch_up()
    changed = []
    refresh = first.refresh_nodes

    def a_write_lands_during_the_pass(publish=False):
        changed.append(second.modify(ALICE, ar.id, None, ar.end + HOUR, None, None, None))
        return refresh(publish)
    monkeypatch.setattr(first, "refresh_nodes", a_write_lands_during_the_pass)
    env.clock.now = ar.start
    env.lifecycle.tick()                                # first's copy is the old one
    opened = first.ars[ar.id]
    assert opened.state == State.RUNNING and opened.end == changed[0].end


def test_the_leaders_expiry_of_an_ar_the_other_daemon_removed_meanwhile_goes_on(
        pair, monkeypatch):
    """The leader's copy of a finished AR is behind the store (the other
    daemon destroyed it during the pass): the pass neither removes it
    again nor fails; it takes the removal in and the next pass expires the
    rest."""
    env, first, second = pair
    ars = [first.reserve(ALICE, env.request(nodes=1)) for _ in range(2)]
    for ar in ars:
        first.cancel(ALICE, ar.id, None)
    env.lifecycle.tick()
    second.catch_up()
    refresh = first.refresh_nodes

    def a_destroy_lands_during_the_pass(publish=False):
        monkeypatch.setattr(first, "refresh_nodes", refresh)
        second.destroy(ALICE, ars[0].id, None)
        return refresh(publish)
    monkeypatch.setattr(first, "refresh_nodes", a_destroy_lands_during_the_pass)
    env.clock.now += 3600                               # expiry: 3600 s
    env.lifecycle.tick()
    assert ars[0].id not in first.ars
    env.lifecycle.tick()
    assert first.ars == {} and env.manager.store.load_all() == []
    assert [removed for removed, _ in env.manager.store.changes_since(0).removed] == \
        [ar.id for ar in ars]                           # each removed once


def test_an_ar_that_other_daemons_keep_changing_is_told_once_a_minute(pair, monkeypatch, caplog):
    env, first, second = pair
    ars = [first.reserve(ALICE, env.request(nodes=1)) for _ in range(3)]
    env.lifecycle.tick()

    def always_changed_meanwhile(ar, now, reason):
        raise Stale(f"AR {ar.id} was changed in the store meanwhile")
    monkeypatch.setattr(env.lifecycle, "_advance", always_changed_meanwhile)
    env.clock.now = ars[0].start
    with caplog.at_level(logging.WARNING, logger="plus.lifecycle"):
        for _ in range(3):
            env.lifecycle.tick()
    told = [r.getMessage() for r in caplog.records if "changed at other daemons" in r.getMessage()]
    assert len(told) == 1 and "the next pass tries again" in told[0]


def _records_of(env: Env, ar_id: int) -> list[str]:
    """The types of the AR's records in the reporting file, in order."""
    records = [line.split(":") for line in env.reporting().splitlines()]
    return [r[1] for r in records if r[3 if r[1] == "new_ar" else 4] == str(ar_id)]


def test_a_retried_or_refused_use_case_reports_only_what_committed(pair):
    env, first, second = pair
    ar = first.reserve(ALICE, env.request(nodes=1))
    second.catch_up()
    first.modify(ALICE, ar.id, None, ar.end + HOUR, None, None, None)
    with pytest.raises(Exception, match="requested nodes"):
        first.modify(ALICE, ar.id, None, None, None, 9, None)        # refused: no record
    second.cancel(ALICE, ar.id, None)       # its first attempt meets Stale, the second commits
    assert _records_of(env, ar.id) == ["new_ar", "ar_attribute", "ar_attribute", "ar_log",
                                       "ar_acct", "ar_log"]


def test_the_use_of_an_ar_removed_at_one_daemon_counts_at_the_other(pair, monkeypatch):
    """Usage caps and quotas read the history of ended ARs: an AR cancelled
    (or expired) at the leader counts at every daemon, also at one that
    was too far behind and read everything again."""
    env, first, second = pair
    ran = first.reserve(ALICE, env.request(start=T0 + HOUR, hours=4, nodes=2, slots_per_node=1))
    assert second.catch_up() == {ran.id}
    env.clock.now = T0 + 2 * HOUR
    env.lifecycle.tick()
    first.cancel(ALICE, ran.id, None)                   # ran 1 h on 2 nodes
    env.clock.now = T0 + 30 * HOUR                      # gone from view: removed
    env.lifecycle.tick()
    assert ran.id not in first.ars
    second.catch_up()
    assert ran.id not in second.ars
    assert [(used.id, used.start, used.end) for used in second.history] == \
        [(ran.id, T0 + HOUR, T0 + 2 * HOUR)]
    monkeypatch.setattr(second.store, "changes_since", lambda revision: None)
    second.history = []
    second.catch_up()                                   # behind the tombstones: reads it all
    assert [used.id for used in second.history] == [ran.id]
