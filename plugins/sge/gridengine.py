"""Grid Engine's commands (qconf, qmod, qstat, qhost, qdel, qresub) as
typed calls, through a Runner (here or on the master over SSH).

Each call answers or raises GridEngineError with the command and its
output; "already in that state" and "does not exist" where the caller asked
for that state are answers, not errors, so every operation is idempotent.
"""

from __future__ import annotations

import re
from typing import Iterable

from overlay.api.plugin import BatchCommands, Runner
from overlay_sge import objects
from overlay_sge.status import (
    HostInfo,
    Observation,
    parse_hosts,
    parse_observation,
    parse_restart_flags,
)

_UNREACHABLE = re.compile(r"commlib error|unable to (send|contact) .*qmaster|cannot reach qmaster"
                          r"|unable to receive message from qmaster", re.IGNORECASE)
_MISSING = re.compile(r"does not exist|No cluster queue or queue instance matches|is not a calendar",
                      re.IGNORECASE)
_SUBMITTED = re.compile(r"Your job (\d+)")

SHOW = {"queue": "-sq", "hostgroup": "-shgrp", "userset": "-su", "calendar": "-scal"}
ADD = {"queue": "-Aq", "hostgroup": "-Ahgrp", "userset": "-Au", "calendar": "-Acal"}
MODIFY = {"queue": "-Mq", "hostgroup": "-Mhgrp", "userset": "-Mu", "calendar": "-Mcal"}
DELETE = {"queue": "-dq", "hostgroup": "-dhgrp", "userset": "-dul", "calendar": "-dcal"}
LIST = {"queue": "-sql", "hostgroup": "-shgrpl", "userset": "-sul", "calendar": "-scall"}


class GridEngineError(Exception):
    """A Grid Engine command failed; the text has the command and its answer."""


class GridEngine(BatchCommands):
    """The commands the backend needs, with their outputs parsed."""

    error = GridEngineError
    server = "Grid Engine master"
    unreachable = _UNREACHABLE

    def __init__(self, runner: Runner, timeout: float = 60) -> None:
        super().__init__(runner, timeout=timeout)

    # -- configuration objects ------------------------------------------------------

    def names(self, kind: str) -> set[str]:
        """Every queue, hostgroup or userset (qconf -sql, -shgrpl, -sul)."""
        result = self.run(["qconf", LIST[kind]])
        if result.status != 0:
            if re.search(r"no .* defined", result.text, re.IGNORECASE):
                return set()
            raise GridEngineError(f"qconf {LIST[kind]} failed: {result.text}")
        return set(result.stdout.split())

    def show(self, kind: str, name: str) -> dict[str, str] | None:
        result = self.run(["qconf", SHOW[kind], name])
        if result.status != 0:
            if _MISSING.search(result.text):
                return None
            raise GridEngineError(f"qconf {SHOW[kind]} {name} failed: {result.text}")
        return objects.parse_config(result.stdout)

    def put(self, kind: str, attributes: dict[str, str], exists: bool) -> None:
        """Create (qconf -A*) or replace (qconf -M*) an object from a file."""
        flag = MODIFY[kind] if exists else ADD[kind]
        with self.runner.upload(objects.render(attributes)) as path:
            self.checked(["qconf", flag, path])

    def delete(self, kind: str, name: str) -> None:
        result = self.run(["qconf", DELETE[kind], name])
        if result.status != 0 and not _MISSING.search(result.text):
            raise GridEngineError(f"qconf {DELETE[kind]} {name} failed: {result.text}")

    def set_attribute(self, kind: str, attribute: str, value: str, name: str) -> None:
        """qconf -rattr: replace one attribute's whole value (overrides too)."""
        self.checked(["qconf", "-rattr", kind, attribute, value, name])

    def set_instance_attribute(self, attribute: str, value: str, instance: str) -> None:
        """qconf -mattr on queue@host: a [host=value] override."""
        self.checked(["qconf", "-mattr", "queue", attribute, value, instance])

    def purge_instance_attribute(self, attribute: str, instance: str) -> None:
        """qconf -purge: drop a [host=value] override (none there is fine)."""
        self.checked(["qconf", "-purge", "queue", attribute, instance])

    def scheduler_setting(self, name: str) -> str | None:
        for line in self.checked(["qconf", "-ssconf"]).stdout.splitlines():
            key, _, value = line.partition(" ")
            if key == name:
                return value.strip()
        return None

    def complexes(self) -> str:
        return self.checked(["qconf", "-sc"]).stdout

    def set_complexes(self, text: str) -> None:
        with self.runner.upload(text) as path:
            self.checked(["qconf", "-Mc", path])

    # -- queue states and jobs --------------------------------------------------------

    def qmod(self, option: str, targets: Iterable[str]) -> None:
        """qmod -sq/-usq/-e/-d on queues or queue instances; rc 0 also when
        they already are in that state."""
        targets = sorted(set(targets))
        if targets:
            self.checked(["qmod", option, ",".join(targets)])

    def observe(self, queues: Iterable[str] = ()) -> Observation:
        """qstat -f of every queue instance and job (with ``queues``: of
        those cluster queues' only)."""
        only = ",".join(sorted(queues))
        return parse_observation(self.checked(
            ["qstat", "-f", "-u", "*", "-r", "-xml", *(["-q", only] if only else [])]).stdout)

    def hosts(self) -> list[HostInfo]:
        return parse_hosts(self.checked(["qhost", "-q", "-F", "-xml"]).stdout)

    def delete_jobs(self, jobs: Iterable[str], force: bool = True) -> None:
        """qdel (-f): jobs already gone are not an error."""
        jobs = sorted(set(jobs), key=int)
        if not jobs:
            return
        result = self.run(["qdel"] + (["-f"] if force else []) + jobs)
        lines = [line for line in result.text.splitlines() if line and not _MISSING.search(line)]
        if result.status != 0 and any("denied" in line or "error" in line for line in lines):
            raise GridEngineError(f"qdel {' '.join(jobs)} failed: {result.text}")

    def suspend_job(self, job: str) -> None:
        self.checked(["qmod", "-sj", job])

    def restart_flags(self, jobs: Iterable[str]) -> dict[str, str]:
        """Each job's JB_restart (qstat -j -xml): 1 rerunnable (-r y), 2 not
        (-r n), 0 its queue's rerun decides. A job gone is left out."""
        jobs = sorted(set(jobs), key=int)
        if not jobs:
            return {}
        return parse_restart_flags(self.run(["qstat", "-j", ",".join(jobs), "-xml"]).stdout)

    def reschedule(self, job: str) -> bool:
        """qmod -rj: a rerunnable job back to pending, its run ended; False
        when Grid Engine answers that it is not rerunnable."""
        result = self.checked(["qmod", "-rj", job])
        return "not restartable" not in result.text

    def submit(self, options: list[str], script: str, owner: str) -> tuple[str, str]:
        """qsub as ``owner`` with the script on standard input: the job's id
        and qsub's answer."""
        result = self.checked(["qsub", *options], as_user=owner, stdin=script)
        match = _SUBMITTED.search(result.text)
        if not match:
            raise GridEngineError(f"qsub answered without a job id: {result.text}")
        return match.group(1), result.stdout.strip()

    def resubmit(self, job: str, owner: str) -> str:
        """qresub as the job's owner (the copy belongs to whoever runs it);
        the new job's id."""
        result = self.checked(["qresub", job], as_user=owner)
        match = _SUBMITTED.search(result.text)
        if not match:
            raise GridEngineError(f"qresub {job} answered without a job id: {result.text}")
        return match.group(1)
