"""What this overlay did to Slurm that the store cannot tell.

Besides the kit's entries (which ARs' reservations exist, which ARs are
open on which nodes), the jobs this overlay holds: foreign jobs requeued
and held off an AR's nodes at its start (released after its window), and
the AR's own pending jobs held while a hard error keeps it shut. Each is
written *before* the scontrol command that holds the job, so a daemon
killed in between still releases it (overlay.kit.queuekit.Ledger).
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

    def entries(self) -> dict[str, Any]:
        return {"held": self._held}

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
