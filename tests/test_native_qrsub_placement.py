"""qrsub's slot placement on the native backend answers the same at every
daemon (issue 30): a standby, whose scheduler runs nothing, places around
the leader's running jobs (read from the store) and around every AR the
store holds (``Backend.ars_changed``, which the Manager calls as its cache
takes ARs in), not around what its own idle scheduler holds."""

from __future__ import annotations

from dataclasses import replace

import pytest

from overlay.language.model import Allocation, NoCapacity, Request, Reservation, State
from overlay_native.backend import NativeBackend
from overlay_native.jobstore import JobStore
from overlay_native.resources.cluster import Cluster
from overlay_native.scheduling.scheduler import Scheduler
from test_native_scheduler import ALICE, SMALL, T, World

WINDOW = (T + 600, T + 4200)
ALICE_ACCESS = [("alice", ("alice",))]


def _standby(world: World, tmp_path) -> NativeBackend:
    """A second daemon's backend on the world's store, standing by."""
    cluster = Cluster(str(world.dir / "cluster.yaml"), False, duration_offset=0)
    scheduler = Scheduler(cluster, JobStore(world.url), world.hosts,
                          str(tmp_path / "standby-accounting"), str(tmp_path / "standby-schedule"),
                          0, world.clock)
    scheduler.stand_by()
    return NativeBackend(cluster, scheduler)


def _placed(backend: NativeBackend) -> list[tuple[str, int]]:
    request = Request(start=WINDOW[0], end=WINDOW[1], nodes=0, kind="slots")
    allocations, _ = backend.place_slots(request, ("alice", ("alice",)), ALICE_ACCESS)
    return [(a.node, a.slots) for a in allocations]


def _qrsub_ar(ar_id: int, node: str) -> Reservation:
    request = Request(start=WINDOW[0], end=WINDOW[1], nodes=0, kind="slots")
    return Reservation(ar_id, "bob", "bob", request, State.WAITING, T,
                       [Allocation(node, 1, queue="all.q")], ("bob",))


def test_a_standby_places_around_the_leaders_running_jobs_and_the_stores_ars(tmp_path):
    world = World(tmp_path, SMALL)
    job = world.submit(ALICE, "x", "100")            # no h_rt: it holds node a past the window
    world.at(T)
    assert world.state(job) == "r"
    standby = _standby(world, tmp_path)
    assert standby.scheduler.jobs == {}               # its own scheduler runs nothing
    assert _placed(standby) == [("b", 1)]
    standby.ars_changed([_qrsub_ar(7, "b")], [])      # granted at another daemon
    with pytest.raises(NoCapacity):
        _placed(standby)
    standby.ars_changed([], [7])                      # cancelled
    assert _placed(standby) == [("b", 1)]
    standby.ars_changed([_qrsub_ar(8, "b")], [])
    standby.ars_changed([replace(_qrsub_ar(8, "b"), state=State.EXITED)], [])  # holds nothing
    assert _placed(standby) == [("b", 1)]
    standby.scheduler.store.close()
