"""What this overlay did to TORQUE that the store cannot tell.

Which AR queues it created, which node properties it added (a node may
since have left the AR), which windows it opened, which foreign jobs it
held (and for which ARs), which it asked to leave reserved nodes (each run
once: a job's epilogue keeps it there a while), which it made rerunnable,
and which nodes it took offline. Each change is written here *before* the TORQUE command that
makes it, so after a crash the reconcile pass knows what to undo.
"""

from __future__ import annotations

import threading

from overlay import statefile


class Ledger:
    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.RLock()
        raw = statefile.load(path, "TORQUE ledger")
        self.ars: list[int] = raw.get("ars", [])
        self.tags: dict[str, list[int]] = raw.get("tags", {})          # node -> AR ids tagged
        self.active: dict[str, list[str]] = raw.get("active", {})      # AR id -> nodes
        self.held: dict[str, list[int]] = raw.get("held", {})          # job -> AR ids
        self.leaving: dict[str, dict] = raw.get("leaving", {})      # job -> Departure fields
        self.made_rerunnable: list[str] = raw.get("made_rerunnable", [])
        self.offline: dict[str, str] = raw.get("offline", {})          # node -> our note

    def _save(self) -> None:
        statefile.save(self.path, {"ars": self.ars, "tags": self.tags, "active": self.active,
                                   "held": self.held, "leaving": self.leaving,
                                   "made_rerunnable": self.made_rerunnable,
                                   "offline": self.offline})

    # -- AR queues ----------------------------------------------------------------

    def owns(self, ar_id: int) -> bool:
        return ar_id in self.ars

    def claim(self, ar_id: int) -> None:
        with self.lock:
            if ar_id not in self.ars:
                self.ars.append(ar_id)
                self._save()

    def forget(self, ar_id: int) -> None:
        with self.lock:
            self.ars = [i for i in self.ars if i != ar_id]
            self.active.pop(str(ar_id), None)
            self._save()

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
            self._save()

    # -- open windows ------------------------------------------------------------------

    def set_active(self, ar_id: int, nodes: list[str] | None) -> None:
        with self.lock:
            key = str(ar_id)
            wanted = None if nodes is None else sorted(nodes)
            if self.active.get(key) == wanted:
                return
            if wanted is None:
                self.active.pop(key, None)
            else:
                self.active[key] = wanted
            self._save()

    def active_ids(self) -> set[int]:
        with self.lock:
            return {int(k) for k in self.active}

    def active_nodes(self) -> dict[str, int]:
        """Node -> the open AR holding it."""
        with self.lock:
            return {node: int(ar) for ar, nodes in self.active.items() for node in nodes}

    # -- foreign jobs held, made rerunnable -------------------------------------------------

    def note_held(self, job: str, ar_id: int) -> None:
        with self.lock:
            ars = self.held.get(job, [])
            if ar_id not in ars:
                self.held[job] = ars + [ar_id]
                self._save()

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
                self._save()
            return free

    def end_hold(self, job: str) -> None:
        with self.lock:
            changed = self.held.pop(job, None) is not None
            changed = self.leaving.pop(job, None) is not None or changed
            if job in self.made_rerunnable:
                self.made_rerunnable.remove(job)
                changed = True
            if changed:
                self._save()

    def note_leaving(self, job: str, departure: dict) -> None:
        """``job`` is asked to leave: {"ar", "run" (its start time), "asked"
        (when), "owner", "hosts"}."""
        with self.lock:
            self.leaving[job] = departure
            self._save()

    def left(self, jobs: list[str]) -> None:
        """These jobs asked to leave have left."""
        with self.lock:
            gone = [job for job in jobs if self.leaving.pop(job, None) is not None]
            if gone:
                self._save()

    def note_made_rerunnable(self, job: str) -> None:
        with self.lock:
            if job not in self.made_rerunnable:
                self.made_rerunnable.append(job)
                self._save()

    # -- nodes taken offline -----------------------------------------------------------------

    def note_offline(self, node: str, note: str | None) -> None:
        with self.lock:
            if self.offline.get(node) == note:
                return
            if note is None:
                self.offline.pop(node, None)
            else:
                self.offline[node] = note
            self._save()
