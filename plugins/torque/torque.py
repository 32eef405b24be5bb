"""TORQUE's commands (qmgr, pbsnodes, qstat, qselect, qalter, qhold, qrls,
qrerun, qrun, qdel) as typed calls, through a Runner (here, or on the
server host over SSH).

Each call answers or raises TorqueError with the command and its output.
"Already so" and "already gone" are answers, not errors, so every
operation can be repeated. The answers were read off a real TORQUE 6.1
(the recording the tests replay): qmgr exits 2 on every error, the client
commands exit with the PBSE code mod 256, and pbsnodes exits 0 even when
the server refused the change, so its stderr is what tells.
"""

from __future__ import annotations

import re
from typing import Iterable

from overlay.api.plugin import BatchCommands, Result
from overlay_torque import windows
from overlay_torque.status import TorqueJob, TorqueNode, parse_jobs, parse_nodes, parse_queues

_UNREACHABLE = re.compile(r"cannot connect to server|Communication failure|could not connect to trqauthd"
                          r"|Cannot connect to default server", re.IGNORECASE)
_BROKEN_NODE = re.compile(r"PBS_Server System error")
UNKNOWN_JOB = 153
UNKNOWN_QUEUE = 172
BAD_STATE = 170          # PBSE_BADSTATE: qdel of a completed job, qrerun of a held one
NOT_RERUNNABLE = 192


class TorqueError(Exception):
    """A TORQUE command failed; the text has the command and its answer."""


class NodeBroken(TorqueError):
    """TORQUE 6.1 refuses every change to a node whose property list was
    once emptied (a server bug): only deleting and re-creating it helps."""


class QueueBusy(TorqueError):
    """A queue still counts a job (even a completed one) and cannot go yet."""


class Torque(BatchCommands):
    """The commands the backend needs, with their outputs parsed."""

    error = TorqueError
    server = "TORQUE server"
    unreachable = _UNREACHABLE
    unreachable_on_stderr = True

    def submit(self, options: list[str], script: str, owner: str) -> str:
        """qsub as ``owner`` with the script on standard input: the job's id."""
        job = self.checked(["qsub", *options], as_user=owner, stdin=script).stdout.strip()
        if not job or len(job.split()) != 1:
            raise TorqueError(f"qsub answered without a job id: {job}")
        return job

    # -- qmgr ---------------------------------------------------------------------

    def qmgr(self, command: str) -> Result:
        """One qmgr -c command, checked; a broken node raises NodeBroken."""
        result = self.run(["qmgr", "-c", command])
        if result.status != 0:
            error = NodeBroken if _BROKEN_NODE.search(result.stderr) else TorqueError
            raise error(f"qmgr -c '{command}' failed on {self.runner.where}: {result.text}")
        return result

    def print_server(self) -> str:
        return self.qmgr("print server").stdout

    def queues(self) -> dict[str, dict[str, str]]:
        """Every queue with its attributes (qmgr print server)."""
        return parse_queues(self.print_server())

    def create_queue(self, name: str) -> None:
        result = self.run(["qmgr", "-c", f"create queue {name} queue_type=execution"])
        if result.status != 0 and "already exists" not in result.stderr:
            raise TorqueError(f"creating queue {name} failed on {self.runner.where}: {result.text}")

    def set_queue(self, name: str, attribute: str, value: str) -> None:
        """A list value is quoted: qmgr takes a bare comma for the next attribute."""
        self.qmgr(f"set queue {name} {attribute}=" + (f'"{value}"' if "," in value else value))

    def delete_queue(self, name: str) -> None:
        """Gone already is fine; a queue that still counts a job raises
        QueueBusy (TORQUE purges deleted jobs a moment later: retry)."""
        result = self.run(["qmgr", "-c", f"delete queue {name}"])
        if result.status == 0 or re.search(r"Unknown queue\s*$", result.stderr):
            return
        if "busy queue" in result.stderr:
            raise QueueBusy(f"queue {name} still has jobs")
        raise TorqueError(f"deleting queue {name} failed on {self.runner.where}: {result.text}")

    def kick(self) -> None:
        """A pbs_sched cycle now (setting scheduling=true triggers one; a
        started queue or a cleared node alone waits for the next period)."""
        self.qmgr("set server scheduling=true")

    # -- nodes ----------------------------------------------------------------------

    def nodes(self) -> list[TorqueNode]:
        return parse_nodes(self.checked(["pbsnodes", "-x"]).stdout)

    def add_property(self, node: str, prop: str) -> None:
        self.qmgr(f"set node {node} properties += {prop}")

    def remove_property(self, node: str, prop: str) -> None:
        """Removing one absent is a silent success in TORQUE."""
        self.qmgr(f"set node {node} properties -= {prop}")

    def recreate_node(self, node: TorqueNode) -> None:
        """The only cure for a broken node: delete it and create it again
        with its slots and properties (running jobs keep running)."""
        self.qmgr(f"delete node {node.name}")
        self.qmgr(f"create node {node.name} np={node.np}")
        for prop in node.properties:
            self.add_property(node.name, prop)

    def set_offline(self, names: Iterable[str], note: str) -> None:
        self._pbsnodes(["-o", "-N", note], names)

    def clear_offline(self, names: Iterable[str], note: str = "n") -> None:
        """pbsnodes -c; ``-N n`` clears the note."""
        self._pbsnodes(["-c", "-N", note], names)

    def _pbsnodes(self, options: list[str], names: Iterable[str]) -> None:
        names = sorted(set(names))
        if not names:
            return
        result = self.run(["pbsnodes", *options, *names])
        if result.status != 0 or result.stderr.strip():
            error = NodeBroken if _BROKEN_NODE.search(result.stderr) else TorqueError
            raise error(f"pbsnodes {' '.join(options + names)} failed on {self.runner.where}: "
                        f"{result.text}")

    # -- jobs -----------------------------------------------------------------------

    def jobs(self) -> list[TorqueJob]:
        return parse_jobs(self.checked(["qstat", "-f", "-x"]).stdout)

    def on_nodes(self) -> list[str]:
        """Ids of the jobs running or exiting (still on their nodes)."""
        return self.checked(["qselect", "-s", "RE"]).stdout.split()

    def select(self, queue: str) -> list[str]:
        """Job ids in ``queue``; none if the queue is gone."""
        result = self.run(["qselect", "-q", queue])
        if result.status == UNKNOWN_QUEUE:
            return []
        if result.status != 0:
            raise TorqueError(f"qselect -q {queue} failed on {self.runner.where}: {result.text}")
        return result.stdout.split()

    def alter_nodes(self, job: str, spec: str) -> None:
        self._on_job(["qalter", "-l", f"nodes={spec}"], job)

    def set_rerunnable(self, job: str, rerunnable: bool) -> None:
        self._on_job(["qalter", "-r", "y" if rerunnable else "n"], job)

    def defer(self, job: str, until: int) -> None:
        """qalter -a: the job waits (W) until ``until``; a time passed queues it."""
        self._on_job(["qalter", "-a", windows.date_time(until)], job)

    def hold(self, job: str) -> None:
        self._on_job(["qhold"], job)

    def release(self, job: str) -> None:
        self._on_job(["qrls"], job)

    def rerun(self, job: str) -> bool:
        """Back to the queue once its epilogue has run; False if the job is
        not rerunnable. A job no longer running has left already: queued
        (exit 0), held by a rerun that finished meanwhile (a bad state, 170)
        or gone (153)."""
        result = self.run(["qrerun", job])
        if result.status == NOT_RERUNNABLE:
            return False
        if result.status not in (0, UNKNOWN_JOB, BAD_STATE):
            raise TorqueError(f"qrerun {job} failed on {self.runner.where}: {result.text}")
        return True

    def start(self, job: str, hosts: Iterable[str]) -> None:
        """qrun -H host[:ppn=N]+...: synchronous, the job runs when it returns."""
        self.checked(["qrun", "-H", "+".join(hosts), job])

    def delete_jobs(self, jobs: Iterable[str]) -> None:
        """qdel each; a job already deleted but not yet purged (state C, which
        qselect still lists while TORQUE keeps it) is done, not an error."""
        for job in sorted(set(jobs)):
            result = self.run(["qdel", job])
            if result.status == BAD_STATE and "COMPLETE" in result.stderr:
                continue
            if result.status not in (0, UNKNOWN_JOB):
                raise TorqueError(f"qdel {job} failed on {self.runner.where}: {result.text}")

    def _on_job(self, argv: list[str], job: str) -> None:
        """A job command; the job being gone already is not an error."""
        result = self.run([*argv, job])
        if result.status not in (0, UNKNOWN_JOB):
            raise TorqueError(f"{' '.join(argv)} {job} failed on {self.runner.where}: {result.text}")
