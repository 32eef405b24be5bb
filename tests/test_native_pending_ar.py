"""plus_qsub -ar on an AR created with plus_reserve -T and not yet committed:
the scheduler does not hold it yet, so plus_qsub asks the core and says the
AR awaits plus_commit, instead of saying it does not exist."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from overlay.language.model import Allocation, Request, Reservation, ReservationError, State
from overlay_native import service
from overlay_native.resources.window import ReservedWindow
from overlay_native.service import carried_out
from overlay_native.submit import SubmitError
from test_native_scheduler import SMALL, T, World

CALLER = SimpleNamespace(uid=5000, user="alice", groups=["staff"], is_manager=False)
JOB = {"command": ["sleep", "10"], "binary": True, "ar": 5}


def core(state: State):
    """The core's AR query (plus_status -r), knowing AR 5 in ``state``."""
    def ar_status(ar_id: int) -> list[Reservation]:
        if ar_id != 5:
            raise ReservationError(f"AR {ar_id} does not exist")
        return [Reservation(5, "alice", "staff", Request(T + 100, T + 200, 1), state, T,
                            [Allocation("a", 1)], ("alice",))]
    return ar_status


def test_a_pending_ar_takes_no_jobs_until_committed(tmp_path):
    world = World(tmp_path, SMALL)
    submit = carried_out(world.scheduler, core(State.PENDING))["job_submit"]
    with pytest.raises(SubmitError, match=r"^AR 5 is pending: it takes jobs once plus_commit -r 5 "
                                          r"commits it$"):
        submit(CALLER, JOB)
    assert world.scheduler.jobs == {}


def test_other_ars_are_left_to_the_scheduler(tmp_path, monkeypatch):
    monkeypatch.setattr(service, "WINDOW_WAIT", 0.05)
    world = World(tmp_path, SMALL)
    for state in (State.WAITING, State.RUNNING):
        submit = carried_out(world.scheduler, core(state))["job_submit"]
        with pytest.raises(SubmitError, match="advance reservation 5 does not exist"):
            submit(CALLER, JOB)    # the scheduler holds no window for it in this test
    submit = carried_out(world.scheduler, core(State.PENDING))["job_submit"]
    with pytest.raises(SubmitError, match="advance reservation 6 does not exist"):
        submit(CALLER, {**JOB, "ar": 6})


def test_a_job_of_an_ar_granted_a_moment_ago_waits_for_the_enforcer_to_give_its_window(
        tmp_path, monkeypatch):
    """The core answered plus_reserve before the enforcer's thread gave the
    scheduler the AR: the job waits for it instead of being refused."""
    world = World(tmp_path, SMALL)
    waiting, await_window = threading.Event(), world.scheduler.await_window

    def awaited(ar_id: int, seconds: float) -> None:
        waiting.set()
        await_window(ar_id, seconds)
    monkeypatch.setattr(world.scheduler, "await_window", awaited)
    submit = carried_out(world.scheduler, core(State.WAITING))["job_submit"]
    replied = []
    thread = threading.Thread(target=lambda: replied.append(submit(CALLER, JOB)))
    thread.start()
    assert waiting.wait(timeout=60)
    world.scheduler.set_windows([ReservedWindow(5, T + 100, T + 200, {"a": 1}, ("alice",))])
    thread.join(timeout=60)
    assert replied and [job.ar for job in world.scheduler.jobs.values()] == [5]
