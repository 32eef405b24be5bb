"""The manager believes only what the store committed: a write that fails
(a full disk, a lost race) leaves memory, the planner and the reporting
file as they were, and the command says so in one line; a failure after
the commit (a plugin, the reporting file) never turns a stored change into
a reported failure."""

from __future__ import annotations

import os

import pytest

from overlay.contract.hookspecs import hookimpl
from overlay.language.model import Operation, State
from overlay.persistence.store import Store, StoreUnavailable
from test_manager import ALICE, HOUR, T0, Env


class FailingWrites:
    """Makes the store's writes fail while ``on`` is set, as a full disk does."""

    def __init__(self, store: Store, monkeypatch) -> None:
        self.on = False
        for name in ("create", "save", "remove"):
            original = getattr(store, name)
            monkeypatch.setattr(store, name, self._wrap(original))

    def _wrap(self, original):
        def write(*args, **kwargs):
            if self.on:
                raise StoreUnavailable("no space left in /state: the store could not be written; "
                                       "nothing was changed")
            return original(*args, **kwargs)
        return write


@pytest.fixture
def env(tmp_path, monkeypatch):
    made = Env(tmp_path)
    made.failing = FailingWrites(made.store, monkeypatch)
    return made


def _snapshot(env: Env) -> tuple:
    manager = env.manager
    return ({ar_id: (ar.state, ar.pending, ar.start, ar.end, tuple(ar.node_names))
             for ar_id, ar in manager.ars.items()},
            manager.available_nodes(T0 + HOUR, T0 + 2 * HOUR),
            env.reporting())


@pytest.mark.parametrize("operation", [
    lambda env, ar: env.manager.cancel(ALICE, ar.id, None),
    lambda env, ar: env.manager.cancel(ALICE, ar.id, None, transactional=True),
    lambda env, ar: env.manager.destroy(ALICE, ar.id, None),
    lambda env, ar: env.manager.modify(ALICE, ar.id, start=T0 + 3 * HOUR, end=None, duration=None,
                                       nodes=None, users=None),
    lambda env, ar: env.manager.modify(ALICE, ar.id, start=None, end=None, duration=None,
                                       nodes=3, users=None, transactional=True),
    lambda env, ar: env.reserve(nodes=1),
], ids=["cancel", "cancel -T", "destroy", "modify", "modify -T", "reserve"])
def test_a_failed_write_changes_nothing_in_memory(env, operation):
    ar = env.reserve(nodes=2)
    before = _snapshot(env)
    env.failing.on = True
    with pytest.raises(StoreUnavailable, match="^no space left in /state"):
        operation(env, ar)
    assert _snapshot(env) == before
    env.failing.on = False
    operation(env, ar)  # and it works once the disk has room again
    assert _snapshot(env) != before


def test_a_failed_commit_leaves_the_ar_pending(env):
    ar = env.reserve(nodes=1, transactional=True)
    env.failing.on = True
    with pytest.raises(StoreUnavailable):
        env.manager.commit(ALICE, ar.id)
    assert env.manager.ars[ar.id].pending == Operation.RESERVE
    assert env.manager.ars[ar.id].state == State.PENDING
    env.failing.on = False
    assert env.manager.commit(ALICE, ar.id).state == State.WAITING


def test_a_failed_transition_is_retried_by_the_next_pass(env):
    ar = env.reserve(nodes=1)
    env.clock.now += HOUR + 1
    env.failing.on = True
    with pytest.raises(StoreUnavailable):
        env.lifecycle.tick()
    assert env.manager.ars[ar.id].state == State.WAITING
    env.failing.on = False
    env.lifecycle.tick()
    assert env.manager.ars[ar.id].state == State.RUNNING
    assert env.restart().ars[ar.id].state == State.RUNNING


class BrokenPlugin:
    @hookimpl
    def plus_reservation_granted(self, reservation):
        raise RuntimeError("the plugin's own bug")

    @hookimpl
    def plus_reservation_cancelled(self, reservation):
        raise RuntimeError("the plugin's own bug")


def test_failures_after_the_commit_do_not_fail_the_command(env, caplog):
    env.pm.register(BrokenPlugin())
    os.makedirs(env.dir / "state" / "reporting")  # the reporting file cannot be opened
    ar = env.reserve(nodes=1)
    assert env.stored_ids() == [ar.id]
    [cancelled] = env.manager.cancel(ALICE, ar.id, None)
    assert cancelled.state == State.DELETED
    assert env.restart().ars[ar.id].state == State.DELETED
    assert "plugin hook plus_reservation_granted failed" in caplog.text
    assert "cannot write the reporting file" in caplog.text
