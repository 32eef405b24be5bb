"""Slurm's commands (scontrol, squeue, scancel, sbatch) as typed calls,
through a Runner (here, or on the controller's host over SSH).

Each call answers or raises SlurmError with the command and its output;
"already gone" where the caller wanted it gone is an answer, not an error,
so every operation can be repeated. Every command runs with TZ=UTC and
SLURM_TIME_FORMAT=%s (overlay_slurm.settings): times go in as UTC and come
out as epoch seconds.
"""

from __future__ import annotations

import re
import time
from typing import Callable, Iterable, Mapping

from overlay.api.plugin import BatchCommands
from overlay_slurm import status
from overlay_slurm.status import SlurmJob, SlurmNode, SlurmReservation

_UNREACHABLE = re.compile(r"Unable to contact slurm controller|Socket timed out on send/recv"
                          r"|Communication connection failure|Zero Bytes were transmitted",
                          re.IGNORECASE)
_NO_RESERVATION = re.compile(r"Reservation \S+ not found|Requested reservation is invalid"
                             r"|Invalid reservation name", re.IGNORECASE)
_ALREADY = re.compile(r"Invalid job id specified|Job/step already completing or completed"
                      r"|Job has already finished|Job is pending execution"
                      r"|Job is no longer pending execution", re.IGNORECASE)
"""A job gone, (requeuehold) already back in the queue, or (StartTime=now)
already started: what was asked is so, or moot."""
_IN_USE = re.compile(r"Requested reservation is in use", re.IGNORECASE)
_SUBMITTED = re.compile(r"^(\d+)(?:;\S+)?$")
MAX_JOBS_PER_COMMAND = 500
"""Job ids per scontrol or scancel command line."""


class SlurmError(Exception):
    """A Slurm command failed; the text has the command and its answer."""


class ReservationInUse(SlurmError):
    """Slurm deletes no reservation a job still names, running or pending."""


def utc(seconds: int) -> str:
    """A time as scontrol reads it under TZ=UTC."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


def _chunks(ids: Iterable[str]) -> list[list[str]]:
    ids = list(dict.fromkeys(ids))
    return [ids[i:i + MAX_JOBS_PER_COMMAND] for i in range(0, len(ids), MAX_JOBS_PER_COMMAND)]


class Slurm(BatchCommands):
    """The commands the backend needs, with their outputs parsed."""

    error = SlurmError
    server = "Slurm controller"
    unreachable = _UNREACHABLE

    # -- what Slurm has ------------------------------------------------------------------

    def nodes(self) -> list[SlurmNode]:
        return status.nodes(self.checked(["scontrol", "--oneliner", "show", "node"]).stdout)

    def reservations(self) -> list[SlurmReservation]:
        return status.reservations(
            self.checked(["scontrol", "--oneliner", "show", "reservation"]).stdout)

    def reservation(self, name: str) -> SlurmReservation | None:
        result = self.run(["scontrol", "--oneliner", "show", "reservation", name])
        if result.status != 0:
            if _NO_RESERVATION.search(result.text):
                return None
            raise SlurmError(f"scontrol show reservation {name} failed: {result.text.strip()}")
        found = [r for r in status.reservations(result.stdout) if r.name == name]
        return found[0] if found else None

    def jobs(self) -> list[SlurmJob]:
        """Every job the controller still holds (pending, running, suspended,
        completing), with the columns of status.JOB_FORMAT."""
        return status.jobs(self.checked(["squeue", "--noheader", "--all", "--array",
                                         "--format", status.JOB_FORMAT]).stdout)

    def preempted(self) -> set[str]:
        """The jobs Slurm still remembers (MinJobAge) as ended by a preemption."""
        listed = self.checked(["squeue", "--noheader", "--all", "--states=PREEMPTED",
                               "--format", "%i"]).stdout
        return {line.strip() for line in listed.splitlines() if line.strip()}

    # -- reservations --------------------------------------------------------------------

    def create_reservation(self, fields: Mapping[str, str]) -> None:
        self.checked(["scontrol", "create", "reservation",
                      *(f"{k}={v}" for k, v in fields.items())])

    def update_reservation(self, name: str, fields: Mapping[str, str]) -> None:
        self.checked(["scontrol", "update", f"ReservationName={name}",
                      *(f"{k}={v}" for k, v in fields.items())])

    def delete_reservation(self, name: str) -> None:
        """Gone already is done; ReservationInUse while a job names it."""
        result = self.run(["scontrol", "delete", f"ReservationName={name}"])
        if result.status != 0 and not _NO_RESERVATION.search(result.text):
            error = ReservationInUse if _IN_USE.search(result.text) else SlurmError
            raise error(f"scontrol delete ReservationName={name} failed: {result.text.strip()}")

    # -- jobs ----------------------------------------------------------------------------

    def _each(self, ids: Iterable[str], command: Callable[[list[str]], list[str]]) -> None:
        """``command(chunk)`` for the job ids, in chunks; a job gone, or
        already as asked, is left so."""
        for chunk in _chunks(ids):
            argv = command(chunk)
            result = self.run(argv)
            if result.status != 0:
                left = [line for line in result.text.splitlines()
                        if line.strip() and not _ALREADY.search(line)]
                if left:
                    raise SlurmError(f"{' '.join(argv)} failed: {'; '.join(left)}")

    def requeue_held(self, ids: Iterable[str]) -> None:
        """Back to pending, held until released (scontrol requeuehold)."""
        self._each(ids, lambda chunk: ["scontrol", "requeuehold", ",".join(chunk)])

    def release(self, ids: Iterable[str]) -> None:
        self._each(ids, lambda chunk: ["scontrol", "release", ",".join(chunk)])

    def start_now(self, ids: Iterable[str]) -> None:
        """Eligible at once rather than 120 s after their requeue."""
        self._each(ids, lambda chunk: ["scontrol", "update", f"JobId={','.join(chunk)}",
                                       "StartTime=now"])

    def name_reservations(self, job_id: str, names: Iterable[str]) -> None:
        """A pending job's reservations, from now on only ``names``."""
        self._each([job_id], lambda chunk: ["scontrol", "update", f"JobId={chunk[0]}",
                                            f"Reservation={','.join(names)}"])

    def hold(self, ids: Iterable[str]) -> None:
        self._each(ids, lambda chunk: ["scontrol", "hold", ",".join(chunk)])

    def cancel(self, ids: Iterable[str]) -> None:
        self._each(ids, lambda chunk: ["scancel", *chunk])

    def submit(self, options: list[str], script: str, user: str) -> str:
        """sbatch as ``user``, the script on standard input: the job id."""
        result = self.checked(["sbatch", "--parsable", *options], as_user=user, stdin=script)
        match = _SUBMITTED.match(result.stdout.strip())
        if not match:
            raise SlurmError(f"sbatch answered {result.stdout.strip()!r}, not a job id")
        return match.group(1)
