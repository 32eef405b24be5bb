"""What this overlay did to Grid Engine that the store cannot tell.

The store says which ARs exist and which are open; it cannot say which AR
objects were already created in Grid Engine, which normal queue instances
this overlay suspended (and must resume, as opposed to ones an
administrator suspended), which instances got its calendars (conflict:
avoid), or that a job was half-way through being requeued, and what lending
made (the lending queue, its hosts' calendars, preemptions under way). Each change
is written here *before* the Grid Engine command that makes it, so after
a crash the reconcile pass knows what to undo (overlay.kit.queuekit.Ledger).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from overlay.api.plugin import queuekit


@dataclass
class Preemption:
    """A lent job an AR took its slots back from, being ended as it asked
    (``mode``: requeue or kill); ``told`` once its job.preempted event is
    in the store."""

    job: str
    mode: str
    ar_id: int
    owner: str
    host: str
    start: int | None
    told: bool = False


@dataclass
class Requeue:
    """A foreign job being moved off reserved hosts (qmod -sj, qresub as
    the owner, qdel): ``copy`` is the new job's id once qresub answered."""

    job: str
    owner: str
    since: int
    copy: str | None = None


class Ledger(queuekit.Ledger):
    """The kit's ledger (AR objects, open ARs' hosts) and Grid Engine's own
    entries: normal queue instances suspended, requeues, calendars."""

    what = "Grid Engine ledger"

    def load(self, raw: dict[str, Any]) -> None:
        self._suspended: list[str] = raw.get("suspended", [])
        self._requeues = {k: Requeue(**v) for k, v in raw.get("requeues", {}).items()}
        self._calendars: dict[str, str] = raw.get("calendars", {})
        lending = raw.get("lending", {})
        self._lend_queue: str | None = lending.get("queue")
        self._lend_calendars: list[str] = lending.get("calendars", [])
        self._preemptions = {k: Preemption(**v) for k, v in lending.get("preemptions", {}).items()}

    def entries(self) -> dict[str, Any]:
        entries = {"suspended": self._suspended,
                   "requeues": {k: asdict(v) for k, v in self._requeues.items()},
                   "calendars": self._calendars}
        if self._lend_queue or self._lend_calendars or self._preemptions:
            entries["lending"] = {
                "queue": self._lend_queue, "calendars": self._lend_calendars,
                "preemptions": {k: asdict(v) for k, v in self._preemptions.items()}}
        return entries

    # -- the normal queue instances open ARs keep suspended ----------------------

    def suspended(self) -> set[str]:
        with self.lock:
            return set(self._suspended)

    def note_suspended(self, instances: list[str]) -> None:
        with self.lock:
            new = [i for i in instances if i not in self._suspended]
            if new:
                self._suspended.extend(new)
                self.save()

    def note_resumed(self, instances: list[str]) -> None:
        with self.lock:
            gone = set(instances)
            if gone & set(self._suspended):
                self._suspended = [i for i in self._suspended if i not in gone]
                self.save()

    # -- requeues in progress ------------------------------------------------------

    def requeues(self) -> dict[str, Requeue]:
        with self.lock:
            return dict(self._requeues)

    def note_requeue(self, requeue: Requeue) -> None:
        with self.lock:
            self._requeues[requeue.job] = requeue
            self.save()

    def end_requeue(self, job: str) -> None:
        with self.lock:
            if self._requeues.pop(job, None) is not None:
                self.save()

    # -- calendars attached to normal queue instances (conflict: avoid) -------------

    def calendars(self) -> dict[str, str]:
        """Queue instance -> the calendar this overlay attached to it."""
        with self.lock:
            return dict(self._calendars)

    def note_calendar(self, instance: str, calendar: str | None) -> None:
        with self.lock:
            if self._calendars.get(instance) == calendar:
                return
            if calendar is None:
                del self._calendars[instance]
            else:
                self._calendars[instance] = calendar
            self.save()

    # -- lending: the queue, its hosts' calendars, preemptions under way ------------

    def lend_queue(self) -> str | None:
        """The lending queue this overlay made (and must remove if lending is
        turned off)."""
        with self.lock:
            return self._lend_queue

    def note_lend_queue(self, name: str | None) -> None:
        with self.lock:
            if self._lend_queue != name:
                self._lend_queue = name
                self.save()

    def lend_calendars(self) -> set[str]:
        """Hosts whose lending calendar this overlay made."""
        with self.lock:
            return set(self._lend_calendars)

    def note_lend_calendar(self, host: str, made: bool) -> None:
        with self.lock:
            if (host in self._lend_calendars) != made:
                self._lend_calendars = sorted(set(self._lend_calendars) ^ {host})
                self.save()

    def preemptions(self) -> dict[str, Preemption]:
        with self.lock:
            return dict(self._preemptions)

    def note_preemption(self, preemption: Preemption) -> None:
        with self.lock:
            self._preemptions[preemption.job] = preemption
            self.save()

    def end_preemption(self, job: str) -> None:
        with self.lock:
            if self._preemptions.pop(job, None) is not None:
                self.save()
