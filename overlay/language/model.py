"""The domain: nodes, reservation requests, reservations and their states; no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum


class State(str, Enum):
    """AR states of Grid Engine 6.2 (seed 000, 5.2.3.1), plus PENDING for -T."""

    WAITING = "w"   # granted, start time not reached
    RUNNING = "r"   # start time reached
    EXITED = "x"    # end time reached
    DELETED = "d"   # cancelled by plus_cancel
    WARNING = "W"   # invalid (a reserved node failed) before the start
    ERROR = "E"     # invalid after the start
    PENDING = "p"   # created with -T, waiting for plus_commit or plus_abort
    AWAITING = "h"  # held for a manager's approval (plus_approve, plus_deny)


HOLDING_STATES = frozenset({State.WAITING, State.RUNNING, State.WARNING,
                            State.ERROR, State.PENDING, State.AWAITING})
"""States in which an AR holds its nodes."""

UNGRANTED_STATES = frozenset({State.PENDING, State.AWAITING})
"""States in which an AR holds its nodes in the store only: nothing of it
is on the backend until it is committed or approved."""

FINISHED_STATES = frozenset({State.EXITED, State.DELETED})


class Operation(str, Enum):
    """Operations that -T leaves waiting for plus_commit or plus_abort."""

    RESERVE = "reserve"
    MODIFY = "modify"
    CANCEL = "cancel"
    DESTROY = "destroy"


class ReservationError(Exception):
    """A request refused for a reason the user can act on; the text says which."""

    exit_status = 1


class LimitExceeded(ReservationError):
    """max_advance_reservations reached: qrsub's exit status 25 (seed 000, 5.1.3.9)."""

    exit_status = 25


class PermissionDenied(ReservationError):
    """The caller may not do this (not the owner, not a manager, not in
    arusers, or a policy says no)."""


class UnknownReservation(ReservationError):
    """No AR has this id."""


class AlreadyEnded(ReservationError):
    """The AR has ended (cancelled, finished, released): nothing is left
    to change; a series' cancel skips it, as another thread ended it first."""


class UnknownJob(ReservationError):
    """No job the backend lists has this id."""


class InvalidRequest(ReservationError):
    """The request itself is wrong (a window that ends before it starts, an
    unknown user), whatever the cluster holds."""


class Unsupported(ReservationError):
    """What this site's backend cannot do (a batch system the overlay
    cannot ask or change so); the text says why and what to use instead."""


class NoCapacity(ReservationError):
    """Not enough nodes are free for the window (another request may have
    taken them); ``reasons``, the batch scheduler's, one per line for qrsub
    -w v (the message quotes the first)."""

    def __init__(self, message: str, reasons: list[str] | tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.reasons = tuple(reasons)


@dataclass(frozen=True, slots=True)
class Node:
    """A host that can be reserved, as a backend reports it."""

    name: str
    slots: int = 1
    memory_mb: int = 0
    ncpus: int = 1
    arch: str = ""
    os: str = ""
    properties: dict[str, str] = field(default_factory=dict)
    queues: tuple[str, ...] = ()
    alive: bool = True
    load: float = 0.0
    idle_since: int = 0
    running_jobs: int = 0
    runs_jobs: bool = True
    """False for a host that only takes reservations (the native backend's
    ``exec: none``): chosen last, and plus_status -r warns of it."""
    queue_states: tuple[tuple[str, str], ...] = ()
    """(queue, state) of the host's queue instances that run no jobs now, in
    Grid Engine's words (``disabled``, ``suspended``): an AR holding one is
    in W or E (seed 000, 5.2.2.2.1)."""

    def instance_states(self, queue: str) -> list[str]:
        """Why the host's instance of ``queue`` runs no jobs, in Grid
        Engine's words: disabled, suspended, and unknown on a host down."""
        states = [state for name, state in self.queue_states if name == queue]
        return states if self.alive else states + ["unknown"]


class RequestKind(str, Enum):
    """What a request reserves: whole nodes by count (plus_reserve, PluS),
    or slots the backend's scheduler places as it would a job of that shape
    (qrsub, seed 000). The kinds to come (maintenance, occurrences of a
    recurring AR) are members here."""

    NODES = "nodes"
    SLOTS = "slots"

    @classmethod
    def implied_by(cls, nodes: int) -> RequestKind:
        """The kind of a request that names none, as qrsub sends it and as
        versions before the kind stored it: 0 nodes is qrsub's request."""
        return cls.SLOTS if nodes == 0 else cls.NODES


@dataclass(frozen=True, slots=True)
class Request:
    """What plus_reserve (or plus_modify) asks for; times are UTC epoch seconds.

    ``slots_per_node`` None means whole nodes (every slot), PluS's default.
    ``memory_mb`` and ``ncpus`` are minimums per node; ``arch``, ``os``,
    ``attributes`` and ``queues`` restrict which nodes qualify.
    ``hard_error`` (qrsub -he yes) keeps the AR unusable while it is in
    error; ``mail_options`` (-m, letters of "bea" or "n") and ``mail_list``
    (-M) say who hears of which events. ``res_access`` (seed 003's
    ResAccess) names ARs whose slots the AR may use as well as free ones.

    ``kind`` says what is reserved; left out, ``nodes`` implies it
    (RequestKind.implied_by), and a RequestKind's value is taken for it.
    A SLOTS request (qrsub's, seed 000, with ``nodes`` 0) is placed by the
    backend's scheduler as it would place a job of that shape: ``pe``
    and ``pe_range`` (-pe), or ``alloc_rule`` with ``pe_range`` (-alloc),
    else one slot; ``attributes`` are then -l resource requests, ``queues``
    and ``master_queues`` queue instance patterns (-q, -masterq), ``ckpt``
    a checkpointing environment (-ckpt), ``interactive`` -now y;
    ``account`` is -A's string for the accounting records.

    ``repair`` (-repair) says when a node of the AR that goes down is
    replaced by a free one: ``none``, ``before`` its window (the default)
    or ``always`` (during it too): overlay.language.request.REPAIR_MODES.

    ``notify_start`` and ``notify_end`` are the leads (seconds) before the
    start and the end at which the AR's users are told (mail, event);
    None takes the site's (plus.yaml's ``notice:``), () none at all.

    ``idle_release`` (--idle-release) is how long the open AR may run no
    job before it ends early and frees its nodes: None takes the site's
    (plus.yaml's ``idle_release``), 0 never. ``release_when_done``
    (--release-when-done) ends it once a job has run and none runs.

    ``maint`` (plus_reserve --maint, managers only) reserves nodes for
    maintenance: granted on busy and down nodes, its own health never puts
    it in W/E, and ARs it was forced over (--force) are put in W/E naming
    it. ``clear_notice`` are the leads before the start at which the owners
    of jobs still running on its nodes past the start are told (None: the
    site's ``clear_notice:``, () none).
    """

    start: int
    end: int
    nodes: int
    users: tuple[str, ...] = ()
    slots_per_node: int | None = None
    memory_mb: int | None = None
    ncpus: int | None = None
    arch: str | None = None
    os: str | None = None
    attributes: tuple[tuple[str, str], ...] = ()
    queues: tuple[str, ...] = ()
    name: str = ""
    hard_error: bool = False
    mail_options: str = ""
    mail_list: tuple[str, ...] = ()
    res_access: tuple[int, ...] = ()
    pe: str = ""
    pe_range: tuple[tuple[int, int], ...] = ()
    alloc_rule: str = ""
    master_queues: tuple[str, ...] = ()
    ckpt: str = ""
    interactive: bool = False
    account: str = ""
    kind: RequestKind | None = None
    repair: str = "before"
    notify_start: tuple[int, ...] | None = None
    notify_end: tuple[int, ...] | None = None
    idle_release: int | None = None
    release_when_done: bool = False
    maint: bool = False
    clear_notice: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        kind = RequestKind.implied_by(self.nodes) if self.kind is None else RequestKind(self.kind)
        object.__setattr__(self, "kind", kind)  # frozen: set once, here

    @property
    def duration(self) -> int:
        return self.end - self.start

    @property
    def by_slots(self) -> bool:
        """qrsub's request: slots placed by the backend's scheduler, not nodes."""
        return self.kind is RequestKind.SLOTS

    @property
    def resource_list(self) -> str:
        """``attributes`` as qrsub's -l list and Grid Engine's records write
        them: name=value,..."""
        return ",".join(f"{name}={value}" for name, value in self.attributes)

    def slots_on(self, node: Node) -> int:
        """Slots this request needs on ``node``."""
        return node.slots if self.slots_per_node is None else self.slots_per_node

    def with_changes(self, **changes) -> "Request":
        return replace(self, **changes)


@dataclass(frozen=True, slots=True)
class Allocation:
    """Slots of one node held by an AR over its window: the node's own, or
    (``within``) slots of another AR there that the request's ResAccess
    named, which the AR uses instead of free ones. ``queue``: the cluster
    queue whose instance on the node holds them (qrsub's ARs), or "" for
    the node as a whole (PluS's)."""

    node: str
    slots: int
    within: int | None = None
    queue: str = ""


@dataclass(slots=True)
class Reservation:
    """A stored AR. ``pending`` names a -T operation awaiting commit or abort;
    for a pending modify, ``pending_request`` and ``pending_allocations`` hold
    the new window and nodes while the old ones stay held too.
    ``idempotency_key``: the client's name for the request that made it, so
    that a retried request (a coordinator that lost the answer) finds it
    instead of making a second AR."""

    id: int
    owner: str
    group: str
    request: Request
    state: State
    submission_time: int
    allocations: list[Allocation] = field(default_factory=list)
    acl: tuple[str, ...] = ()
    account: str = ""
    message: str = ""
    finished_time: int | None = None
    pending: Operation | None = None
    pending_since: int | None = None
    pending_request: Request | None = None
    pending_allocations: list[Allocation] = field(default_factory=list)
    idempotency_key: str | None = None
    granted_pe: str = ""
    revision: int = field(default=0, compare=False)
    """The store's revision at which it was last written: a write of this
    AR that finds the store's row at another revision (another daemon
    changed it) is refused as stale instead of overwriting."""
    changed: int = field(default=0, compare=False)
    """When the store last wrote it (epoch seconds): a calendar feed's
    DTSTAMP, the time the event was last revised."""
    window_set: int = 0
    """When its window was last set (granted, modified, committed): a
    notice whose lead was already past then is not given (0: at its
    submission)."""
    approval_due: int | None = None
    """When an AR awaiting approval (State.AWAITING) lapses unless a
    manager decides first: written once, at the request, so neither a
    restart nor a changed approval_timeout moves it."""
    series: int | None = None
    """The recurring series (plus_reserve --repeat) this AR is an
    occurrence of, if any: otherwise an AR like any other, which every
    backend enforces as such."""

    @property
    def start(self) -> int:
        return self.request.start

    @property
    def end(self) -> int:
        return self.request.end

    @property
    def name(self) -> str:
        return self.request.name

    @property
    def holds_resources(self) -> bool:
        return self.state in HOLDING_STATES

    @property
    def node_names(self) -> list[str]:
        return [a.node for a in self.allocations]

    @property
    def outers(self) -> set[int]:
        """The ARs whose slots this one uses (ResAccess)."""
        return {a.within for a in self.allocations if a.within is not None}

    def window_state(self, now: int) -> State:
        """The state the clock alone gives a granted, healthy AR."""
        if now >= self.end:
            return State.EXITED
        return State.RUNNING if now >= self.start else State.WAITING

    def error_state(self, now: int) -> State:
        """W before the start, E after it (seed 000, 5.2.3.1)."""
        return State.ERROR if now >= self.start else State.WARNING
