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


class Ledger(queuekit.Ledger):
    """The kit's ledger and the jobs held: job id -> [AR id, why]."""

    what = "Slurm ledger"

    def load(self, raw: dict[str, Any]) -> None:
        self._held: dict[str, list] = raw.get("held", {})

    def entries(self) -> dict[str, Any]:
        return {"held": self._held}

    def held(self, ar_id: int | None = None, why: str | None = None) -> list[str]:
        """Jobs held for ``ar_id`` (any AR if None) and reason (any if None)."""
        with self.lock:
            return [job for job, (ar, reason) in self._held.items()
                    if (ar_id is None or ar == ar_id) and (why is None or reason == why)]

    def held_for(self) -> dict[str, int]:
        """Every held job and its AR."""
        with self.lock:
            return {job: ar for job, (ar, _) in self._held.items()}

    def note_held(self, jobs: list[str], ar_id: int, why: str) -> None:
        with self.lock:
            new = [job for job in jobs if self._held.get(job) != [ar_id, why]]
            if new:
                self._held.update({job: [ar_id, why] for job in new})
                self.save()

    def note_released(self, jobs: list[str]) -> None:
        with self.lock:
            gone = [job for job in jobs if job in self._held]
            if gone:
                for job in gone:
                    del self._held[job]
                self.save()
