"""What this overlay did to Grid Engine that the store cannot tell.

The store says which ARs exist and which are open; it cannot say which AR
objects were already created in Grid Engine, which normal queue instances
this overlay suspended (and must resume, as opposed to ones an
administrator suspended), which instances got its calendars (conflict:
avoid), or that a job was half-way through being requeued. Each change
is written here *before* the Grid Engine command that makes it, so after a crash the reconcile pass knows what to undo.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field

from overlay import statefile


@dataclass
class Requeue:
    """A foreign job being moved off reserved hosts (qmod -sj, qresub as
    the owner, qdel): ``copy`` is the new job's id once qresub answered."""

    job: str
    owner: str
    since: int
    copy: str | None = None


@dataclass
class LedgerData:
    ars: list[int] = field(default_factory=list)
    active: dict[str, list[str]] = field(default_factory=dict)
    suspended: list[str] = field(default_factory=list)
    requeues: dict[str, Requeue] = field(default_factory=dict)
    calendars: dict[str, str] = field(default_factory=dict)


class Ledger:
    """A small JSON file, replaced atomically on every change."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.RLock()
        self.data = self._load()

    def _load(self) -> LedgerData:
        raw = statefile.load(self.path, "Grid Engine ledger")
        return LedgerData(ars=raw.get("ars", []), active=raw.get("active", {}),
                          suspended=raw.get("suspended", []),
                          requeues={k: Requeue(**v) for k, v in raw.get("requeues", {}).items()},
                          calendars=raw.get("calendars", {}))

    def save(self) -> None:
        with self.lock:
            statefile.save(self.path, asdict(self.data))

    # -- AR objects --------------------------------------------------------------

    def owns(self, ar_id: int) -> bool:
        return ar_id in self.data.ars

    def owned(self) -> list[int]:
        return list(self.data.ars)

    def claim(self, ar_id: int) -> None:
        """Before creating an AR's objects."""
        with self.lock:
            if ar_id not in self.data.ars:
                self.data.ars.append(ar_id)
                self.save()

    def forget(self, ar_id: int) -> None:
        """After deleting an AR's objects."""
        with self.lock:
            if ar_id in self.data.ars or str(ar_id) in self.data.active:
                self.data.ars = [i for i in self.data.ars if i != ar_id]
                self.data.active.pop(str(ar_id), None)
                self.save()

    # -- open ARs and the normal queue instances they keep suspended ------------

    def set_active(self, ar_id: int, hosts: list[str] | None) -> None:
        """Record that an AR is open on ``hosts`` (None: closed)."""
        with self.lock:
            key = str(ar_id)
            if hosts is None and key not in self.data.active:
                return
            if hosts is not None and self.data.active.get(key) == sorted(hosts):
                return
            if hosts is None:
                del self.data.active[key]
            else:
                self.data.active[key] = sorted(hosts)
            self.save()

    def active_hosts(self) -> set[str]:
        with self.lock:
            return {h for hosts in self.data.active.values() for h in hosts}

    def active_ids(self) -> set[int]:
        with self.lock:
            return {int(k) for k in self.data.active}

    def suspended(self) -> set[str]:
        with self.lock:
            return set(self.data.suspended)

    def note_suspended(self, instances: list[str]) -> None:
        with self.lock:
            new = [i for i in instances if i not in self.data.suspended]
            if new:
                self.data.suspended.extend(new)
                self.save()

    def note_resumed(self, instances: list[str]) -> None:
        with self.lock:
            gone = set(instances)
            if gone & set(self.data.suspended):
                self.data.suspended = [i for i in self.data.suspended if i not in gone]
                self.save()

    # -- requeues in progress ------------------------------------------------------

    def requeues(self) -> dict[str, Requeue]:
        with self.lock:
            return dict(self.data.requeues)

    def note_requeue(self, requeue: Requeue) -> None:
        with self.lock:
            self.data.requeues[requeue.job] = requeue
            self.save()

    def end_requeue(self, job: str) -> None:
        with self.lock:
            if self.data.requeues.pop(job, None) is not None:
                self.save()

    # -- calendars attached to normal queue instances (conflict: avoid) -------------

    def calendars(self) -> dict[str, str]:
        """Queue instance -> the calendar this overlay attached to it."""
        with self.lock:
            return dict(self.data.calendars)

    def note_calendar(self, instance: str, calendar: str | None) -> None:
        with self.lock:
            if self.data.calendars.get(instance) == calendar:
                return
            if calendar is None:
                del self.data.calendars[instance]
            else:
                self.data.calendars[instance] = calendar
            self.save()
