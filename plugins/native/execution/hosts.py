"""The execution hosts of the native batch system: an Executor for each host
whose jobs run here (exec: local) or over SSH, kept in step with the
cluster file, and polled together once per pass.

Each host's spool is SPOOL_DIR/<host> on the machine that runs its jobs, so
several hosts of the file may share one machine. A host that cannot be
polled is unreachable: the scheduler sends it no jobs and the reservation
core sees it down, until a poll succeeds again.
"""

from __future__ import annotations

import logging
import posixpath
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from overlay.api.plugin import CommandError, LocalRunner, SshSettings
from overlay_native.execution.runners import ExecutionError, Executor, Finished, JobSpec
from overlay_native.resources.cluster import LOCAL, ClusterConfig

log = logging.getLogger("plus.native")
_PARALLEL_POLLS = 8


@dataclass
class Poll:
    """What one poll of every host found."""

    finished: list[tuple[str, Finished]] = field(default_factory=list)
    running: dict[str, list[str]] = field(default_factory=dict)    # host -> job ids
    unreachable: dict[str, str] = field(default_factory=dict)      # host -> why
    reports: dict[str, dict[str, float]] = field(default_factory=dict)   # load_avg, mem_free


class ExecutionHosts:
    """Executors by host name, made and replaced as the cluster changes."""

    def __init__(self, spool_dir: str, python: str = "python3") -> None:
        self.spool_dir, self.python = spool_dir, python
        self._executors: dict[str, tuple[str | SshSettings, Executor]] = {}

    def sync(self, config: ClusterConfig) -> None:
        """An executor for every host that runs jobs, none for the others."""
        wanted = {name: host.execution for name, host in config.hosts.items()
                  if host.execution == LOCAL or isinstance(host.execution, SshSettings)}
        for name in list(self._executors):
            if wanted.get(name) != self._executors[name][0]:
                self._executors.pop(name)[1].runner.close()
        for name, execution in wanted.items():
            if name not in self._executors:
                runner = LocalRunner() if execution == LOCAL else execution.runner()
                spool = posixpath.join(self.spool_dir, name)
                self._executors[name] = (execution, Executor(runner, spool, self.python))

    def runs_jobs(self, host: str) -> bool:
        return host in self._executors

    def start(self, host: str, spec: JobSpec, epoch: int | None = None) -> None:
        """Start ``spec`` on ``host`` for the leader of ``epoch`` (refused if a
        later leader polled the host; None: unfenced, a store of one daemon)."""
        try:
            self._executor(host).start(spec, epoch)
        except CommandError as error:
            raise ExecutionError(str(error)) from None

    def kill(self, host: str, job_id: str) -> None:
        try:
            self._executor(host).kill(job_id)
        except CommandError as error:
            raise ExecutionError(str(error)) from None

    def taken(self, host: str, job_id: str) -> None:
        """The end of ``job_id`` that poll() reported is recorded (Executor.taken)."""
        entry = self._executors.get(host)
        if entry is not None:
            entry[1].taken(job_id)

    def _executor(self, host: str) -> Executor:
        entry = self._executors.get(host)
        if entry is None:
            raise ExecutionError(f"host {host} runs no jobs (exec: none in the cluster file)")
        return entry[1]

    def poll(self, epoch: int | None = None) -> Poll:
        """Ask every host at once (a few in parallel) what ended; from then
        on each refuses the starts of leaders before ``epoch``."""
        result = Poll()
        if not self._executors:
            return result

        def one(name: str):
            executor = self._executors[name][1]
            try:
                return name, executor.poll(epoch), executor.running(), executor.report, None
            except (ExecutionError, CommandError, ValueError) as error:
                return name, [], executor.running(), None, str(error)
        with ThreadPoolExecutor(min(_PARALLEL_POLLS, len(self._executors))) as pool:
            for name, finished, running, report, error in pool.map(one, list(self._executors)):
                result.finished += [(name, job) for job in finished]
                result.running[name] = running
                if error is not None:
                    result.unreachable[name] = error
                else:
                    result.reports[name] = report
        return result

    def close(self) -> None:
        for _, executor in self._executors.values():
            executor.runner.close()
        self._executors.clear()
