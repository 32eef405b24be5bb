"""What this overlay did to TORQUE that the store cannot tell.

Which AR queues it created, which node properties it added (a node may
since have left the AR), which windows it opened, which foreign jobs it
held (and for which ARs), which it asked to leave reserved nodes (each run
once: a job's epilogue keeps it there a while), which it made rerunnable,
and which nodes it took offline. Each change is written here *before* the
TORQUE command that makes it, so after a crash the reconcile pass knows
what to undo (overlay.kit.queuekit.Ledger).
"""

from __future__ import annotations

from typing import Any

from overlay.api.plugin import queuekit


class Ledger(queuekit.Ledger):
    """The kit's ledger (AR queues, open ARs' nodes) and TORQUE's own
    entries: node properties, foreign jobs held, leaving or made
    rerunnable, nodes taken offline."""

    what = "TORQUE ledger"

    def load(self, raw: dict[str, Any]) -> None:
        self.tags: dict[str, list[int]] = raw.get("tags", {})          # node -> AR ids tagged
        self.held: dict[str, list[int]] = raw.get("held", {})          # job -> AR ids
        self.leaving: dict[str, dict] = raw.get("leaving", {})      # job -> Departure fields
        self.made_rerunnable: list[str] = raw.get("made_rerunnable", [])
        self.offline: dict[str, str] = raw.get("offline", {})          # node -> our note

    def entries(self) -> dict[str, Any]:
        return {"tags": self.tags, "held": self.held, "leaving": self.leaving,
                "made_rerunnable": self.made_rerunnable, "offline": self.offline}

    # -- node properties ------------------------------------------------------------

    def tagged(self, ar_id: int) -> set[str]:
        with self.lock:
            return {node for node, ars in self.tags.items() if ar_id in ars}

    def note_tag(self, node: str, ar_id: int, present: bool) -> None:
        with self.lock:
            ars = self.tags.get(node, [])
            if (ar_id in ars) == present:
                return
            ars = ars + [ar_id] if present else [i for i in ars if i != ar_id]
            if ars:
                self.tags[node] = ars
            else:
                self.tags.pop(node, None)
            self.save()

    # -- foreign jobs held, made rerunnable -------------------------------------------------

    def note_held(self, job: str, ar_id: int) -> None:
        with self.lock:
            ars = self.held.get(job, [])
            if ar_id not in ars:
                self.held[job] = ars + [ar_id]
                self.save()

    def unhold(self, ar_id: int) -> list[str]:
        """Jobs held only for ``ar_id``: to be released now."""
        with self.lock:
            free, changed = [], False
            for job, departure in list(self.leaving.items()):
                if departure["ar"] == ar_id:
                    del self.leaving[job]
                    changed = True
            for job, ars in list(self.held.items()):
                if ar_id in ars:
                    rest = [i for i in ars if i != ar_id]
                    if rest:
                        self.held[job] = rest
                        changed = True
                    else:
                        free.append(job)
            if changed:
                self.save()
            return free

    def end_hold(self, job: str) -> None:
        with self.lock:
            changed = self.held.pop(job, None) is not None
            changed = self.leaving.pop(job, None) is not None or changed
            if job in self.made_rerunnable:
                self.made_rerunnable.remove(job)
                changed = True
            if changed:
                self.save()

    def note_leaving(self, job: str, departure: dict) -> None:
        """``job`` is asked to leave: {"ar", "run" (its start time), "asked"
        (when), "owner", "hosts"}."""
        with self.lock:
            self.leaving[job] = departure
            self.save()

    def left(self, jobs: list[str]) -> None:
        """These jobs asked to leave have left."""
        with self.lock:
            gone = [job for job in jobs if self.leaving.pop(job, None) is not None]
            if gone:
                self.save()

    def note_made_rerunnable(self, job: str) -> None:
        with self.lock:
            if job not in self.made_rerunnable:
                self.made_rerunnable.append(job)
                self.save()

    # -- nodes taken offline -----------------------------------------------------------------

    def note_offline(self, node: str, note: str | None) -> None:
        with self.lock:
            if self.offline.get(node) == note:
                return
            if note is None:
                self.offline.pop(node, None)
            else:
                self.offline[node] = note
            self.save()
