"""The kit for backends that keep a queue per AR (Grid Engine, TORQUE, Slurm).

Such a backend gives each AR objects of its own in the batch system (a
queue, a host group, an access list, a node property) and must converge
after a daemon killed between any two of its commands. The kit holds
what that takes, so a backend writes only its batch system's commands:

- ``Ledger``: what the backend did that the store cannot tell (which ARs'
  objects it created, which ARs it opened on which hosts, and whatever
  else a subclass adds), written *before* the command that makes it.
- ``Applied``: what each AR's objects were last made into (the phase, a
  fingerprint of the AR, whether a hard error keeps its queue shut), in
  memory, so a pass that finds an AR unchanged sends no command, and
  drift (a queue deleted or started by hand) makes the next pass redo it.
- ``QueueBackend``: the lifecycle. ``prepare``, ``activate``, ``release``,
  ``teardown``, ``modify`` and ``reconcile`` take the backend's lock,
  consult the memo, write the ledger and call the hooks below in a fixed
  order; ``reconcile`` removes what ARs the store no longer has left
  behind and closes the ARs the store says are not open.
- ``Recent``: a batch system's answer (qstat's, squeue's) that serves a
  pass for a moment, forgotten when the backend changed something.

A backend implements (each called under ``self.lock``, the ledger's claim
already written where it says so):

- ``fingerprint(ar)``: what the AR's objects are made from; a change means
  ``create`` runs again.
- ``create(ar)``: make or correct the AR's objects, unusable until its
  start (after ``ledger.claim``).
- ``keep_others_off(ar, hosts)``: at the start, and at every pass while the
  AR is open: foreign jobs off its hosts by the site's conflict policy,
  normal queues there held back (after ``ledger.set_active``).
- ``open_queue(ar, shut)``: make the AR's queue usable, or keep it shut
  while ``shut`` (a hard error), when the memo says it is not so yet.
- ``give_back(ar)``: on cancel, the AR's jobs go and its hosts are given
  back; its objects stay with the record.
- ``remove(ar_id)``: the AR's jobs and objects go, hosts given back (only
  for an AR the ledger owns; the kit then forgets it).
- ``ar_of(queue)``: the AR a batch-system queue name belongs to, if any.

``give_back`` and ``remove`` call ``ledger.set_active(ar_id, None)`` where
their order of commands puts it. A backend may override ``ready()``
(site-wide objects before the first AR's), ``opened(ar, shut)`` (after the
queue opened: a scheduling cycle now), ``window_granted(ar)``,
``window_dropped(ar_id)`` and ``reconciled(ars)`` (windows ahead kept
clear, the backend's own pass), and implements, as every backend does,
``nodes()`` and the optional methods of overlay.contract.backend it needs
(``running_jobs``, ``health``, ``blocked_nodes``, ``submit_hint``, ...);
``busy_hosts`` is ``blocked_nodes`` for ``conflict: avoid``, read from the
inventory the core gives it.
Grid Engine (overlay_sge.backend) and TORQUE (overlay_torque.backend) are
its users.
"""

from __future__ import annotations

import threading
import time
from abc import abstractmethod
from typing import Any, Callable, Generic, TypeVar

from overlay.contract.backend import Backend, Inventory
from overlay.kit import statefile
from overlay.language.model import UNGRANTED_STATES, Reservation, State

OPEN_STATES = (State.RUNNING, State.ERROR)
"""States in which an AR's window is open on the batch system."""

PREPARED, OPEN, RELEASED = "prepared", "open", "released"
T = TypeVar("T")


def kept_shut(ar: Reservation) -> bool:
    """Whether the AR's queue stays shut while its window is open: it is
    in error and asked for a hard error (qrsub -he y)."""
    return ar.state == State.ERROR and ar.request.hard_error


def busy_hosts(inventory: Inventory, start: int, busy: str, limit: str) -> dict[str, str]:
    """For ``conflict: avoid`` (Grid Engine 6.2's rule): the hosts of the
    inventory's jobs outside ARs that have no run time limit or one that
    ends after ``start``, with the reason in the batch system's words
    (``busy``: "host busy"; ``limit``: "h_rt"). Read from the inventory,
    never the batch system: the use cases ask it under their lock."""
    blocked = {}
    for job in inventory.jobs:
        if job.reservation is not None:
            continue
        if job.runtime_limit_end is None:
            why = f"{busy}: job {job.id} of {job.owner} has no {limit}"
        elif job.runtime_limit_end > start:
            why = f"{busy}: job {job.id} of {job.owner} runs past the start"
        else:
            continue
        blocked.update(dict.fromkeys(job.nodes, why))
    return blocked


class Recent(Generic[T]):
    """A batch system's answer that serves for a moment: a pass asks once,
    not once per AR; forgotten when the backend changed something."""

    def __init__(self, fetch: Callable[[], T], age: float = 2.0) -> None:
        self._fetch = fetch
        self._age = age
        self._kept: tuple[float, T] | None = None

    def get(self, fresh: bool = False) -> T:
        now = time.monotonic()
        if not fresh and self._kept is not None and now - self._kept[0] < self._age:
            return self._kept[1]
        answer = self._fetch()
        self._kept = (now, answer)
        return answer

    def forget(self) -> None:
        self._kept = None


class Ledger:
    """A small JSON file, replaced atomically on every change: the ARs whose
    objects exist (``ars``) and the open ARs' hosts (``active``); a
    subclass adds its own entries with ``load`` and ``entries``."""

    what = "ledger"
    """How errors name the file, e.g. "Grid Engine ledger"."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.RLock()
        self.reload()

    def reload(self) -> None:
        """What the file says now: at start, and when this daemon takes the
        lead from another that shares the file (it wrote since)."""
        with self.lock:
            raw = statefile.load(self.path, self.what)
            self.ars: list[int] = raw.get("ars", [])
            self.active: dict[str, list[str]] = raw.get("active", {})   # AR id -> hosts
            self.load(raw)

    def load(self, raw: dict[str, Any]) -> None:
        """Take the subclass's entries from the file's mapping."""

    def entries(self) -> dict[str, Any]:
        """The subclass's entries, as saved."""
        return {}

    def save(self) -> None:
        with self.lock:
            statefile.save(self.path, {"ars": self.ars, "active": self.active, **self.entries()})

    # -- the ARs whose objects exist ---------------------------------------------------

    def owns(self, ar_id: int) -> bool:
        return ar_id in self.ars

    def owned(self) -> list[int]:
        return list(self.ars)

    def claim(self, ar_id: int) -> None:
        """Before creating an AR's objects."""
        with self.lock:
            if ar_id not in self.ars:
                self.ars.append(ar_id)
                self.save()

    def forget(self, ar_id: int) -> None:
        """After deleting an AR's objects."""
        with self.lock:
            if ar_id in self.ars or str(ar_id) in self.active:
                self.ars = [i for i in self.ars if i != ar_id]
                self.active.pop(str(ar_id), None)
                self.save()

    # -- open ARs ----------------------------------------------------------------------

    def set_active(self, ar_id: int, hosts: list[str] | None) -> None:
        """Record that an AR is open on ``hosts`` (None: closed)."""
        with self.lock:
            key = str(ar_id)
            wanted = None if hosts is None else sorted(hosts)
            if self.active.get(key) == wanted:
                return
            if wanted is None:
                del self.active[key]
            else:
                self.active[key] = wanted
            self.save()

    def active_ids(self) -> set[int]:
        with self.lock:
            return {int(k) for k in self.active}

    def active_hosts(self) -> set[str]:
        with self.lock:
            return {h for hosts in self.active.values() for h in hosts}


class Applied:
    """What each AR's objects were last made into: (phase, fingerprint,
    shut). In memory only: after a restart every AR is applied once anew."""

    def __init__(self) -> None:
        self._phases: dict[int, tuple[str, tuple | None, bool]] = {}

    def phase(self, ar_id: int) -> str | None:
        applied = self._phases.get(ar_id)
        return applied[0] if applied else None

    def current(self, ar_id: int, fingerprint: tuple) -> bool:
        """Whether the AR's objects are already made from ``fingerprint``."""
        applied = self._phases.get(ar_id)
        return bool(applied) and applied[0] in (PREPARED, OPEN) and applied[1] == fingerprint

    def is_open(self, ar_id: int, fingerprint: tuple, shut: bool) -> bool:
        return self._phases.get(ar_id) == (OPEN, fingerprint, shut)

    def note(self, ar_id: int, phase: str, fingerprint: tuple | None = None,
             shut: bool = False) -> None:
        self._phases[ar_id] = (phase, fingerprint, shut)

    def forget(self, ar_id: int) -> None:
        """The AR is applied anew at the next call."""
        self._phases.pop(ar_id, None)

    def clear(self) -> None:
        """As after a restart."""
        self._phases.clear()

    def notice(self, ar_id: int, usable: bool | None) -> None:
        """The AR's queue as the batch system shows it (``usable``: takes
        jobs; None: gone): forgotten if it is not what was applied (a
        prepared queue is shut, an open one usable unless held), so the
        next pass puts it right."""
        applied = self._phases.get(ar_id)
        if applied is None or applied[0] == RELEASED:
            return
        if usable is None or usable != (applied[0] == OPEN and not applied[2]):
            self.forget(ar_id)


class QueueBackend(Backend):
    """The lifecycle of a backend that keeps a queue per AR (the module's
    docstring says what a subclass implements)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.lock = threading.RLock()
        self._applied = Applied()
        self._stood_by = False

    def stand_by(self) -> None:
        """Another daemon leads and may write the ledger (daemons that may
        lead share it, in a ``state_dir`` on storage they all write): the
        first call after this one reads it again and applies every AR anew."""
        with self.lock:
            self._stood_by = True

    def _current(self) -> None:
        """Under ``self.lock``, at the start of every lifecycle call."""
        if self._stood_by:
            self.ledger.reload()
            self._applied.clear()
            self._stood_by = False

    # -- what a backend implements ---------------------------------------------------

    @abstractmethod
    def fingerprint(self, ar: Reservation) -> tuple:
        """What the AR's objects are made from: a change means they need work."""

    @abstractmethod
    def create(self, ar: Reservation) -> None:
        """Make or correct the AR's objects, unusable until its start."""

    @abstractmethod
    def keep_others_off(self, ar: Reservation, hosts: list[str]) -> None:
        """The AR is open on ``hosts``: others' jobs and queues off them."""

    @abstractmethod
    def open_queue(self, ar: Reservation, shut: bool) -> None:
        """Make the AR's queue usable (or keep it shut while ``shut``)."""

    @abstractmethod
    def give_back(self, ar: Reservation) -> None:
        """On cancel: the AR's jobs go, its hosts are given back, its
        objects stay (closed) with the record."""

    @abstractmethod
    def remove(self, ar_id: int) -> None:
        """The AR's jobs and objects go and its hosts are given back."""

    @abstractmethod
    def ar_of(self, queue: str) -> int | None:
        """The AR whose queue this name is (by name alone), if any."""

    def ready(self) -> None:
        """Before an AR's objects are first made: site-wide objects they need."""

    def opened(self, ar: Reservation, shut: bool) -> None:
        """After the AR's queue was opened (or shut) and so noted."""

    def window_granted(self, ar: Reservation) -> None:
        """The AR's window ahead was made or changed."""

    def window_dropped(self, ar_id: int) -> None:
        """The AR's window no longer holds its hosts."""

    def reconciled(self, reservations: list[Reservation]) -> None:
        """The backend's own part of a reconcile pass, after the kit's."""

    # -- what the kit does -------------------------------------------------------------

    def is_ar_queue(self, queue: str | None) -> bool:
        """Whether ``queue`` is the queue of an AR this backend made."""
        ar_id = self.ar_of(queue or "")
        return ar_id is not None and self.ledger.owns(ar_id)

    def released(self, ar_id: int) -> bool:
        return self._applied.phase(ar_id) == RELEASED

    def windows_ahead(self, reservations: list[Reservation]) -> list[Reservation]:
        """The ARs whose windows hold their hosts, now or later, and whose
        objects exist."""
        return [ar for ar in reservations
                if ar.holds_resources and ar.state not in UNGRANTED_STATES
                and self.ledger.owns(ar.id) and not self.released(ar.id)]

    def prepare(self, reservation: Reservation) -> None:
        with self.lock:
            self._current()
            fingerprint = self.fingerprint(reservation)
            if self._applied.current(reservation.id, fingerprint):
                return
            self.ready()
            self.ledger.claim(reservation.id)
            self.create(reservation)
            self._applied.note(reservation.id, PREPARED, fingerprint)
            self.window_granted(reservation)

    def activate(self, reservation: Reservation) -> None:
        with self.lock:
            self._current()
            hosts = sorted(reservation.node_names)
            fingerprint, shut = self.fingerprint(reservation), kept_shut(reservation)
            self.ledger.set_active(reservation.id, hosts)
            self.keep_others_off(reservation, hosts)
            if not self._applied.is_open(reservation.id, fingerprint, shut):
                self.open_queue(reservation, shut)
                self._applied.note(reservation.id, OPEN, fingerprint, shut)
                self.opened(reservation, shut)

    def teardown(self, reservation: Reservation) -> None:
        with self.lock:
            self._current()
            self._remove(reservation.id)

    def _remove(self, ar_id: int) -> None:
        if not self.ledger.owns(ar_id):
            return
        self.remove(ar_id)
        self.ledger.forget(ar_id)
        self._applied.forget(ar_id)
        self.window_dropped(ar_id)

    def release(self, reservation: Reservation) -> None:
        """plus_cancel: the AR's jobs go and its hosts are given back; its
        objects stay with the record until plus_destroy or expiry (PluS 3.1.5)."""
        with self.lock:
            self._current()
            if not self.ledger.owns(reservation.id) or self.released(reservation.id):
                return
            self.give_back(reservation)
            self._applied.note(reservation.id, RELEASED)
            self.window_dropped(reservation.id)

    def modify(self, before: Reservation, after: Reservation) -> None:
        """prepare() corrects every live object to the new AR; the reconcile
        step after it opens or closes the window as the new times say."""
        with self.lock:
            self._current()
            self._applied.forget(after.id)
            self.prepare(after)

    def reconcile(self, reservations: list[Reservation]) -> None:
        """Remove the objects of ARs the store no longer has, close the ARs
        the store says are not open, then the backend's own pass."""
        with self.lock:
            self._current()
            known = {ar.id: ar for ar in reservations}
            for ar_id in self.ledger.owned():
                if ar_id not in known:
                    self._remove(ar_id)
            for ar_id in self.ledger.active_ids():
                ar = known.get(ar_id)
                if ar is None or ar.state not in OPEN_STATES:
                    self.ledger.set_active(ar_id, None)
            self.reconciled(reservations)
