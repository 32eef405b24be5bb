"""The use cases: reserve, modify, cancel, destroy, commit, abort, status,
availnodes, and how an AR changes when the clock says so (the lifecycle,
overlay/usecases/lifecycle.py, decides when).

The manager keeps the ARs and a planner in memory for speed; every change
goes to the store first (which re-checks capacity under its lock), then to
memory; the enforcer (overlay/usecases/enforcer.py) then makes the backend
follow, outside this room's lock, so no use case calls the backend or waits
for it. A backend failure never loses an AR: the enforcer applies the
store's state again until the backend agrees.
"""

from __future__ import annotations

import grp
import logging
import pwd
import threading
import time
from dataclasses import dataclass, replace
from functools import cache, partial, wraps
from types import MappingProxyType
from typing import Callable, Iterable, Iterator, Mapping, NamedTuple, Sequence

import pluggy

from overlay.contract import plugins
from overlay.contract.advice import Advice
from overlay.contract.backend import Backend, Inventory, JobBar, ShownJob, problems_on
from overlay.contract.policy import PolicyContext, context_for, used_part
from overlay.daemon.config import Config
from overlay.events.catalog import BY_AR_LOG, GRANTED, RELEASED, reservation_event
from overlay.kit.users import groups_of, listed, system_account
from overlay.language.matching import wildcard_match
from overlay.language.model import (
    FINISHED_STATES,
    Allocation,
    AlreadyEnded,
    InvalidRequest,
    LimitExceeded,
    NoCapacity,
    Node,
    Operation,
    PermissionDenied,
    Request,
    Reservation,
    ReservationError,
    State,
    UnknownJob,
    UnknownReservation,
)
from overlay.language.request import (
    RequestError,
    access_list,
    parse_mail_list,
    parse_mail_options,
    window_end,
)
from overlay.log.ratelog import RateLimitedLog
from overlay.persistence.inventory import PublishedInventory
from overlay.persistence.store import Changes, Conflict, Stale, Store
from overlay.placement.nesting import Inside, accessible, enforced, merged
from overlay.placement.placer import Placer, booking_keys
from overlay.placement.planner import MultiPlanner, covered_ranges
from overlay.reporting.accounting import (
    EVENT_APPROVAL_REQUESTED,
    EVENT_APPROVED,
    EVENT_DELETED,
    EVENT_DENIED,
    EVENT_MODIFIED,
    EVENT_SATISFIED,
    EVENT_START,
    EVENT_TERMINATED,
    EVENT_UNSATISFIED,
    ar_acct_records,
    ar_attribute_records,
    ar_log_records,
    new_ar_records,
)
from overlay.usecases import approval, maintenance
from overlay.usecases.activity import Activity
from overlay.usecases.enforcer import Enforcer
from overlay.usecases.tally import Tally

log = logging.getLogger("plus.manager")

START_GRACE = 60
"""A start this many seconds in the past still counts as now (clock skew, typing time)."""
_NO_END = 2 ** 40
"""The end of a job's holding when it has no run time limit (h_rt, walltime)."""
_EARLIEST_TRIES = 8
"""Ranges whose first start RESQANDSET tries before it gives up."""
_STALE_TRIES = 3
"""Runs of a use case whose write met an AR another daemon changed meanwhile."""
_NAME_PATTERNS = 16
"""AR name patterns one status request may hold (qrstat -ar)."""
EVENT_LINES = 60
"""Log lines of AR events per owner and minute: a loop of reserve and cancel
must not flood the log (the reporting file records every event)."""


@dataclass(frozen=True)
class Caller:
    """Who is asking, as the socket's peer credentials say."""

    uid: int
    user: str
    groups: tuple[str, ...]
    is_manager: bool


class Told(NamedTuple):
    """An ar_log event of a change, in 8.1.9's words; ``why`` goes to the
    daemon's log only, ``data`` to its event (overlay.events.catalog)."""

    event: str
    message: str
    why: str = ""
    data: Mapping[str, object] | None = None
    kind: str | None = None
    """The event's type, when it is not the ar_log event's own (BY_AR_LOG)."""


@dataclass(frozen=True)
class Report:
    """The reporting records of one change, in 8.1.9's order: new_ar and
    ar_attribute at a grant, ar_attribute at a modification, ar_acct when
    it frees its hosts, then its ar_log events. They go into the store's
    outbox in the change's own transaction (the leader appends them to the
    reporting file), so a refused or retried attempt leaves none."""

    granted: bool = False
    attribute: bool = False
    acct: bool = False
    events: tuple[Told, ...] = ()
    grants: bool = False
    """The AR becomes granted now without new records (a manager approved
    one made in state h, whose records its request wrote)."""

    def lines(self, now: int, ar: Reservation) -> list[str]:
        lines = new_ar_records(now, ar) if self.granted else []
        if self.granted or self.attribute:
            lines += ar_attribute_records(now, ar)
        if self.acct:
            lines += ar_acct_records(now, ar)
        for told in self.events:
            lines += ar_log_records(now, ar, told.event, told.message)
        return lines

    def told(self, now: int, ar: Reservation) -> list[dict]:
        """The change's events (overlay.events.catalog), for the event
        table in the same transaction: a grant, then one per ar_log event."""
        kinds: list[tuple[str, Mapping[str, object] | None]] = [(GRANTED, None)] \
            if self.granted and ar.state is not State.AWAITING else []
        kinds += [(told.kind or BY_AR_LOG[told.event], told.data) for told in self.events
                  if told.kind or told.event in BY_AR_LOG]
        if self.grants:
            kinds.append((GRANTED, None))
        return [reservation_event(kind, now, ar, **(data or {})) for kind, data in kinds]


_MODIFIED = Report(attribute=True, events=(Told(EVENT_MODIFIED, "AR modified"),))
"""The records of a modification: the new attributes, and the event."""


class RefusedChange(NamedTuple):
    """The last refused plus_modify of an AR, shown by plus_status -r (as
    qrstat -explain shows why an AR is in error); kept in memory only."""

    time: int
    operation: str
    reason: str


def owner_of(ar: Reservation) -> Caller:
    """The AR's owner as a caller, for the policies a manager's change to
    it must pass; an owner gone from the password database keeps the AR's group."""
    try:
        entry = pwd.getpwnam(ar.owner)
    except KeyError:
        return Caller(-1, ar.owner, (ar.group,) if ar.group else (), False)
    return Caller(entry.pw_uid, ar.owner, groups_of(ar.owner, entry.pw_gid), False)


def _spans(ar: Reservation) -> Iterator[tuple[object, str, int, int, int, int | None]]:
    """What ``ar`` holds, as (key, node, start, end, slots, within): its
    granted window, and the window a pending modification asks for; with
    ``within``, inside that AR's slots (ResAccess) instead of the node's."""
    granted, pending = booking_keys(ar.id)
    if ar.holds_resources:
        for a in ar.allocations:
            yield granted, a.node, ar.start, ar.end, a.slots, a.within
    if ar.pending_request is not None:
        for a in ar.pending_allocations:
            yield (pending, a.node, ar.pending_request.start, ar.pending_request.end,
                   a.slots, a.within)


_FIXED_REFUSALS = (InvalidRequest, PermissionDenied, LimitExceeded, UnknownReservation)
"""Refusals that no AR's state decides, so no other daemon's write changes
them, or decided on the store already (an AR not there, ``Manager._get``)."""


class _NotInMemory(UnknownReservation):
    """An AR id memory lacks (``Manager._get``): looked for in the store by
    ``_retried_when_stale``, outside the Manager's lock."""

    def __init__(self, ar_id: int) -> None:
        super().__init__(f"AR {ar_id} does not exist")
        self.ar_id = ar_id


def _retried_when_stale(use_case: Callable) -> Callable:
    """A use case whose write meets an AR another daemon changed meanwhile
    (Stale) takes in what changed and runs again on it, never overwriting;
    after _STALE_TRIES, the client is told to try again. A refusal decided
    on memory (no such operation pending, one pending, no capacity) is
    made again if other daemons changed the store since memory last took
    it in: a client that asked one daemon and then another is answered
    from what the first one stored, never from what the second had heard.
    Each attempt's records travel with its writes (Report), so a refused
    write's went with its rolled-back transaction: only the attempt that
    commits reports. An AR id memory lacks is looked for in the store here,
    outside the lock (made at another daemon a moment ago, the change feed
    not heard yet, or not at all while the feed is cut off): never "does
    not exist" for an AR that does, and a store that cannot be reached
    refuses the command saying so, without holding up anyone else's. A
    client may name ids at will: an id the store lacks costs one lookup by
    primary key, and only one it holds a catch-up."""
    @wraps(use_case)
    def run(self: "Manager", *args, **kwargs):
        for attempt in range(1, _STALE_TRIES + 1):
            seen = self.seen_revision       # the change feed may take changes in meanwhile
            try:
                return use_case(self, *args, **kwargs)
            except _NotInMemory as exc:
                if attempt == _STALE_TRIES or not self.store.holds(exc.ar_id):
                    raise
                self.catch_up()
            except Stale as exc:
                if attempt == _STALE_TRIES:
                    raise Conflict(f"{exc}, again and again by other daemons; try again") from None
                self.catch_up()
            except _FIXED_REFUSALS:
                raise
            except ReservationError:
                if attempt == _STALE_TRIES:
                    raise
                self.catch_up()
                if self.seen_revision == seen:
                    raise
    return run


class Manager:
    """All ARs of one daemon and the operations on them; thread-safe."""

    def __init__(self, config: Config, store: Store, backend: Backend,
                 plugin_manager: pluggy.PluginManager, reported: Callable[[], object],
                 clock: Callable[[], float] = time.time) -> None:
        """``reported`` is told after a change put reporting records into
        the store's outbox (the daemon wakes its drain)."""
        self.config = config
        self.store = store
        self.backend = backend
        self.pm = plugin_manager
        self.reported = reported
        self.clock = clock
        self.lock = threading.RLock()
        self.planner = MultiPlanner()
        self.activity = Activity()
        self.events_log = RateLimitedLog(log, burst=EVENT_LINES)
        self.nodes: dict[str, Node] = {}
        self._capacity: dict[str, int] | None = None
        self.seen_revision, stored = store.snapshot()  # the store's writes taken in so far
        self._removed_here: dict[int, int] = {}  # AR id: revision, of removals past seen_revision
        self.ars: dict[int, Reservation] = {ar.id: ar for ar in stored}
        self.tally = Tally(self.ars.values())   # /metrics' counts, kept as memory changes
        self.changed: set[int] = set()      # AR ids stored or removed since the lifecycle's last look
        self.revision = time.time_ns()      # goes up with every AR stored or removed
        self._finished = {ar.id for ar in self.ars.values() if ar.state in FINISHED_STATES}
        self.refusals: dict[int, RefusedChange] = {}
        self.history: list[Reservation] = store.load_usage(self.now() - config.usage_history)
        self.by_key: dict[tuple[str, str], int] = {
            (ar.owner, ar.idempotency_key): ar.id for ar in self.ars.values() if ar.idempotency_key}
        self.inside = Inside()
        self.observed = PublishedInventory(store)
        self.placer = Placer(config, lambda: self.backend, self.planner, self.inside,
                             lambda: self.pm, self.now, lambda: self.inventory)
        self.enforcer = Enforcer(lambda: self.backend, self._desired)
        self._tell_backend(self.ars.values(), ())
        if store.is_sqlite:                 # one daemon, which leads: it asks the backend
            self.refresh_nodes(publish=True)
        else:                               # it may stand by: what the leader published
            self.take_published()
        spans = [span for ar in self.ars.values() for span in _spans(ar)]
        self.planner.book_many(span[:5] for span in spans if span[5] is None)
        for key, node, start, end, slots, within in spans:
            if within is not None:
                self.inside.book(key, node, within, start, end, slots)

    # -- helpers ---------------------------------------------------------------

    def now(self) -> int:
        return int(self.clock())

    @property
    def inventory(self) -> Inventory:
        """The nodes and running jobs as the leader last observed them
        (every daemon's the same): what the use cases read instead of
        asking the backend."""
        return self.observed.current

    def refresh_nodes(self, publish: bool = False) -> set[str]:
        """Take the backend's current nodes, with their running jobs counted,
        into the planner; the names of nodes that came, went, died or revived,
        or whose queue instances were disabled, suspended or taken back.
        ``publish`` (the leader's pass): the nodes and running jobs become
        the inventory, in the store first."""
        with self.enforcer.lock:          # the backend, asked outside the use cases' lock
            seen, running = self.backend.nodes(), self.backend.running_jobs()
        with self.lock:
            seen = self.activity.apply(seen, running, self.now())
        if publish:
            self.observed.publish(seen, running, self.now(),
                                  job_events=not self.backend.writes_job_events)
        return self._take_nodes(seen)

    def take_published(self) -> bool:
        """Take in the inventory the leader published since the last look
        (the change feed's word, and a standby's start): its nodes, with
        their running jobs counted, into the planner when they or the jobs
        changed (placement, problems_on and availnodes answer from the
        leader's view); whether they did."""
        taken = self.observed.revision
        self.observed.take()
        if self.observed.revision == taken:
            return False
        inventory = self.inventory
        with self.lock:
            self._take_nodes(self.activity.apply(inventory.nodes, inventory.jobs, self.now()))
        return True

    def _take_nodes(self, nodes: Iterable[Node]) -> set[str]:
        """``nodes`` (with their running jobs counted and idle times) become
        the nodes the use cases place on; the names of those that came,
        went or changed their liveness or queue states."""
        with self.lock:
            before, self.nodes = self.nodes, {node.name: node for node in nodes}
            self.placer.refresh(self.nodes)
            self._capacity = None
            moved = set(before.keys() - self.nodes.keys())
            for node in self.nodes.values():
                self.planner.set_capacity(node.name, node.slots)
                previous = before.get(node.name)
                if previous is None or (previous.alive, previous.queue_states) != (
                        node.alive, node.queue_states):
                    moved.add(node.name)
            return moved

    def copies(self) -> Mapping[int, Reservation]:
        """Memory's ARs by id, read-only and live, for readers outside the
        lock that keep something per AR copy (a change replaces an AR,
        never alters it)."""
        return MappingProxyType(self.ars)

    def behind_store(self) -> int:
        """How many revisions memory is behind the store (one small read;
        StoreUnavailable if the store does not answer)."""
        return max(0, self.store.revision() - self.seen_revision)

    def take_changed(self) -> set[int]:
        """The ids of the ARs stored or removed since the last call."""
        with self.lock:
            changed, self.changed = self.changed, set()
            return changed

    def ars_on(self, nodes: Iterable[str]) -> set[int]:
        """The ids of the ARs holding (or asking for) some of ``nodes``."""
        return {key if isinstance(key, int) else key[0]
                for node in nodes
                for key in self.planner.keys_on(node) + self.inside.keys_on(node)}

    def known_nodes(self) -> dict[str, Node]:
        """The nodes by name as the last refresh took them in (the dict is
        replaced whole by the next one, never changed: safe to read)."""
        return self.nodes

    def capacity(self) -> dict[str, int]:
        """Each node's slots, worked out once per refresh of the nodes (read only)."""
        if self._capacity is None:
            self._capacity = {name: node.slots for name, node in self.nodes.items()}
        return self._capacity

    def node_properties(self) -> dict[str, dict[str, str]]:
        """The PluS properties of each node that has some (read only)."""
        return {name: node.properties for name, node in self.nodes.items() if node.properties}

    def _book(self, ar: Reservation) -> None:
        self._unbook(ar.id)
        for key, node, start, end, slots, within in _spans(ar):
            if within is None:
                self.planner.book(key, node, start, end, slots)
            else:
                self.inside.book(key, node, within, start, end, slots)

    def _stored(self, ar: Reservation, capacity: dict[str, int] | None = None,
                report: Report | None = None, **changes) -> Reservation:
        """``ar`` with ``changes``, saved with its ``report``, and only then in
        memory: a write the store refuses (a full disk, a lost race) leaves
        memory and the outbox as they were."""
        updated = replace(ar, **changes)
        now = self.now()
        self.store.save(updated, capacity, report.lines(now, updated) if report else (),
                        report.told(now, updated) if report else ())
        self._keep(updated)
        self._told(updated, report)
        return updated

    def _told(self, ar: Reservation, report: Report | None) -> None:
        """A change and its records were committed: its events in the
        daemon's log, and the drain woken."""
        if report is None:
            return
        for told in report.events:
            self.events_log.info(ar.owner, "AR %d (%s, state %s): %s: %s%s", ar.id, ar.owner,
                                 ar.state.value, told.event, told.message,
                                 f" ({told.why})" if told.why else "")
        self.reported()

    def _keep(self, ar: Reservation) -> None:
        """Hold ``ar`` in memory (after the store has it) and note the change
        (and of the ARs it is inside, whose enforced slots follow it)."""
        self.tally.replace(self.ars.get(ar.id), ar)
        self.ars[ar.id] = ar
        self._tell_backend((ar,), ())
        self.changed.add(ar.id)
        self.changed.update(ar.outers)
        self.enforcer.want({ar.id, *ar.outers})
        self.revision += 1
        self._noted(ar.revision)
        if ar.idempotency_key:
            self.by_key[ar.owner, ar.idempotency_key] = ar.id
        if ar.state in FINISHED_STATES:
            self._finished.add(ar.id)
        else:
            self._finished.discard(ar.id)

    def _event(self, hook: str, **arguments) -> None:
        """Tell the plugins of a change the store has already committed; a
        plugin that fails is logged, and the command still succeeds."""
        ar = arguments["reservation"]
        arguments["advice"] = Advice(self.config.timezone, partial(self.submit_hint, ar))
        try:
            getattr(self.pm.hook, hook)(**arguments)
        except Exception:
            log.exception("plugin hook %s failed", hook)

    def _unbook(self, ar_id: int) -> None:
        for key in booking_keys(ar_id):
            self.planner.unbook(key)
            self.inside.unbook(key)

    def _get(self, ar_id: int) -> Reservation:
        """The AR, from memory; one memory lacks is looked for in the store
        by the use case's ``_retried_when_stale``, outside the lock."""
        ar = self.ars.get(ar_id)
        if ar is None:
            raise _NotInMemory(ar_id)
        return ar

    def _check_owner(self, caller: Caller, ar: Reservation, action: str) -> None:
        if caller.user != ar.owner and not caller.is_manager:
            raise PermissionDenied(f"AR {ar.id} belongs to {ar.owner}; only its owner "
                                   f"or a manager may {action} it")

    def _check_no_pending(self, ar: Reservation) -> None:
        if ar.pending is not None:
            raise ReservationError(f"AR {ar.id} has an uncommitted {ar.pending.value}; "
                                   f"run plus_commit -r {ar.id} or plus_abort -r {ar.id} first")

    @staticmethod
    def _check_not_ended(ar: Reservation) -> None:
        if ar.state in FINISHED_STATES:
            raise AlreadyEnded(f"AR {ar.id} has already ended (state {ar.state.value})")

    def _may_create(self, caller: Caller) -> bool:
        return caller.is_manager or listed(self.config.arusers, caller.user, caller.groups)

    def _context(self, ignoring: int | None = None) -> PolicyContext:
        """What the policies of one request see (``ignoring`` the AR a modify
        changes); NodesUnknown before any leader observed the nodes."""
        self.observed.nodes_known()
        return context_for(self.now(), tuple(self.nodes.values()), self.ars.values(),
                           self.history, ignoring)

    def _remove(self, ar: Reservation, until: int | None = None, report: Report | None = None,
                shown: Reservation | None = None) -> None:
        """Forget ``ar`` in the store and in memory, keeping for the policies
        the part of it that was used (up to ``until`` if it is still open)
        for ``usage_history`` seconds; with ``report``, the records of ``ar``
        as it is ``shown`` in them."""
        used = None
        if self.config.usage_history and ar.state != State.PENDING:
            used = used_part(ar, until)
        shown = shown or ar
        now = self.now()
        lines, told = (report.lines(now, shown), report.told(now, shown)) if report else ((), ())
        removed_at = self.store.remove(ar, used, lines, told)
        self._noted(removed_at)
        if removed_at > self.seen_revision:
            self._removed_here[ar.id] = removed_at
        self._drop(ar)
        if used is not None:
            self.history.append(used)
        self._told(shown, report)

    def _tell_backend(self, written: Iterable[Reservation], removed: Iterable[int]) -> None:
        """The backend's copy of the ARs follows memory's (``ars_changed``);
        its failure is a bug of its own, logged: the change is committed."""
        try:
            self.backend.ars_changed(written, removed)
        except Exception:
            self.events_log.log(logging.ERROR, "ars_changed", "the %s backend could not take "
                                "in changed ARs", self.backend.name, exc_info=True)

    def _drop(self, ar: Reservation) -> None:
        """``ar`` is gone from the store: out of memory and its bookings,
        and (by the enforcer) the backend."""
        gone = self.enforced(ar)
        self.tally.replace(self.ars.pop(ar.id), None)
        self._tell_backend((), (ar.id,))
        self._unbook(ar.id)
        self.by_key.pop((ar.owner, ar.idempotency_key), None)
        self.changed.add(ar.id)
        self.changed.update(ar.outers)
        self.enforcer.want({ar.id, *ar.outers}, gone=gone)
        self.revision += 1
        self._finished.discard(ar.id)
        self.refusals.pop(ar.id, None)

    def _noted(self, revision: int) -> None:
        """This daemon wrote ``revision``: if it is the next one, memory is
        still the store's whole state (other daemons' writes come by
        ``catch_up``)."""
        if revision == self.seen_revision + 1:
            self.seen_revision = revision

    def catch_up(self) -> set[int]:
        """Take what other daemons wrote since this one last looked into
        memory (the change feed calls it, and a use case whose write met a
        newer revision); the ids of the ARs that changed. The store is read
        outside the lock; only a copy newer than memory's replaces it. Reads
        race (the feed's, a retry's, the leader's pass): one that another
        has overtaken is dropped, and an AR this daemon removed after a
        read's snapshot is not taken back from it (the kill -9 loop found a
        destroyed AR shown again, for good). The usage an AR removed
        elsewhere left joins the history the policies read (usage caps and
        quotas answer alike at every daemon)."""
        changes, history = self.store.changes_since(self.seen_revision), None
        if changes is None:
            revision, stored = self.store.snapshot()
            history = self.store.load_usage(self.now() - self.config.usage_history)
            with self.lock:
                gone = [(ar_id, revision) for ar_id in self.ars.keys() - {a.id for a in stored}]
            changes = Changes(revision, stored, gone, {})
        changed = set()
        with self.lock:
            if changes.revision < self.seen_revision:
                return changed                     # overtaken: memory holds more already
            for ar_id, removed_at in changes.removed:
                mine = self.ars.get(ar_id)
                if mine is not None and mine.revision < removed_at:
                    self._drop(mine)
                    changed.add(ar_id)
                    if ar_id in changes.used:      # its use counts here too, for the policies
                        self.history.append(changes.used[ar_id])
            if history is not None:
                self.history = history
            for ar in changes.written:
                mine = self.ars.get(ar.id)
                if mine is None and self._removed_here.get(ar.id, 0) > ar.revision:
                    continue
                if mine is None or mine.revision < ar.revision:
                    self._keep(ar)
                    self._book(ar)
                    changed.add(ar.id)
            self.seen_revision = changes.revision
            if self._removed_here:
                self._removed_here = {ar_id: at for ar_id, at in self._removed_here.items()
                                      if at > self.seen_revision}
        return changed

    @staticmethod
    def _validate_users(request: Request, owner: str) -> None:
        """Every plus_reserve -U entry must name a known user or @group. A
        qrsub -u entry must name a known user, as 8.1.9's qrsub checks;
        its @entries are the batch system's access lists, which the
        backend checks as it places the slots. The owner is known (the
        peer credentials named it) and needs no lookup."""
        for entry in request.users:
            if entry == owner or (request.by_slots and entry.startswith("@")):
                continue
            try:
                if entry.startswith("@"):
                    grp.getgrnam(entry[1:])
                else:
                    pwd.getpwnam(entry)
            except KeyError:
                if request.by_slots:
                    raise InvalidRequest(f"-u: {entry} is not known as a user") from None
                kind = "group" if entry.startswith("@") else "user"
                raise InvalidRequest(f"-U: unknown {kind} '{entry.lstrip('@')}'") from None

    def _validate_request(self, owner: Caller, request: Request, operation: str,
                          context: PolicyContext, started: bool = False) -> None:
        """Checks of the core, then the policies' plus_validate_request."""
        now = self.now()
        if request.nodes < 1 and not request.by_slots:
            raise InvalidRequest(f"-n: the number of nodes must be at least 1, got {request.nodes}")
        if request.slots_per_node is not None and request.slots_per_node < 1:
            raise InvalidRequest(f"-sn: slots per node must be at least 1, got {request.slots_per_node}")
        if request.end <= request.start:
            raise InvalidRequest("the end time must be later than the start time")
        if not started and request.start < now - START_GRACE:
            raise InvalidRequest("the start time is in the past; give a start at or after now")
        if request.end <= now:
            raise InvalidRequest("the end time is in the past")
        if request.duration <= self.config.duration_offset and not request.by_slots:
            raise InvalidRequest(
                f"the duration ({request.duration} s) must exceed DURATION_OFFSET "
                f"({self.config.duration_offset} s), the time reserved for job start and cleanup")
        self._validate_users(request, owner.user)
        try:  # clients checked them; a hand-made call may not have
            if request.mail_options:
                parse_mail_options(request.mail_options)
            if request.mail_list:
                parse_mail_list(",".join(request.mail_list))
        except RequestError as exc:
            raise InvalidRequest(str(exc)) from None
        refusal = plugins.PolicyHook(self.pm, "plus_validate_request", request=request,
                                     owner=owner.user, groups=owner.groups, operation=operation,
                                     context=context).first_refusal()
        if refusal:
            raise PermissionDenied(refusal)

    def _allocate(self, owner: Caller, request: Request, context: PolicyContext,
                  ignore: Iterable = (), prefer: Iterable[str] = (),
                  avoid: Iterable[str] = ()) -> list[Allocation]:
        """The nodes the placement gives ``request``, on their own slots or
        inside the ARs its ResAccess names (checked here, among this
        daemon's ARs); ``ignore``, ``prefer`` and ``avoid`` as Placer.nodes."""
        outers = accessible(self.ars, request.res_access, owner.user, owner.groups,
                            owner.is_manager)
        return self.placer.nodes(owner, request, context, outers, ignore, prefer, avoid)

    # -- reserve ---------------------------------------------------------------

    @_retried_when_stale
    def reserve(self, caller: Caller, request: Request, transactional: bool = False,
                idempotency_key: str | None = None, verify: bool = False,
                start_now: bool = False, holdable: bool = True,
                force: bool = False, series: int | None = None,
                also: Callable | None = None) -> Reservation:
        """A new AR; with ``idempotency_key``, the AR a request of the same
        key already made (the same request retried), whatever its state;
        not ``holdable`` (GGF's SETRES, whose client takes an answer for a
        reservation), refused rather than held for a manager's approval;
        with ``verify`` (qrsub -w v), the AR it would be, not stored (id 0);
        with ``start_now`` (qrsub without -a or -e), the window starts at
        this daemon's now and keeps its length, as 8.1.9's qmaster sets it
        (a start the client took a second earlier would cost the end one).
        A maintenance request (managers only) with ``force`` takes nodes
        other ARs hold, which go to W/E (overlay/usecases/maintenance.py).
        ``series``: the series it is an occurrence of, whose step ``also``
        writes in the same transaction (overlay.usecases.series)."""
        self._check_maintenance(caller, request, force, transactional)
        with self.lock:
            if request.by_slots:
                request = self.backend.canonical(request)
            if idempotency_key is not None:
                made = self._made(caller, request, idempotency_key)
                if made is not None:
                    return made
            if not self._may_create(caller):
                raise PermissionDenied(f"{caller.user} may not create advance reservations: "
                                       "only managers and members of the arusers list may")
            limit = self.config.max_advance_reservations
            if limit and len(self.ars) - len(self._finished) >= limit:
                raise LimitExceeded(f"the number of advance reservations would exceed "
                                    f"max_advance_reservations ({limit})")
            now = self.now()
            context = self._context()
            self._validate_request(caller, request, "reserve", context)
            held_for = self._approval_needed(caller, request, "reserve", context)
            if held_for and transactional:
                raise InvalidRequest(f"{held_for}: this AR needs a manager's approval, which -T "
                                     "cannot wait for; reserve without -T")
            if held_for and not holdable:
                raise InvalidRequest(f"{held_for}: this AR needs a manager's approval, which a "
                                     "GGF reservation cannot wait for; ask with plus_reserve "
                                     "or POST /v1/reservations")
            start = now if start_now else max(request.start, now)
            end = start + request.duration if start_now else request.end
            request = self._owned(caller.user, replace(request, start=start, end=end))
            granted_pe, over = "", []
            if request.by_slots:
                if transactional:
                    raise InvalidRequest("a qrsub request (slots) is granted at once; "
                                         "transactional reservations are for nodes")
                allocations, granted_pe = self.placer.slots(caller, request, context)
            elif request.maint:
                allocations, over = self._maintenance_nodes(caller, request, context, force)
            else:
                allocations = self._allocate(caller, request, context)
            state = State.AWAITING if held_for else \
                State.PENDING if transactional else State.WAITING
            ar = Reservation(
                id=0, owner=caller.user, group=caller.groups[0] if caller.groups else "",
                request=request, state=state, message=approval.awaiting(held_for),
                approval_due=approval.due(now, self.config.approval_timeout, held_for),
                submission_time=now, allocations=allocations, window_set=now,
                acl=access_list(caller.user, request.users),
                account=request.account,
                pending=Operation.RESERVE if transactional else None,
                pending_since=now if transactional else None, idempotency_key=idempotency_key,
                granted_pe=granted_pe, series=series)
            if verify:
                return ar
            report = None if transactional else Report(granted=True, events=(
                Told(EVENT_APPROVAL_REQUESTED, held_for),) if held_for else ())
            self.store.create(ar, self.capacity(),
                              report and (lambda made: report.lines(now, made)),
                              report and (lambda made: report.told(now, made)), also, over=over)
            self._keep(ar)
            self._book(ar)
            self._told(ar, report)
            if held_for:
                self._event("plus_reservation_approval_requested", reservation=ar,
                            reason=held_for, managers=tuple(self.config.managers))
            elif not transactional:
                ar = self._granted(ar)
                self._degrade(over)
            return ar

    @staticmethod
    def _check_maintenance(caller: Caller, request: Request, force: bool,
                           transactional: bool) -> None:
        if request.maint and not caller.is_manager:
            raise PermissionDenied(f"--maint: {caller.user} is not a manager; only managers "
                                   "(plus.yaml's managers:) reserve nodes for maintenance")
        if force and not request.maint:
            raise InvalidRequest("--force: only a maintenance AR (--maint) takes nodes other "
                                 "ARs hold")
        if force and transactional:
            raise InvalidRequest("--force takes other ARs' nodes at once; it cannot wait for "
                                 "plus_commit (-T)")

    def _maintenance_nodes(self, caller: Caller, request: Request, context: PolicyContext,
                           force: bool) -> tuple[list[Allocation], list[int]]:
        """A maintenance request's nodes (busy and down ones too), free ones
        if enough are; else, with ``force``, over the ARs in the way, which
        are returned; without it, refused naming them."""
        try:
            return self._allocate(caller, request, context), []
        except NoCapacity as refused:
            in_way = maintenance.in_the_way(request, self.ars.values())
            if not in_way:
                raise
            ignored = [key for ar_id in in_way for key in booking_keys(ar_id)]
            try:
                allocations = self._allocate(caller, request, context, ignore=ignored)
            except NoCapacity:
                raise refused from None
        chosen = {a.node for a in allocations}
        over = sorted(ar_id for ar_id, nodes in in_way.items() if nodes & chosen)
        if not force:
            raise NoCapacity(f"--maint: the nodes are held by AR(s) "
                             f"{', '.join(map(str, over))} over the window; --force takes them "
                             "for maintenance and puts those ARs in W/E")
        return allocations, over

    def _degrade(self, over: Iterable[int]) -> None:
        """ARs a maintenance AR was forced over: W or E, naming it."""
        now = self.now()
        for ar_id in over:
            ar = self.ars.get(ar_id)
            if ar is None or ar.state not in maintenance.DEGRADABLE:
                continue
            held = maintenance.held_by_maintenance(ar, self.tally.maintenance())
            reason = "; ".join(text for text in (ar.message, maintenance.problem(held)) if text)
            self.change_state(ar, ar.error_state(now), reason)

    def start_ranges(self, caller: Caller, request: Request, last_start: int) -> list[tuple[int, int]]:
        """RESQUERY (seed 003): the closed ranges of start times, from the
        request's start (at the earliest now) to ``last_start``, at which a
        reservation of its shape (duration, node count, node requirements)
        would be granted to ``caller`` now. The nodes are those a reserve
        would consider (eligible, not blocked by the backend, passing the
        node policies), so every start in a range is grantable and every
        grantable start lies in one, as long as no policy judges the start
        time itself (those are asked at the earliest start)."""
        with self.lock:
            if not self._may_create(caller):
                raise PermissionDenied(f"{caller.user} may not create advance reservations: "
                                       "only managers and members of the arusers list may")
            first = max(request.start, self.now())
            request = self._owned(caller.user, replace(request, start=first,
                                                       end=first + request.duration))
            context = self._context()
            self._validate_request(caller, request, "reserve", context)
            if last_start < first:
                return []
            blocked = self.backend.blocked_nodes(request, self.inventory)
            hook = plugins.PolicyHook(self.pm, "plus_node_reservable", request=request,
                                      owner=caller.user, groups=caller.groups, context=context)
            outers = accessible(self.ars, request.res_access, caller.user, caller.groups,
                                caller.is_manager)
            nodes = [node for node in self.placer.eligible(request)
                     if not hook.first_refusal(node=node, allocated=())]
            slots = request.slots_per_node
            if outers:
                return covered_ranges((found for node in nodes for found in merged(
                    ([] if node.name in blocked else self.planner.node_ranges(
                        node.name, request.slots_on(node), request.duration, first, last_start))
                    + [found for outer in outers for found in self.inside.ranges(
                        outer, node.name, request.slots_on(node), request.duration, first,
                        last_start)])), request.nodes)

            def need(name: str) -> int:
                return slots

            return self.planner.start_ranges([node.name for node in nodes
                                              if node.name not in blocked],
                                             None if slots is None else need,
                                             request.nodes, request.duration, first, last_start)

    def _made(self, caller: Caller, request: Request, key: str) -> Reservation | None:
        """The AR an earlier request with ``key`` made, if it is this request."""
        ar = self.ars.get(self.by_key.get((caller.user, key), 0))
        if ar is None:
            return None
        same = replace(request, start=ar.request.start, users=ar.request.users) == ar.request
        if not same or request.start > ar.request.start:
            raise InvalidRequest(f"idempotency key {key} was given before to another request "
                                 f"(AR {ar.id}); give each request a key of its own")
        self.events_log.info(ar.owner, "AR %d: request with idempotency key %s repeated", ar.id,
                             key)
        return ar

    def job_start(self, caller: Caller, request: Request) -> tuple[int | None, str]:
        """QUERY (seed 003): when a job of the request's shape (node count,
        slots per node or whole nodes, node requirements, duration) would
        start if submitted now, with no reservation, and how that was
        estimated (with no start, why). The backend's own scheduler
        answers if it can, outside the lock; else the jobs' holdings it
        reports are booked beside the ARs for the question only (and
        released under the same lock), so the answer is never earlier than
        a schedule honouring every AR."""
        if request.nodes < 1:
            raise InvalidRequest(f"nodes: at least 1, got {request.nodes}")
        with self.lock:
            names = self._query_nodes(request)
        answer = self.backend.job_start(request, names, (caller.user, caller.groups))
        if answer is None:
            with self.lock:
                answer = self._start_beside_holdings(request, self._query_nodes(request))
        log.debug("QUERY for %s: %s (%s)", caller.user, *answer)
        return answer

    def _query_nodes(self, request: Request) -> list[str]:
        """The nodes QUERY's job may use; NoCapacity if too few match."""
        self.observed.nodes_known()
        names = [node.name for node in self.placer.eligible(request)]
        if len(names) < request.nodes:
            raise NoCapacity(f"only {len(names)} node(s) match the request; it needs "
                             f"{request.nodes}")
        return names

    def _start_beside_holdings(self, request: Request, names: list[str]) -> tuple[int | None, str]:
        """QUERY from what the backend says jobs hold, beside the ARs."""
        now = self.now()
        holdings, how = self.backend.job_holdings(now, self.inventory)
        eligible, booked = set(names), []
        try:
            for index, held in enumerate(holdings):
                if held.node not in eligible:
                    continue
                key = ("query", index)
                amount = self.planner.capacity(held.node) if held.slots is None else held.slots
                self.planner.book(key, held.node, max(held.start, now),
                                  held.end if held.end is not None else _NO_END, amount)
                booked.append(key)
            slots = request.slots_per_node
            start = self.planner.earliest_start(
                names, None if slots is None else (lambda name: slots), request.nodes,
                request.duration, now)
        finally:
            for key in booked:
                self.planner.unbook(key)
        if start is None or start >= _NO_END:
            return None, f"jobs without a run time limit hold too many of the nodes ({how})"
        return start, how

    @_retried_when_stale
    def reserve_earliest(self, caller: Caller, request: Request, last_start: int,
                         holdable: bool = True) -> Reservation:
        """RESQANDSET (seed 003): reserve at the earliest start up to
        ``last_start`` that start_ranges finds, under the same lock, so
        nothing takes it between the query and the reserve. A policy that
        judges the start time itself may refuse a range's first start: then
        the next range's is tried, up to _EARLIEST_TRIES of them."""
        with self.lock:
            ranges = self.start_ranges(caller, request, last_start)
            refusal: ReservationError = NoCapacity(
                f"no start between {max(request.start, self.now())} and {last_start} is free "
                f"for {request.nodes} node(s) for {request.duration} s")
            for low, _ in ranges[:_EARLIEST_TRIES]:
                try:
                    return self.reserve(caller, replace(request, start=low,
                                                        end=low + request.duration),
                                        holdable=holdable)
                except (NoCapacity, PermissionDenied) as exc:
                    refusal = exc
            raise refusal

    def _granted(self, ar: Reservation) -> Reservation:
        """A reservation became real (its records went with it): tell the
        plugins, and put it in W (or E) at once if a reserved instance was
        last seen unusable (Grid Engine grants ARs on disabled, suspended
        and unknown instances). The AR as it is now; the enforcer prepares
        the backend."""
        now = self.now()
        self._event("plus_reservation_granted", reservation=ar)
        problem = self._problem(ar) if ar.state in (State.WAITING, State.RUNNING) else None
        if problem:
            self.change_state(ar, ar.error_state(now), problem)
            ar = self.ars[ar.id]
        return ar

    def _problem(self, ar: Reservation) -> str | None:
        """Why ``ar`` cannot be honoured on its nodes as last seen, if it
        cannot (a maintenance AR always can); the lifecycle's next pass
        asks the backend."""
        if ar.request.maint:
            return None
        return problems_on([ar], self.nodes).get(ar.id)

    # -- modify ----------------------------------------------------------------

    @_retried_when_stale
    def modify(self, caller: Caller, ar_id: int, start: int | None, end: int | None,
               duration: int | None, nodes: int | None, users: tuple[str, ...] | None,
               transactional: bool = False, repair: str | None = None,
               notify_start: tuple[int, ...] | None = None,
               notify_end: tuple[int, ...] | None = None,
               idle_release: int | None = None,
               release_when_done: bool | None = None,
               clear_notice: tuple[int, ...] | None = None) -> Reservation:
        """plus_modify: a new window, node count, access list, repair mode,
        notice leads (clear-notice ones too) or early release (None:
        unchanged). An end at or
        before now (-e now) ends an open AR now: released (``end_now``)."""
        if end is not None and end <= self.now():
            others = {"-s": start, "-D": duration, "-n": nodes, "-U": users, "-repair": repair,
                      "--notify-start": notify_start, "--notify-end": notify_end,
                      "--idle-release": idle_release, "--release-when-done": release_when_done,
                      "--clear-notice": clear_notice}
            given = [option for option, value in others.items() if value is not None]
            if given or transactional:
                raise InvalidRequest(f"-e now ends AR {ar_id} at once: it cannot be combined "
                                     f"with {', '.join(given + ['-T'] * transactional)}; give "
                                     "-e now alone, or an end in the future")
            return self.end_now(caller, ar_id, "plus_modify -e now")
        with self.lock:
            ar = self._get(ar_id)
            self._check_owner(caller, ar, "modify")
            self._check_no_pending(ar)
            self._check_not_ended(ar)
            if ar.state is State.AWAITING:
                raise ReservationError(approval.unchangeable(ar))
            inner = sorted(i for i in self.inside.inner(ar.id) if i in self.ars)
            if inner and (start, end, duration, nodes) != (None, None, None, None):
                raise InvalidRequest(f"AR {ar_id} holds ARs placed inside it ("
                                     f"{', '.join(map(str, inner))}): its window and nodes cannot "
                                     "change while they do; cancel or move them first")
            if ar.request.by_slots:
                self._check_slot_modification(ar, nodes, transactional)
            now = self.now()
            started = now >= ar.start
            if started and start is not None and start != ar.start:
                raise ReservationError(f"AR {ar_id} has started; its start time can no longer change")
            request = self._modified_request(ar.request, start, end, duration, nodes, users,
                                             ar.owner, repair)
            request = replace(request, **{name: value for name, value in (
                ("notify_start", notify_start), ("notify_end", notify_end),
                ("idle_release", idle_release), ("release_when_done", release_when_done),
                ("clear_notice", clear_notice)) if value is not None})
            owner = caller if caller.user == ar.owner else owner_of(ar)
            context = self._context(ignoring=ar.id)
            try:
                self._validate_request(owner, request, "modify", context, started=started)
                held_for = self._approval_needed(caller, request, "modify", context, owner)
                if held_for:
                    raise PermissionDenied(approval.change_needs_manager(held_for))
                granted_pe = ar.granted_pe
                if request.by_slots:
                    allocations, granted_pe = self.placer.slots(owner, request, context, ar.id)
                else:
                    allocations = self._allocate(owner, request, context,
                                                 ignore=booking_keys(ar.id),
                                                 prefer=ar.node_names)
            except ReservationError as exc:
                self.refusals[ar.id] = RefusedChange(now, "modify", str(exc))
                raise
            self.refusals.pop(ar.id, None)
            if transactional:
                ar = self._stored(ar, self.capacity(), pending=Operation.MODIFY, pending_since=now,
                                  pending_request=request, pending_allocations=allocations)
                self._book(ar)
                return ar
            updated = replace(ar, request=request, allocations=allocations,
                              acl=access_list(ar.owner, request.users), granted_pe=granted_pe,
                              window_set=now)
            self.store.save(updated, self.capacity(), _MODIFIED.lines(now, updated),
                            _MODIFIED.told(now, updated))
            self._replace(ar, updated)
            return updated

    @staticmethod
    def _check_slot_modification(ar: Reservation, nodes: int | None, transactional: bool) -> None:
        """A qrsub AR keeps its shape: its window and access list change,
        its slots are what plus_qrsub asked for."""
        if nodes is not None:
            raise InvalidRequest(f"-n: AR {ar.id} reserves slots (plus_qrsub), not nodes; to "
                                 "change its slots, delete it with plus_qrdel and reserve again")
        if transactional:
            raise InvalidRequest(f"-T: AR {ar.id} reserves slots (plus_qrsub) and is modified at "
                                 "once; transactional modifications are for node reservations")

    def _modified_request(self, old: Request, start, end, duration, nodes, users,
                          owner: str, repair: str | None = None) -> Request:
        """-s alone moves the window (same length); -e or -D set its end."""
        new_start = old.start if start is None else start
        if end is None and duration is None:
            duration = old.duration
        new_end = window_end(new_start, end, duration)
        changed = replace(old, start=new_start, end=new_end,
                          nodes=old.nodes if nodes is None else nodes,
                          users=old.users if users is None else users,
                          repair=old.repair if repair is None else repair)
        return self._owned(owner, changed)

    @staticmethod
    def _owned(owner: str, request: Request) -> Request:
        """A node request's users with its owner first (plus_reserve -U);
        a qrsub request keeps the users -u gave, as 8.1.9 shows them in
        acl_list. Either AR's access list (Reservation.acl) has the owner."""
        if request.by_slots:
            return request
        return replace(request, users=access_list(owner, request.users))

    def _replace(self, before: Reservation, after: Reservation) -> None:
        """Memory and backend follow a modification stored with _MODIFIED's records."""
        self._keep(after)
        self._book(after)
        self._told(after, _MODIFIED)

    # -- cancel, destroy -------------------------------------------------------

    def select(self, caller: Caller, ar_id: int | None, owner: str | None, action: str,
               transactional: bool) -> list[Reservation]:
        """The ARs a cancel or destroy names by -r and/or -o, checked for rights."""
        if ar_id is None and owner is None:
            raise InvalidRequest(f"{action}: give -r rsvID or -o owner")
        if owner is not None and transactional:
            raise InvalidRequest(f"{action}: -T cannot be used with -o owner")
        if owner is not None and owner != caller.user and not caller.is_manager:
            raise PermissionDenied(f"only a manager may {action} the ARs of another user ({owner})")
        if ar_id is not None:
            ar = self._get(ar_id)
            if owner is not None and ar.owner != owner:
                raise InvalidRequest(f"AR {ar_id} belongs to {ar.owner}, not {owner}")
            self._check_owner(caller, ar, action)
            return [ar]
        return [ar for ar in sorted(self.ars.values(), key=lambda a: a.id) if ar.owner == owner]

    @_retried_when_stale
    def cancel(self, caller: Caller, ar_id: int | None, owner: str | None,
               transactional: bool = False) -> list[Reservation]:
        with self.lock:
            selected = self.select(caller, ar_id, owner, "cancel", transactional)
            if ar_id is not None:
                self._check_not_ended(selected[0])
            selected = [ar for ar in selected if ar.state not in FINISHED_STATES]
            return self._now_or_pending(selected, Operation.CANCEL, transactional, self._cancel_now)

    def _now_or_pending(self, selected: list[Reservation], operation: Operation,
                        transactional: bool, act: Callable[[Reservation], Reservation]
                        ) -> list[Reservation]:
        """Act on every selected AR now, or with -T mark it pending; none
        may already have a pending operation. The ARs as they are now."""
        for ar in selected:
            self._check_no_pending(ar)
        done = []
        for ar in selected:
            if transactional:
                done.append(self._stored(ar, pending=operation, pending_since=self.now()))
            else:
                done.append(act(ar))
        return done

    def _cancel_now(self, ar: Reservation, message: str = "cancelled") -> Reservation:
        self._cancel_inner(ar)
        now = self.now()
        ar = self._stored(ar, report=Report(acct=True, events=(Told(EVENT_DELETED, "AR deleted"),)),
                          state=State.DELETED, finished_time=now, message=message,
                          pending=None, pending_since=None)
        self._unbook(ar.id)
        self._event("plus_reservation_cancelled", reservation=ar)
        return ar

    @_retried_when_stale
    def destroy(self, caller: Caller, ar_id: int | None, owner: str | None,
                transactional: bool = False) -> list[Reservation]:
        with self.lock:
            selected = self.select(caller, ar_id, owner, "destroy", transactional)
            return self._now_or_pending(selected, Operation.DESTROY, transactional, self._destroy_now)

    def _cancel_inner(self, outer: Reservation) -> None:
        """The ARs inside ``outer`` (ResAccess) are cancelled with it: the
        slots they used go with it. Their records stay, saying why."""
        for inner_id in sorted(self.inside.inner(outer.id)):
            inner = self.ars.get(inner_id)
            if inner is not None and inner.state not in FINISHED_STATES:
                self._cancel_now(inner, f"cancelled with AR {outer.id}, inside which it was")

    def _destroy_now(self, ar: Reservation) -> Reservation:
        self._cancel_inner(ar)
        now = self.now()
        # as qrdel: an ended AR has its last record already, an uncommitted one none
        logged = ar.state not in FINISHED_STATES and ar.state != State.PENDING
        report = Report(acct=ar.holds_resources,
                        events=(Told(EVENT_DELETED, "AR deleted"),) if logged else ())
        self._remove(ar, until=None if ar.state in FINISHED_STATES else now, report=report,
                     shown=replace(ar, state=State.DELETED) if logged else ar)
        if ar.state not in FINISHED_STATES:
            self._event("plus_reservation_cancelled", reservation=ar)
        return ar

    # -- commit, abort ---------------------------------------------------------

    def _pending_ar(self, caller: Caller, ar_id: int, action: str) -> Reservation:
        ar = self._get(ar_id)
        self._check_owner(caller, ar, action)
        if ar.pending is None:
            raise ReservationError(f"AR {ar_id} has no operation waiting for plus_commit or plus_abort")
        return ar

    @_retried_when_stale
    def commit(self, caller: Caller, ar_id: int) -> Reservation:
        with self.lock:
            return self._commit(self._pending_ar(caller, ar_id, "commit"))

    def _commit(self, ar: Reservation) -> Reservation:
        operation = ar.pending
        if operation == Operation.RESERVE:
            state = ar.window_state(self.now())
            ar = self._stored(ar, report=Report(granted=True), pending=None, pending_since=None,
                              state=state, window_set=self.now(),
                              # a short window that ended while pending
                              finished_time=self.now() if state == State.EXITED else None)
            self._book(ar)
            ar = self._granted(ar)
        elif operation == Operation.MODIFY:
            updated = replace(ar, request=ar.pending_request, allocations=ar.pending_allocations,
                              acl=access_list(ar.owner, ar.pending_request.users),
                              window_set=self.now())
            updated.pending = updated.pending_since = updated.pending_request = None
            updated.pending_allocations = []
            now = self.now()
            self.store.save(updated, reports=_MODIFIED.lines(now, updated),
                            events=_MODIFIED.told(now, updated))
            self._replace(ar, updated)
            ar = updated
        elif operation == Operation.CANCEL:
            ar = self._cancel_now(ar)
        elif operation == Operation.DESTROY:
            ar = self._destroy_now(ar)
        return ar

    @_retried_when_stale
    def abort(self, caller: Caller, ar_id: int) -> Reservation:
        with self.lock:
            return self._abort(self._pending_ar(caller, ar_id, "abort"), "aborted")

    def _abort(self, ar: Reservation, why: str) -> Reservation:
        log.info("AR %s: %s %s", ar.id, ar.pending.value, why)
        if ar.pending == Operation.RESERVE:
            self._remove(ar)
            return ar
        ar = self._stored(ar, pending=None, pending_since=None, pending_request=None,
                          pending_allocations=[])
        self._book(ar)
        return ar

    # -- approval (overlay/usecases/approval.py says the words) -------------------

    def _approval_needed(self, caller: Caller, request: Request, operation: str,
                         context: PolicyContext, owner: Caller | None = None) -> str | None:
        """Why a manager must approve ``request`` first (the policies'
        plus_approval_needed), or None; never for a manager's own call."""
        if caller.is_manager:
            return None
        owner = owner or caller
        return plugins.PolicyHook(self.pm, "plus_approval_needed", request=request,
                                  owner=owner.user, groups=owner.groups, operation=operation,
                                  context=context).first_reason()

    @_retried_when_stale
    def awaiting(self, caller: Caller, ar_ids: Sequence[int], action: str) -> list[Reservation]:
        """The ARs a manager approves or denies: each must exist and wait
        in state h; checked for all before any is decided."""
        with self.lock:
            if not caller.is_manager:
                raise PermissionDenied(approval.not_a_manager(caller.user, action))
            ars = [self._get(ar_id) for ar_id in ar_ids]
            for ar in ars:
                approval.check_awaiting(ar, action)
            return ars

    @_retried_when_stale
    def approve(self, caller: Caller, ar_id: int) -> Reservation:
        """plus_approve: the AR is granted as it stands, in w (or r, its
        window open), and the enforcer puts it on the backend."""
        with self.lock:
            ar = self._get(ar_id)
            approval.check_awaiting(ar, "approve")
            now = self.now()
            approval.check_window_open(ar, now)
            state = ar.window_state(now)
            events = (Told(EVENT_APPROVED, f"approved by {caller.user}"),) + (
                (Told(EVENT_START, "start time of AR reached"),) if state is State.RUNNING else ())
            ar = self._stored(ar, report=Report(grants=True, events=events), state=state,
                              message="", approval_due=None, window_set=now)
            self._event("plus_reservation_approved", reservation=ar, approver=caller.user)
            ar = self._granted(ar)
            if state is State.RUNNING:
                self._event("plus_reservation_started", reservation=ar)
            return ar

    @_retried_when_stale
    def deny(self, caller: Caller, ar_id: int, reason: str) -> Reservation:
        """plus_deny: the AR is not granted; it ends in d, saying why."""
        with self.lock:
            ar = self._get(ar_id)
            approval.check_awaiting(ar, "deny")
            return self._refuse_approval(ar, approval.denied(caller.user, reason))

    def lapse(self, ar: Reservation, now: int) -> Reservation:
        """No manager decided in time (the lifecycle's word): as a deny."""
        return self._refuse_approval(ar, approval.lapsed(ar, now))

    def _refuse_approval(self, ar: Reservation, why: str) -> Reservation:
        now = self.now()
        ar = self._stored(ar, report=Report(acct=True, events=(Told(EVENT_DENIED, why),)),
                          state=State.DELETED, finished_time=now, message=why,
                          approval_due=None)
        self._unbook(ar.id)
        self._event("plus_reservation_denied", reservation=ar, reason=why)
        return ar

    # -- queries ---------------------------------------------------------------

    @_retried_when_stale
    def status(self, ar_id: int | None = None, owner: str | None = None,
               start: int | None = None, end: int | None = None,
               expired: int = 0, owners: Iterable[str] | None = None,
               refs: Iterable[str] | None = None,
               lingering: Callable[[], set[int] | frozenset[int]] = frozenset,
               ) -> list[Reservation]:
        """ARs by id, owner and window overlap; finished ones only by -r or,
        the most recent ``expired`` of them, by -ne, and deleted ones whose
        jobs are still ``lingering`` (Backend.lingering, asked only if a
        deleted AR is among them: it copies the backend's jobs). ``owners``:
        any of these (qrstat -u); ``refs``: AR ids, names or name patterns
        (qrstat -ar), each an error if nothing matches it."""
        with self.lock:
            if ar_id is not None:
                return [self._get(ar_id)]
            candidates = list(self.ars.values()) if refs is None else self._referenced(refs)
        # A change replaces an AR, never alters it: the copy taken under the
        # lock is one state, and choosing from it holds up no one else.
        wanted = None if owners is None or "*" in owners else set(owners)
        chosen = [ar for ar in candidates
                  if (owner is None or ar.owner == owner)
                  and (wanted is None or ar.owner in wanted)
                  and (start is None or ar.end > start)
                  and (end is None or ar.start < end)]
        held = cache(lingering)
        shown_live = [ar.state not in FINISHED_STATES or
                      (ar.state == State.DELETED and ar.id in held()) for ar in chosen]
        live = [ar for ar, alive in zip(chosen, shown_live, strict=True) if alive]
        done = sorted((ar for ar, alive in zip(chosen, shown_live, strict=True) if not alive),
                      key=lambda ar: (ar.finished_time or 0, ar.id))
        shown = live + (done[-expired:] if expired > 0 else [])
        return sorted(shown, key=lambda ar: ar.id)

    def _referenced(self, refs: Iterable[str]) -> list[Reservation]:
        """The ARs named by id, name or name pattern, in the order named;
        UnknownReservation listing those that match none. Names are looked
        up among the distinct names, and a request may hold at most
        _NAME_PATTERNS patterns: each costs a match per name, under the lock."""
        refs = list(refs)
        patterns = [ref for ref in refs if any(c in ref for c in "*?[")]
        if len(patterns) > _NAME_PATTERNS:
            raise InvalidRequest(f"-ar: {len(patterns)} name patterns; at most {_NAME_PATTERNS} "
                                 "are accepted in one request")
        named: dict[str, list[Reservation]] = {}
        for ar in self.ars.values():
            if ar.name:
                named.setdefault(ar.name, []).append(ar)
        found: dict[int, Reservation] = {}
        missing = []
        for ref in refs:
            if ref.isascii() and ref.isdigit():
                matched = [self.ars[int(ref)]] if int(ref) in self.ars else []
            elif ref in patterns:
                matched = [ar for name, ars in named.items() if wildcard_match(name, ref)
                           for ar in ars]
            else:
                matched = named.get(ref, [])
            if not matched:
                missing.append(ref)
            found.update((ar.id, ar) for ar in matched)
        if missing:
            raise UnknownReservation("Following advance reservations do not exist: "
                                     + ", ".join(missing))
        return list(found.values())

    def available_nodes(self, start: int, end: int) -> list[str]:
        """Live nodes wholly free over [start, end), in allocation order."""
        if end <= start:
            raise InvalidRequest("the end time must be later than the start time")
        with self.lock:
            self.observed.nodes_known()
            return self.planner.free_nodes([n.name for n in self.placer.reservable()], None, start, end)

    # -- what the clock changes (the lifecycle decides when) ----------------------

    def end(self, ar: Reservation) -> None:
        """The AR's end time has come: it exits and frees its nodes."""
        now = self.now()
        ar = self._stored(ar, report=Report(acct=True, events=(
            Told(EVENT_TERMINATED, "end time of AR reached"),)),
            state=State.EXITED, finished_time=now, message="")
        self._unbook(ar.id)
        self._event("plus_reservation_ended", reservation=ar)

    def release(self, ar: Reservation, why: str) -> Reservation:
        """The AR ends early, now (idle, its jobs done, or its owner's
        word): state x, its nodes freed and torn down on the backend as at
        its end; ar_log's TERMINATED says released and ``why``, its event
        is reservation.released. What it held counts from then on, not
        what it asked (overlay.contract.policy.used_part)."""
        now = self.now()
        told = Told(EVENT_TERMINATED, f"AR released, {why}", kind=RELEASED, data={"why": why})
        ar = self._stored(ar, report=Report(acct=True, events=(told,)), state=State.EXITED,
                          finished_time=now, message=f"released: {why}")
        self._unbook(ar.id)
        self._event("plus_reservation_released", reservation=ar, why=why)
        return ar

    @_retried_when_stale
    def end_now(self, caller: Caller, ar_id: int, how: str) -> Reservation:
        """Its owner (or a manager) ends an open AR now (plus_modify -e now,
        the calendar's End now): released, ARs inside it cancelled with
        it, as plus_cancel cancels them."""
        with self.lock:
            ar = self._get(ar_id)
            self._check_owner(caller, ar, "end")
            self._check_no_pending(ar)
            self._check_not_ended(ar)
            if self.now() < ar.start:
                raise InvalidRequest(f"AR {ar_id}'s window has not opened: only an open AR ends "
                                     f"now; plus_cancel -r {ar_id} frees a waiting one's nodes")
            self._cancel_inner(ar)
            return self.release(self.ars[ar_id], f"ended by {caller.user} ({how})")

    def change_state(self, ar: Reservation, target: State, reason: str | None) -> None:
        """The window opened, or the backend's health changed: the AR goes to
        ``target`` (with ``reason`` if it is in error), with its records and events."""
        before = ar.state
        started = before in (State.WAITING, State.WARNING) and target in (State.RUNNING,
                                                                          State.ERROR)
        unsatisfied = bool(reason) and before not in (State.WARNING, State.ERROR)
        satisfied = not reason and before in (State.WARNING, State.ERROR)
        events = ((Told(EVENT_START, "start time of AR reached"),) if started else ()) + (
            (Told(EVENT_UNSATISFIED, "AR resources unsatisfied", reason),) if unsatisfied else
            (Told(EVENT_SATISFIED, "AR resources satisfied"),) if satisfied else ())
        ar = self._stored(ar, report=Report(events=events), state=target, message=reason or "")
        if started:
            self._event("plus_reservation_started", reservation=ar)
        if unsatisfied:
            self._event("plus_reservation_error", reservation=ar, reason=reason)
        elif satisfied:
            self._event("plus_reservation_error", reservation=ar, reason=None)

    def repair(self, ar: Reservation, failed: Sequence[str], problem: str) -> dict[str, str]:
        """Self-repair (overlay/usecases/repair.py): the ``failed`` nodes of
        ``ar`` replaced by free ones that the placement and the
        reservability hooks give its request, its other nodes kept; stored
        with the capacity re-checked and the records of a modify and of
        resources satisfied (after those of ``problem``'s W or E, if the AR
        was not in it yet), back in w or r. Which node replaced which;
        NoCapacity, a policy's refusal or the store's Conflict says why not."""
        if self.inside.inner(ar.id):
            raise InvalidRequest("ARs are placed inside it (ResAccess): its nodes stay")
        kept = [name for name in ar.node_names if name not in failed]
        allocations = self._allocate(owner_of(ar), ar.request, self._context(ignoring=ar.id),
                                     ignore=booking_keys(ar.id), prefer=kept, avoid=failed)
        taken = [a.node for a in allocations]
        if not set(kept) <= set(taken):
            raise NoCapacity(f"the placement would move nodes that are up ("
                             f"{', '.join(sorted(set(kept) - set(taken)))})")
        replaced = dict(zip(failed, [name for name in taken if name not in kept], strict=True))
        if ar.state not in (State.WARNING, State.ERROR):
            self.change_state(ar, ar.error_state(self.now()), problem)
            ar = self.ars[ar.id]
        told = ", ".join(f"{old} by {new}" for old, new in replaced.items())
        report = Report(attribute=True, events=(
            Told(EVENT_MODIFIED, "AR modified", f"repaired: {told}"),
            Told(EVENT_SATISFIED, "AR resources satisfied", data={"replaced": replaced})))
        ar = self._stored(ar, self.capacity(), report, allocations=allocations,
                          state=ar.window_state(self.now()), message="")
        self._book(ar)
        self._event("plus_reservation_repaired", reservation=ar, replaced=replaced)
        return replaced

    def notify(self, ar: Reservation, moment: str, lead: int) -> None:
        """One of the AR's notice leads came and its event was put: the
        plugins tell its users (``moment``: "start" or "end")."""
        hook = "plus_reservation_starting_soon" if moment == "start" else "plus_reservation_ending_soon"
        self._event(hook, reservation=ar, lead=lead)

    def nodes_busy(self, ar: Reservation, lead: int, jobs: list[dict]) -> None:
        """A clear-notice lead of the AR came with ``jobs`` still running on
        its nodes past its start, and its event was put: the plugins tell
        the jobs' owners."""
        self._event("plus_reservation_nodes_busy", reservation=ar, lead=lead, jobs=jobs)

    def time_out(self, ar: Reservation) -> Reservation:
        """A -T operation was not committed in time: it is aborted."""
        return self._abort(ar, f"automatically: not committed within {self.config.commit_timeout} s")

    def forget(self, ar: Reservation) -> None:
        """A finished AR has expired: gone from the store and memory (and,
        by the enforcer, the backend)."""
        self._remove(ar)

    def forget_usage(self, horizon: int) -> None:
        """Drop kept usage of ARs that ended at or before ``horizon``."""
        if self.history and min(used.end for used in self.history) <= horizon:
            self.history = [used for used in self.history if used.end > horizon]
            self.store.forget_usage(horizon)

    def enforced(self, ar: Reservation) -> Reservation:
        """``ar`` as the backend is to enforce it: less what ARs inside it use."""
        return enforced(ar, self.inside.used(ar.id))

    def _desired(self, ids: Iterable[int]) -> dict[int, Reservation | None]:
        """The enforcer's question: these ARs as the backend is to enforce
        them now, None for those gone."""
        with self.lock:
            return {ar_id: self.enforced(self.ars[ar_id]) if ar_id in self.ars else None
                    for ar_id in ids}

    def all_enforced(self) -> list[Reservation]:
        """Every AR as the backend is to enforce it (the reconcile's picture)."""
        with self.lock:
            return [self.enforced(ar) for ar in self.ars.values()]

    # -- what the daemon's operations and views ask --------------------------------

    def inner_ars(self, ar_id: int) -> set[int]:
        """The ARs inside ``ar_id``'s slots (ResAccess)."""
        return self.inside.inner(ar_id)

    def job_runtime_limit(self, ar: Reservation) -> int:
        """How long a job in ``ar`` may run: its duration less duration_offset."""
        return max(0, ar.request.duration - self.config.duration_offset)

    def commit_deadline(self, ar: Reservation) -> int:
        """When ``ar``'s -T operation is aborted unless committed."""
        return ar.pending_since + self.config.commit_timeout

    def last_refusal(self, ar_id: int) -> RefusedChange | None:
        """The AR's last refused plus_modify, if one is remembered."""
        return self.refusals.get(ar_id)

    def submit_hint(self, ar: Reservation) -> str | None:
        """How users submit jobs into ``ar`` on this backend."""
        return self.backend.submit_hint(ar)

    def warnings(self, ar: Reservation) -> list[str]:
        """What the owner should know before relying on ``ar``."""
        warnings = self.backend.delays(ar)
        idle = [name for name in ar.node_names
                if name in self.nodes and not self.nodes[name].runs_jobs]
        if idle:
            warnings.append(f"{', '.join(idle)} run{'s' if len(idle) == 1 else ''} no jobs (exec: "
                            "none in the cluster file): jobs of this AR cannot start there")
        return warnings

    def made_with_key(self, user: str, key: str) -> int | None:
        """The id of ``user``'s AR made with idempotency ``key``, if any."""
        return self.by_key.get((user, key))

    def lingering(self) -> set[int]:
        """Deleted ARs whose jobs the batch system still holds (plus_status lists them)."""
        return self.backend.lingering()

    def job_bars(self, now: int) -> list[JobBar]:
        """The backend's jobs, as the calendar shows them beside the ARs."""
        return self.backend.job_bars(now, self.inventory)

    def jobs(self, now: int) -> list[ShownJob]:
        """The backend's jobs as GET /jobs lists them (every daemon alike)."""
        return self.backend.jobs(now, self.inventory)

    def job(self, now: int, job_id: str) -> ShownJob:
        """The backend's job ``job_id`` (UnknownJob if it lists none)."""
        found = next((job for job in self.jobs(now) if job.id == job_id), None)
        if found is None:
            raise UnknownJob(f"job {job_id} does not exist (or has ended)")
        return found

    def delete_job(self, caller: Caller, job_id: str) -> tuple[ShownJob, list[str]]:
        """Delete job ``job_id`` through the backend: the caller's own, or
        anyone's for a manager, as qdel allows; the job and the batch
        system's answer."""
        job = self.job(self.now(), job_id)
        if job.owner != caller.user and not caller.is_manager:
            raise PermissionDenied(f"job {job.id} is {job.owner}'s: only its owner or a manager "
                                   "may delete it")
        return job, self.backend.delete_job(job.id, caller.user, caller.groups,
                                            caller.is_manager)

    def accept_claim(self, nonce: str, ar_id: int, at: int, forget_before: int) -> int | None:
        """Record a ResKey claim's nonce: None, or the AR of the claim that
        used it before (Store.accept_claim)."""
        return self.store.accept_claim(nonce, ar_id, at, forget_before)

    def submit_claimed(self, owner: Caller, ar: Reservation, job: dict) -> dict:
        """Submit ``job`` into ``ar`` as its ``owner`` (a ResKey claim): never
        as root, a system account or an unknown user, nor into an AR that is
        pending or has ended."""
        if owner.uid < 0:
            raise PermissionDenied(f"user {owner.user} is not known on this host: no job runs "
                                   "as them")
        if system_account(owner.uid, self.config.min_uid):
            raise PermissionDenied(f"{owner.user} (uid {owner.uid}) is root or a system account "
                                   f"(below min_uid {self.config.min_uid}): no job runs as "
                                   "one for a client")
        if ar.state == State.PENDING:
            raise InvalidRequest(f"AR {ar.id} is pending: it takes jobs once committed")
        if ar.state == State.AWAITING:
            raise InvalidRequest(approval.no_jobs_yet(ar))
        if ar.state in FINISHED_STATES:
            raise InvalidRequest(f"AR {ar.id} has ended ({ar.state.name.lower()}): it takes "
                                 "no jobs")
        return self.backend.submit_claimed(ar, job)

    def plugin_operations(self) -> list[dict]:
        """What plugins serve on the daemon's socket (plus_client_operations),
        given the running backend and the core's answer about an AR."""
        return self.pm.hook.plus_client_operations(
            backend=self.backend, ar_status=lambda ar_id: self.status(ar_id=ar_id))
