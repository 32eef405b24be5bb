"""The native scheduling pass and the trace replay: seed 001's starvation
example, FCFS/EASY/conservative on small traces with outcomes worked out
by hand, jobs that outrun their request, and SWF reading."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

import pytest

from overlay_native.scheduling.dispatch import CONSERVATIVE, EASY, FCFS, Policy, SlotPool, dispatch
from overlay_native.simulation import replay, swf


@dataclass
class J:
    id: str
    slots: int
    duration: int
    reserve: bool = False


def test_seed_001_starvation_example():
    """A needs the whole machine; the B(i) stream would starve it without a
    reservation; with one, A starts as soon as the running B ends and only
    a job short enough to end before that (C) is backfilled."""
    def machine() -> SlotPool:
        pool = SlotPool(2)
        pool.book(J("B1", 1, 10), 1, 5)          # B(1) runs 5..15; B(0) just ended at 10
        return pool
    a, b2, c = J("A", 2, 10, reserve=True), J("B2", 1, 10), J("C", 1, 5)
    without = dispatch([a, b2, c], machine(), 10, Policy(0))
    assert [job.id for job, _ in without.started] == ["B2"] and not without.reserved   # A starves
    pool = machine()
    easy = dispatch([a, b2, c], pool, 10, EASY)
    assert [job.id for job, _ in easy.started] == ["C"]
    assert [(job.id, start) for job, start, _ in easy.reserved] == [("A", 15)]
    assert pool.profile.peak(15, 25) == 0           # the reservation is planned afresh each pass
    assert pool.profile.peak(10, 15) == 2           # B1 and the backfilled C


def trace_file(tmp_path, records: list[tuple[int, int, int, int, int]], procs: int = 4) -> str:
    """SWF with (id, submit, run, slots, requested time) records."""
    lines = ["; Version: 2.2", f"; MaxProcs: {procs}"]
    lines += [f"{i} {s} -1 {r} {n} -1 -1 {n} {t} -1 1 1 1 -1 -1 -1 -1 -1" for i, s, r, n, t in records]
    path = tmp_path / "t.swf"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


# J1 takes 3 of 4 slots; J2 wants all 4; J3 is short enough to end before
# J2 can start, J4 is not.
JOBS = [(1, 0, 100, 3, 100), (2, 0, 100, 4, 100), (3, 0, 50, 1, 50), (4, 0, 150, 1, 150)]


@pytest.mark.parametrize("policy,waits", [
    (FCFS, [0, 100, 200, 200]),             # strict order: J3, J4 behind J2
    (EASY, [0, 100, 0, 200]),               # J2 reserved at 100, J3 backfilled
    (CONSERVATIVE, [0, 100, 0, 200]),       # J4 reserved too, after J2
])
def test_policies_on_a_small_trace(tmp_path, policy, waits):
    report = replay.simulate(swf.read(trace_file(tmp_path, JOBS)), policy)
    assert report.jobs == 4 and report.mean_wait == sum(waits) / 4 and report.max_wait == max(waits)
    runs = [100, 100, 50, 150]
    assert report.makespan == max(w + r for w, r in zip(waits, runs, strict=True))
    assert report.mean_bounded_slowdown == pytest.approx(
        sum(max(1, (w + r) / max(r, 10)) for w, r in zip(waits, runs, strict=True)) / 4)
    assert report.utilization == pytest.approx(sum(r * n for _, _, r, n, _ in JOBS)
                                               / (4 * report.makespan))


def test_conservative_reserves_behind_the_first_reservation(tmp_path):
    """J3 would fit before J2's reservation only under EASY's single
    reservation: conservative also reserves J4 first, here blocking J3."""
    jobs = [(1, 0, 100, 3, 100), (2, 0, 100, 4, 100), (3, 0, 100, 1, 300), (4, 0, 50, 1, 50)]
    easy = replay.simulate(swf.read(trace_file(tmp_path, jobs)), EASY)
    conservative = replay.simulate(swf.read(trace_file(tmp_path, jobs)), CONSERVATIVE)
    assert easy.mean_wait == conservative.mean_wait == (0 + 100 + 200 + 0) / 4


def test_jobs_that_outrun_their_request(tmp_path):
    jobs = [(1, 0, 100, 4, 10), (2, 1, 10, 4, 10)]
    killed = replay.simulate(swf.read(trace_file(tmp_path, jobs)), EASY, overrun="kill")
    assert killed.max_wait == 9                      # J1 killed at 10
    ran = replay.simulate(swf.read(trace_file(tmp_path, jobs)), EASY, overrun="run")
    assert ran.max_wait == 99                        # J1 ran its 100 s; J2 started when it ended
    with pytest.raises(ValueError, match="overrun: expected one of kill, run, got 'stop'"):
        replay.simulate(swf.read(trace_file(tmp_path, jobs)), EASY, overrun="stop")


def test_no_request_plans_with_the_default_duration_and_is_never_killed(tmp_path):
    jobs = [(1, 0, 500, 4, -1), (2, 1, 10, 4, 10)]
    report = replay.simulate(swf.read(trace_file(tmp_path, jobs)), EASY, default_duration=60)
    assert report.max_wait == 499


def test_swf_reading(tmp_path):
    path = trace_file(tmp_path, [(1, 5, 10, 2, 20), (2, 0, -1, 2, 20), (3, 1, 10, -1, 20)])
    trace = swf.read(path)
    assert [j.id for j in trace.jobs] == [1] and trace.skipped == 2
    assert trace.processors == 4 and trace.header["Version"] == "2.2"
    bad = tmp_path / "bad.swf"
    bad.write_text("1 2 3\n")
    with pytest.raises(ValueError, match=r"bad.swf:1: an SWF record has 18 fields, found 3"):
        swf.read(str(bad))
    bad.write_text("1 0 -1 x 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1\n")
    with pytest.raises(ValueError, match=r"bad.swf:1: fields must be numbers"):
        swf.read(str(bad))


SIMULATE = [sys.executable, "-m", "overlay_native.simulation.simulate_cli"]


def test_plus_simulate_prints_the_figures(tmp_path):
    out = subprocess.run([*SIMULATE, trace_file(tmp_path, JOBS), "--policy", "fcfs"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "policy fcfs, overrun kill, 4 processors" in out.stdout
    assert "mean wait             125.0 s" in out.stdout
    missing = subprocess.run([*SIMULATE, "/nonexistent.swf"], capture_output=True, text=True)
    assert missing.returncode == 2 and missing.stderr.startswith("plus_simulate: ")
