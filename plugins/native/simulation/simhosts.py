"""Execution in virtual time: a stand-in for ExecutionHosts that lets the
whole scheduler service (store, passes, accounting, MONITOR) run without
processes, for benchmarks (scripts/bench_sched.py) and the scheduler's
tests. A job 'runs' for the seconds its last argument names (as seed 001's
sleeper.sh does; an hour without one) and ends when the clock passes that,
or at its h_rt. Real execution: overlay_native.execution.hosts."""

from __future__ import annotations

from overlay_native.execution.hosts import Poll
from overlay_native.execution.runners import ExecutionError, Finished, JobSpec
from overlay_native.resources.cluster import ClusterConfig


class Clock:
    """A settable clock for the scheduler (its ``clock`` argument)."""

    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class SimulatedHosts:
    """Every host of the cluster but those in ``none`` runs jobs, in the clock's time."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.hosts: set[str] = set()
        self.jobs: dict[str, tuple[str, int, int, JobSpec]] = {}    # id -> host, start, end, spec
        self.killed: set[str] = set()
        self.started: list[tuple[str, str]] = []                     # (job id, host)
        self.refuse: dict[str, str] = {}                             # job id -> why
        self.down: dict[str, str] = {}
        self.ended: dict[str, tuple[str, Finished]] = {}             # reported, not yet taken
        self.epochs: dict[str, int] = {}                             # host -> the highest seen
        self.none: set[str] = set()           # hosts that run no jobs (a cluster file's exec: none)

    def sync(self, config: ClusterConfig) -> None:
        self.hosts = set(config.hosts) - self.none

    def runs_jobs(self, host: str) -> bool:
        return host in self.hosts

    def start(self, host: str, spec: JobSpec, epoch: int | None = None) -> None:
        if spec.id in self.refuse:
            raise ExecutionError(self.refuse[spec.id])
        if epoch is not None and epoch < self.epochs.get(host, 0):
            raise ExecutionError(f"plus shepherd: fenced: a later leader looked at {host}")
        if spec.id in self.jobs:
            raise ExecutionError(f"plus shepherd: job {spec.id} already exists")
        run = int(spec.command[-1]) if spec.command and spec.command[-1].isdigit() else 3600
        if spec.h_rt is not None:
            run = min(run, int(spec.h_rt))
        self.killed.discard(spec.id)          # a requeued job's run before
        self.jobs[spec.id] = (host, self.clock.now, self.clock.now + run, spec)
        self.started.append((spec.id, host))

    def kill(self, host: str, job_id: str) -> None:
        self.killed.add(job_id)

    def taken(self, host: str, job_id: str) -> None:
        """The scheduler recorded the end: poll() reports it no more (until
        then it does, as a host's spool keeps it)."""
        self.ended.pop(job_id, None)

    def poll(self, epoch: int | None = None) -> Poll:
        result = Poll(unreachable=dict(self.down))
        for host in self.hosts:
            result.running[host] = []
            if epoch is not None and host not in self.down:
                self.epochs[host] = max(epoch, self.epochs.get(host, 0))
        for job_id, (host, start, end, spec) in list(self.jobs.items()):
            if host in self.down:
                result.running[host].append(job_id)
                continue
            if job_id in self.killed:
                self.ended[job_id] = (host, Finished(job_id, None, 9, "killed", start,
                                                     self.clock.now))
            elif self.clock.now >= end:
                reason = "h_rt exceeded" if spec.h_rt is not None and end - start >= spec.h_rt \
                    else ""
                self.ended[job_id] = (host, Finished(job_id, 0 if not reason else None,
                                                     9 if reason else None, reason, start, end,
                                                     {"utime": 1.5, "stime": 0.25}))
            else:
                result.running[host].append(job_id)
                continue
            del self.jobs[job_id]
        result.finished = list(self.ended.values())
        return result

    def close(self) -> None:
        pass
