"""The Backend contract holds: every method states how the core calls it,
the required ones are abstract and the optional ones have a default, the
core calls each one under the lock its contract names, and the queue
backends run no batch-system command in a call the contract says does not
ask (the use cases' calls under the Manager's lock read the inventory)."""

from __future__ import annotations

import inspect
import time

import pytest

from overlay.contract.backend import (
    CONTRACT,
    ENFORCER,
    MANAGER,
    NONE,
    SERVICE,
    Backend,
    Held,
    Inventory,
    Job,
)
from overlay.daemon.main import Service
from overlay.kit.remote import CommandError, Runner
from overlay.language.model import NoCapacity, Request, State, Unsupported
from overlay_sge import settings as sge_settings
from overlay_sge.backend import SgeBackend
from overlay_sge.gridengine import GridEngine
from overlay_sge.ledger import Ledger as SgeLedger
from overlay_slurm import settings as slurm_settings
from overlay_slurm.backend import SlurmBackend
from overlay_slurm.ledger import Ledger as SlurmLedger
from overlay_slurm.slurm import Slurm
from overlay_torque import settings as torque_settings
from overlay_torque.backend import TorqueBackend
from overlay_torque.ledger import Ledger as TorqueLedger
from overlay_torque.torque import Torque
from sge_cluster import reservation
from test_manager import ALICE, HOUR, T0, Env


def _methods() -> set[str]:
    return {name for name, value in vars(Backend).items()
            if inspect.isfunction(value) and not name.startswith("_")}


def test_every_backend_method_states_its_contract():
    assert set(CONTRACT) == _methods()


def test_no_call_of_a_use_case_may_ask_the_batch_system():
    """A call under the Manager's lock holds up every command: it reads
    what the backend keeps or the inventory, and runs no command."""
    assert [name for name, contract in CONTRACT.items()
            if contract.held is MANAGER and contract.asks] == []
    assert {name for name, contract in CONTRACT.items() if contract.asks} == {
        name for name, contract in CONTRACT.items() if contract.held is ENFORCER} | {
        "submit_claimed", "delete_job", "start"}


class Refusing(Runner):
    """A batch system that answers nothing: each command is noted and fails."""

    where = "nowhere"

    def __init__(self) -> None:
        super().__init__()
        self.commands: list[tuple[str, ...]] = []

    def run(self, argv, *, as_user=None, stdin=None, timeout=None):
        self.commands.append(tuple(argv))
        raise CommandError(f"{argv[0]}: not to be run here")

    def upload(self, content):
        raise CommandError("nothing is uploaded here")

    @property
    def privileged(self) -> bool:
        return True


def _queue_backends(tmp_path, runner: Runner) -> list[Backend]:
    return [SgeBackend(GridEngine(runner), SgeLedger(str(tmp_path / "sge.json")),
                       sge_settings.load({"conflict": "avoid"}), 60),
            TorqueBackend(Torque(runner), TorqueLedger(str(tmp_path / "torque.json")),
                          torque_settings.load({"conflict": "avoid"}), 60),
            SlurmBackend(Slurm(runner), SlurmLedger(str(tmp_path / "slurm.json")),
                         slurm_settings.load({"conflict": "avoid"}))]


NOW = int(time.time())
SEEN = Inventory((Job("7", "bob", ("n1",), None, NOW + 2 * HOUR, NOW - 60),
                  Job("8", "bob", ("n2",)), Job("9", "carol", ("n3",), 4, None, NOW)), NOW - 5)
LATER = Request(NOW + HOUR, NOW + 2 * HOUR, 1)
CALLS = {"blocked_nodes": (LATER, SEEN), "canonical": (LATER,),
         "place_slots": (LATER, ("alice", ()), []), "job_holdings": (NOW, SEEN),
         "job_bars": (NOW, SEEN), "jobs": (NOW, SEEN), "submit_hint": (reservation(5, ("n1",)),), "lingering": (),
         "delays": (reservation(5, ("n1",)),), "ars_changed": ([reservation(5, ("n1",))], [])}
"""Each call the contract says asks nothing that a use case (under the
Manager's lock) or the service makes, with its arguments."""


def _commands_run(backend: Backend, runner: Refusing) -> tuple[list[tuple[str, ...]], set[str]]:
    """The commands ``backend`` ran in CALLS, and the calls that failed."""
    runner.commands.clear()
    failed = set()
    for name, arguments in CALLS.items():
        try:
            getattr(backend, name)(*arguments)
        except Exception:
            failed.add(name)
    return list(runner.commands), failed


def test_the_queue_backends_answer_the_use_cases_from_the_inventory(tmp_path):
    """No command runs in any call that asks nothing, and ``conflict:
    avoid`` still names the job in the way, from the inventory."""
    assert set(CALLS) == {name for name, contract in CONTRACT.items() if not contract.asks and
                          (contract.held is MANAGER or SERVICE in contract.by)}
    runner = Refusing()
    for backend in _queue_backends(tmp_path, runner):
        assert _commands_run(backend, runner) == ([], {"place_slots"})   # node ARs only
        blocked = backend.blocked_nodes(LATER, SEEN)
        assert set(blocked) == {"n1", "n2"}
        assert blocked["n1"].endswith("busy: job 7 of bob runs past the start")
        holdings, how = backend.job_holdings(NOW, SEEN)
        assert {held.node for held in holdings} == {"n1", "n2"} and "observed 5 s ago" in how
        assert how.startswith("estimated from the run time limits of 2 running job(s)") and \
            how.endswith("and the ARs; queued jobs are not counted")     # QUERY's OtherInfo
        assert backend.job_start(LATER, ["n1", "n2"], ("alice", ())) is None   # the core's estimate
        assert [bar.start for bar in backend.job_bars(NOW, SEEN)] == [NOW - 60, NOW, NOW]
        listed = backend.jobs(NOW, SEEN)                                 # GET /jobs
        assert [(job.id, job.owner, job.state, job.ar) for job in listed] == [
            ("7", "bob", "r", None), ("8", "bob", "r", None), ("9", "carol", "r", 4)]
        with pytest.raises(Unsupported, match=f"the {backend.name} backend does not delete "
                                              f"jobs.*with the batch system's own "
                                              f"{backend.delete_command}"):
            backend.delete_job("7", "bob", (), False)
        assert runner.commands == []


def test_a_call_that_asks_the_batch_system_under_the_managers_lock_is_caught(tmp_path):
    """The check above can fail: Grid Engine's blocked_nodes as it was, with
    a fresh qstat."""
    runner = Refusing()
    backend = _queue_backends(tmp_path, runner)[0]
    backend.blocked_nodes = lambda request, inventory: backend.observe(fresh=True)
    commands, failed = _commands_run(backend, runner)
    assert commands and commands[0][0].endswith("qstat") and "blocked_nodes" in failed


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
    with pytest.raises(NoCapacity, match="run jobs"):        # this cluster's hosts run none
        service.handle(ALICE, "query", {"start": T0, "end": T0 + HOUR, "nodes": 1})
    env.clock.now = T0 + 120
    env.lifecycle.tick()
    assert env.manager.ars[ar.id].state == State.RUNNING
    env.manager.cancel(ALICE, pending.id, None)
    service.handle(ALICE, "status", {})           # a deleted AR: are its jobs lingering?
    env.manager.destroy(ALICE, ar.id, None)
    env.lifecycle.tick()

    wrong = {(name, held) for name, held in recording.calls
             if held != ({CONTRACT[name].held} - {NONE})}
    assert wrong == set()
    reached = {name for name, _ in recording.calls}
    assert reached >= {"nodes", "running_jobs", "prepare", "activate", "release", "teardown",
                       "modify", "blocked_nodes", "reconcile", "health", "job_start",
                       "job_bars", "submit_hint", "lingering", "delays"}
