"""Two daemons' use cases on one store (issue 30, item 1), in-process with
a clock moved by hand: each keeps the ARs in memory as a cache of the
store, takes in what the other wrote (``catch_up``, which the change feed
calls), never books a node the other holds, and a write from a copy the
other changed meanwhile is run again on the fresh copy instead of
overwriting it."""

from __future__ import annotations

import pytest

from overlay.contract import plugins
from overlay.language.model import State
from overlay.persistence.store import Store
from overlay.reporting.accounting import ReportingWriter
from overlay.usecases.manager import Manager
from test_manager import ALICE, BOB, HOUR, Env


@pytest.fixture
def pair(tmp_path):
    """(env, the first daemon's manager, the second's) on one SQLite store."""
    env = Env(tmp_path)
    backend = plugins.build_backend(env.pm, "native", env.config, env.config.backend_options(),
                                    env.claimed)
    other = Manager(env.config, Store(env.config.store_url), backend, env.pm,
                    ReportingWriter(env.config.accounting_path), clock=env.clock)
    return env, env.manager, other


def test_an_ar_made_at_one_daemon_is_shown_and_respected_at_the_other(pair):
    env, first, second = pair
    mine = first.reserve(ALICE, env.request(nodes=5))
    assert second.catch_up() == {mine.id}
    assert [ar.id for ar in second.status()] == [mine.id]
    with pytest.raises(Exception, match="requested nodes"):
        second.reserve(BOB, env.request(nodes=1))
    assert second.catch_up() == set()                  # nothing new: nothing changes


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


def test_an_ar_destroyed_at_one_daemon_leaves_the_others_memory_and_frees_its_nodes(pair):
    env, first, second = pair
    ar = first.reserve(ALICE, env.request(nodes=5))
    second.catch_up()
    first.destroy(ALICE, ar.id, None)
    assert second.catch_up() == {ar.id}
    assert ar.id not in second.ars
    assert len(second.reserve(BOB, env.request(nodes=5)).node_names) == 5


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
