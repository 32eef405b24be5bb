"""What this overlay did to Slurm that the store cannot tell.

Besides the kit's entries (which ARs' reservations exist, which ARs are
open on which nodes), the jobs this overlay holds: foreign jobs requeued
and held off an AR's nodes at its start (released after its window), and
the AR's own pending jobs held while a hard error keeps it shut. Each is
written *before* the scontrol command that holds the job, so a daemon
killed in between still releases it (overlay.kit.queuekit.Ledger).

And lending: the ARs whose lending reservation L<id> was asked for
(written before the scontrol command, so an AR's end deletes it whatever
the settings say by then), the lent jobs last seen running (to tell their
preemption), and those preempted and requeued (told to start again once
REQUEUE_SETTLE has passed, rather than Slurm's 120 s later).
"""

from __future__ import annotations

from typing import Any

from overlay.api.plugin import queuekit

FOREIGN, SHUT = "foreign", "shut"
"""Why a job is held: moved off an open AR's nodes, or an AR kept shut."""

REQUEUE_SETTLE = 10
"""Seconds after its requeue command returned from which a requeued job may
be told to start at once: slurmd revokes the killed job's credential to the
second when the kill reaches it (a moment after the command), and fails a
launch whose credential is of that second ("Job credential revoked")."""


class Ledger(queuekit.Ledger):
    """The kit's ledger and the jobs held: job id -> [AR id, why] and, once
    its requeue command returned, the second it did (a ledger of an earlier
    version has none: such a job waits out Slurm's own delay)."""

    what = "Slurm ledger"

    def load(self, raw: dict[str, Any]) -> None:
        self._held: dict[str, list] = raw.get("held", {})
        self._lending: list[int] = raw.get("lending", [])
        self._lent: dict[str, dict] = raw.get("lent", {})
        self._requeued: dict[str, int] = raw.get("requeued", {})

    def entries(self) -> dict[str, Any]:
        return {"held": self._held, "lending": self._lending, "lent": self._lent,
                "requeued": self._requeued}

    # -- lending --------------------------------------------------------------------------

    def lends(self, ar_id: int) -> bool:
        with self.lock:
            return ar_id in self._lending

    def note_lending(self, ar_id: int, lends: bool) -> None:
        """Whether AR ``ar_id`` has (or is getting) its lending reservation."""
        with self.lock:
            if lends != (ar_id in self._lending):
                self._lending = sorted(set(self._lending) ^ {ar_id})
                self.save()

    def lent(self) -> dict[str, dict]:
        """Lent jobs last seen running: id -> their AR, owner, nodes, start."""
        with self.lock:
            return dict(self._lent)

    def note_lent(self, running: dict[str, dict], preempted: dict[str, int]) -> None:
        """The lent jobs running now, and those found ``preempted`` (id ->
        the second it was seen) among those that ran before."""
        with self.lock:
            if running != self._lent or preempted:
                self._lent = running
                self._requeued.update(preempted)
                self.save()

    def requeued(self) -> dict[str, int]:
        """Preempted lent jobs not yet told to start again: id -> when seen."""
        with self.lock:
            return dict(self._requeued)

    def note_restarted(self, jobs: list[str]) -> None:
        with self.lock:
            if any(job in self._requeued for job in jobs):
                for job in jobs:
                    self._requeued.pop(job, None)
                self.save()

    def held(self, ar_id: int | None = None, why: str | None = None) -> list[str]:
        """Jobs held for ``ar_id`` (any AR if None) and reason (any if None)."""
        with self.lock:
            return [job for job, (ar, reason, *_) in self._held.items()
                    if (ar_id is None or ar == ar_id) and (why is None or reason == why)]

    def held_for(self) -> dict[str, int]:
        """Every held job and its AR."""
        with self.lock:
            return {job: entry[0] for job, entry in self._held.items()}

    def note_held(self, jobs: list[str], ar_id: int, why: str) -> None:
        with self.lock:
            new = [job for job in jobs if self._held.get(job, [])[:2] != [ar_id, why]]
            if new:
                self._held.update({job: [ar_id, why] for job in new})
                self.save()

    def note_requeued(self, jobs: list[str], second: int) -> None:
        """The requeue of held ``jobs`` returned at ``second``."""
        with self.lock:
            for job in jobs:
                if job in self._held:
                    self._held[job][2:] = [second]
            self.save()

    def settled(self, jobs: list[str], now: int) -> list[str]:
        """Those of ``jobs`` requeued at least REQUEUE_SETTLE seconds before
        ``now``: safe to start at once."""
        with self.lock:
            return [job for job in jobs
                    if len(self._held.get(job, [])) == 3
                    and self._held[job][2] <= now - REQUEUE_SETTLE]

    def note_released(self, jobs: list[str]) -> None:
        with self.lock:
            gone = [job for job in jobs if job in self._held]
            if gone:
                for job in gone:
                    del self._held[job]
                self.save()
