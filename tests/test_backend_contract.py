"""The Backend contract holds: every method states how the core calls it,
the required ones are abstract and the optional ones have a default, and
the core calls each one under the lock its contract names."""

from __future__ import annotations

import inspect

from overlay.contract.backend import CONTRACT, ENFORCER, MANAGER, NONE, Backend, Held
from overlay.daemon.main import Service
from overlay.language.model import State
from test_manager import ALICE, HOUR, T0, Env


def _methods() -> set[str]:
    return {name for name, value in vars(Backend).items()
            if inspect.isfunction(value) and not name.startswith("_")}


def test_every_backend_method_states_its_contract():
    assert set(CONTRACT) == _methods()


def test_the_required_methods_are_abstract_and_the_optional_ones_have_a_default():
    required = {name for name, contract in CONTRACT.items() if not contract.optional}
    assert required == set(Backend.__abstractmethods__)
    for name in set(CONTRACT) - required:
        assert not getattr(vars(Backend)[name], "__isabstractmethod__", False), name


class Recording:
    """A backend that notes, for each call, which of the core's locks the
    calling thread holds."""

    def __init__(self, backend: Backend, locks: dict[Held, object]) -> None:
        self.backend = backend
        self.locks = locks
        self.calls: list[tuple[str, frozenset[Held]]] = []

    def __getattr__(self, name: str):
        found = getattr(self.backend, name)
        if name not in CONTRACT:
            return found

        def call(*args, **kwargs):
            held = frozenset(which for which, lock in self.locks.items() if lock._is_owned())
            self.calls.append((name, held))
            return found(*args, **kwargs)
        return call


def test_the_core_calls_each_method_under_the_lock_its_contract_names(tmp_path):
    env = Env(tmp_path)
    recording = Recording(env.backend, {MANAGER: env.manager.lock,
                                        ENFORCER: env.manager.enforcer.lock})
    env.manager.backend = recording
    service = Service(env.manager, lambda ars: None, lambda: None)
    env.lifecycle.tick()
    ar = env.reserve(start=T0 + 60, hours=2)
    pending = env.reserve(transactional=True, start=T0 + 3 * HOUR)
    env.manager.commit(ALICE, pending.id)
    env.settle()                                  # as the enforcer's thread does
    env.manager.modify(ALICE, ar.id, None, T0 + 3 * HOUR, None, None, None)
    service.handle(ALICE, "status", {"id": ar.id})
    service.handle(ALICE, "calendar", {"start": T0, "end": T0 + 4 * HOUR})
    service.handle(ALICE, "query", {"start": T0, "end": T0 + HOUR, "nodes": 1})
    env.clock.now = T0 + 120
    env.lifecycle.tick()
    assert env.manager.ars[ar.id].state == State.RUNNING
    env.manager.cancel(ALICE, pending.id, None)
    env.manager.destroy(ALICE, ar.id, None)
    env.lifecycle.tick()

    wrong = {(name, held) for name, held in recording.calls
             if held != ({CONTRACT[name].held} - {NONE})}
    assert wrong == set()
    reached = {name for name, _ in recording.calls}
    assert reached >= {"nodes", "running_jobs", "prepare", "activate", "release", "teardown",
                       "modify", "blocked_nodes", "reconcile", "health", "job_holdings",
                       "job_bars", "submit_hint", "lingering", "delays"}
