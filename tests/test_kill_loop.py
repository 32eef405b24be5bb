"""kill -9 under load (issue 11): plusu1 and plusu2 reserve (with and without
-T), commit, abort, modify, cancel and destroy with the installed commands
from a few threads while plus_scheduler is killed at random moments and
started again, on SQLite and on PostgreSQL. On PostgreSQL two daemons
serve the store (issue 30's HA mode), the commands spread over both, and
either one is killed, the leader or the standby.

What each command reported is the truth the store must hold afterwards: a
model follows every AR (each has a name of its own) through the set of
shapes its commands' outcomes allow. A success moves it, a refusal keeps
it (and must fit its reason: "does not exist" only where the model allows
no AR), a command that was in flight when the daemon died may have done
either, and an uncommitted -T operation is aborted after commit_timeout.
At the end the store, plus_status and the model must agree, and no node
may hold more slots than it has over any instant.
"""

from __future__ import annotations

import json
import random
import subprocess
import threading
import time
from dataclasses import dataclass, field, replace

from daemon_harness import Daemon
from overlay.language.model import Allocation, Operation, Request, Reservation, State
from overlay.persistence.store import Store

CYCLES = 8
"""Kills and restarts per database."""
LOAD_SECONDS = (0.5, 3.0)
"""How long the load runs between a restart and the next kill."""
COMMIT_TIMEOUT = 12
"""Short, so that uncommitted -T operations are aborted during the run."""
SETTLED = 3
"""Seconds after a commit time-out by which the daemon has aborted the operation."""
WORKERS = ("plusu1", "plusu1", "plusu2", "plusu2")
CAPACITY = {"n01": 4, "n02": 4, "n03": 4, "n04": 4, "big": 16}
"""Slots per node of daemon_harness.CLUSTER."""
SETTINGS = f"commit_timeout: {COMMIT_TIMEOUT}\nmax_expired: 100000\n"

OK, REFUSED, UNKNOWN = "ok", "refused", "unknown"

Window = tuple[int, int, int]
"""Start, end and number of nodes."""


@dataclass(frozen=True)
class Shape:
    """An AR as the commands can tell it: state (w, p or d), window, and a
    pending -T operation with its window (modify) and when it was asked:
    ``since`` and ``until`` bracket the daemon's pending_since."""

    state: str
    window: Window
    pending: str | None = None
    pending_window: Window | None = None
    since: float = 0.0
    until: float = 0.0

    def key(self) -> tuple:
        return self.state, self.window, self.pending, self.pending_window

    def committed(self) -> Shape | None:
        if self.pending == "reserve":
            return Shape("w", self.window)
        if self.pending == "modify":
            return Shape("w", self.pending_window)
        if self.pending == "cancel":
            return Shape("d", self.window)
        return None

    def aborted(self) -> Shape | None:
        return None if self.pending == "reserve" else Shape(self.state, self.window)


class Refused(Exception):
    """The command cannot succeed on an AR of this shape."""


def _require(condition: bool) -> None:
    if not condition:
        raise Refused


@dataclass(frozen=True)
class Op:
    """One command of the load on one AR."""

    kind: str
    transactional: bool = False
    window: Window | None = None      # reserve, and modify -s -e (its node count unused)
    nodes: int | None = None          # modify -n

    def describe(self) -> str:
        flag = " -T" if self.transactional else ""
        return f"{self.kind}{flag} {self.window or ''}{self.nodes or ''}"

    def new_window(self, old: Window) -> Window:
        if self.nodes is not None:
            return old[0], old[1], self.nodes
        return self.window[0], self.window[1], old[2]

    def apply(self, shape: Shape | None, since: float, until: float) -> Shape | None:
        """The AR after this command succeeded on ``shape`` (None: no AR)."""
        pending = {"since": since, "until": until}
        if self.kind == "reserve":
            _require(shape is None)
            if self.transactional:
                return Shape("p", self.window, "reserve", **pending)
            return Shape("w", self.window)
        _require(shape is not None)
        if self.kind in ("commit", "abort"):
            _require(shape.pending is not None)
            return shape.committed() if self.kind == "commit" else shape.aborted()
        _require(shape.pending is None)
        if self.kind == "destroy":
            return replace(shape, pending="destroy", **pending) if self.transactional else None
        _require(shape.state == "w")
        if self.kind == "cancel":
            if self.transactional:
                return replace(shape, pending="cancel", **pending)
            return replace(shape, state="d")
        new = self.new_window(shape.window)
        if self.transactional:
            return replace(shape, pending="modify", pending_window=new, **pending)
        return replace(shape, window=new)

    def needs_nodes(self, shape: Shape | None) -> bool:
        """Whether a refusal for want of free nodes fits this command on ``shape``."""
        if self.kind == "reserve":
            return shape is None
        return (self.kind == "modify" and shape is not None and shape.state == "w"
                and not shape.pending)


def refusal_fits(message: str, op: Op, shape: Shape | None) -> bool:
    """Whether the daemon could refuse ``op`` on ``shape`` for this reason."""
    if "does not exist" in message:
        return shape is None
    if "has no operation waiting" in message:
        return shape is not None and shape.pending is None
    if "has an uncommitted" in message:
        return shape is not None and shape.pending is not None
    if "has already ended" in message:
        return shape is not None and shape.state == "d"
    if "requested nodes can be reserved" in message or "is no longer free" in message:
        return op.needs_nodes(shape)
    return True


def with_timeouts(possible: set, now: float) -> set:
    """Add the aborted forms of pending operations the daemon may have timed out by ``now``."""
    return possible | {shape.aborted() for shape in possible if shape is not None
                       and shape.pending and now >= shape.since + COMMIT_TIMEOUT - 1}


def settled(possible: set, now: float) -> set:
    """The shapes left at ``now``: a pending operation past its time-out is gone."""
    shapes = with_timeouts(possible, now)
    return {shape for shape in shapes if shape is None or not shape.pending
            or now < shape.until + COMMIT_TIMEOUT + SETTLED}


@dataclass
class Tracked:
    """One AR of the load: its owner, name, -sn, id once a reply gave it,
    the shapes its commands' outcomes allow, and what was done to it."""

    name: str
    user: str
    slots: int | None
    id: int | None = None
    possible: set = field(default_factory=lambda: {None})
    history: list[str] = field(default_factory=list)

    def record(self, op: Op, outcome: str, message: str, since: float, until: float) -> str | None:
        """Follow one command's outcome; a complaint if the model allows none."""
        possible = with_timeouts(self.possible, until)
        moved = set()
        for shape in possible:
            try:
                moved.add(op.apply(shape, since, until))
            except Refused:
                pass
        if outcome == OK:
            after = moved
        elif outcome == REFUSED:
            after = {shape for shape in possible if refusal_fits(message, op, shape)}
        else:
            after = possible | moved
        self.history.append(f"{op.describe()} -> {outcome} {message[:160]}")
        if not after:
            return f"{self.name} (id {self.id}): {op.describe()} {outcome} ({message[:160]}), " \
                   f"but the AR could be only {sorted(map(str, possible))}; " \
                   f"history: {self.history}"
        self.possible = after
        return None

    def alive(self) -> bool:
        return self.id is not None and self.possible != {None}


# -- the load ---------------------------------------------------------------------


def _iso(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


class ClientThreads:
    """A client thread per user (``_work(index, user)``), working until
    ``finish`` tells them to stop."""

    def __init__(self, users) -> None:
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._work, args=(index, user), daemon=True)
                        for index, user in enumerate(users)]

    def _work(self, index: int, user: str) -> None:
        raise NotImplementedError

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=120)


class Load(ClientThreads):
    """Threads running commands as the test users until stopped."""

    def __init__(self, daemons: list[Daemon], base: int, prefix: str = "k") -> None:
        """``prefix`` starts the ARs' names (a later load's differ from an earlier one's)."""
        self.daemons = daemons
        self.prefix = prefix
        self.base = base
        self.lock = threading.Lock()
        self.tracked: list[Tracked] = []
        self.complaints: list[str] = []
        self.counts = {OK: 0, REFUSED: 0, UNKNOWN: 0}
        super().__init__(WORKERS)

    def _window(self, rng: random.Random) -> Window:
        start = self.base + rng.randrange(7) * 1800
        return start, start + rng.choice((3600, 7200)), rng.randint(1, 3)

    def _work(self, index: int, user: str) -> None:
        rng = random.Random()
        mine: list[Tracked] = []
        while not self.stop.is_set():
            live = [tracked for tracked in mine if tracked.alive()]
            if not live or rng.random() < 0.35:
                tracked = Tracked(f"{self.prefix}{index}x{len(mine)}", user, rng.choice((None, None, 1, 2, 4)))
                mine.append(tracked)
                with self.lock:
                    self.tracked.append(tracked)
                op = Op("reserve", rng.random() < 0.4, self._window(rng))
            else:
                tracked = rng.choice(live)
                op = self._next_op(rng, tracked)
            if self._run(tracked, op) == UNKNOWN:
                time.sleep(rng.uniform(0.05, 0.2))  # the daemon is down: do not spin

    def _next_op(self, rng: random.Random, tracked: Tracked) -> Op:
        """Mostly what the AR's shape invites, sometimes what it must refuse."""
        if any(shape is not None and shape.pending for shape in tracked.possible):
            kind = rng.choices(("commit", "abort", "modify", "destroy"), (5, 3, 1, 1))[0]
        else:
            kind = rng.choices(("modify", "cancel", "destroy", "commit"), (4, 2, 1, 1))[0]
        transactional = kind not in ("commit", "abort") and rng.random() < 0.4
        if kind != "modify":
            return Op(kind, transactional)
        if rng.random() < 0.3:
            return Op("modify", transactional, nodes=rng.randint(1, 3))
        return Op("modify", transactional, window=self._window(rng))

    def _argv(self, tracked: Tracked, op: Op) -> list[str]:
        command = {"reserve": "plus_reserve", "commit": "plus_commit", "abort": "plus_abort",
                   "modify": "plus_modify", "cancel": "plus_cancel", "destroy": "plus_destroy"}
        argv = [command[op.kind]] + (["-T"] if op.transactional else [])
        if op.kind == "reserve":
            start, end, nodes = op.window
            argv += ["--json", "-N", tracked.name, "-s", _iso(start), "-e", _iso(end),
                     "-n", str(nodes)]
            return argv + (["-sn", str(tracked.slots)] if tracked.slots else [])
        argv += ["-r", str(tracked.id)]
        if op.nodes is not None:
            return argv + ["-n", str(op.nodes)]
        if op.kind == "modify":
            return argv + ["-s", _iso(op.window[0]), "-e", _iso(op.window[1])]
        return argv

    def _run(self, tracked: Tracked, op: Op) -> str:
        argv = self._argv(tracked, op)
        since = time.time()
        try:
            result = random.choice(self.daemons).run(tracked.user, *argv)
        except subprocess.TimeoutExpired:
            result = None
        until = time.time()
        outcome, message = self._outcome(argv, result)
        if outcome == OK and op.kind == "reserve":
            self._check_granted(tracked, op, result.stdout)
        complaint = tracked.record(op, outcome, message, since, until)
        with self.lock:
            self.counts[outcome] += 1
            if complaint:
                self.complaints.append(complaint)
        return outcome

    def _outcome(self, argv: list[str],
                 result: subprocess.CompletedProcess | None) -> tuple[str, str]:
        """ok, refused (the daemon answered no) or unknown (it died meanwhile)."""
        if result is None:
            return UNKNOWN, "timed out"
        message = result.stderr.strip()
        if result.returncode == 0:
            return OK, ""
        if "unexpected error" in message or "internal error" in message:
            with self.lock:
                self.complaints.append(f"{' '.join(argv)}: {message}")
        if result.returncode in (1, 2, 25) and "unexpected error" not in message:
            return REFUSED, message
        return UNKNOWN, message

    def _check_granted(self, tracked: Tracked, op: Op, stdout: str) -> None:
        """The reply names the AR as asked for; its id is how later commands find it."""
        view = json.loads(stdout)
        tracked.id = view["id"]
        got = (view["name"], view["state"], (view["start"], view["end"], len(view["allocations"])))
        wanted = (tracked.name, "p" if op.transactional else "w", op.window)
        if got != wanted:
            with self.lock:
                self.complaints.append(f"{tracked.name}: plus_reserve replied {got}, "
                                       f"asked {wanted}")


# -- what the store and plus_status hold -------------------------------------------


def _shape_of_view(view: dict) -> Shape:
    pending = view["pending"]
    pending_window = None
    if pending and pending["start"] is not None:
        pending_window = (pending["start"], pending["end"], len(pending["allocations"]))
    return Shape(view["state"], (view["start"], view["end"], len(view["allocations"])),
                 pending["operation"] if pending else None, pending_window)


def _shape_of_ar(ar: Reservation) -> Shape:
    request = ar.pending_request
    pending_window = None if request is None else (request.start, request.end,
                                                   len(ar.pending_allocations))
    return Shape(ar.state.value, (ar.start, ar.end, len(ar.allocations)),
                 ar.pending.value if ar.pending else None, pending_window)


def _view_facts(view: dict) -> tuple:
    pending = view["pending"] or {}
    return (view["id"], view["name"], view["owner"], _shape_of_view(view).key(),
            sorted((a["node"], a["slots"]) for a in view["allocations"]),
            sorted((a["node"], a["slots"]) for a in pending.get("allocations", [])))


def _ar_facts(ar: Reservation) -> tuple:
    return (ar.id, ar.name, ar.owner, _shape_of_ar(ar).key(),
            sorted((a.node, a.slots) for a in ar.allocations),
            sorted((a.node, a.slots) for a in ar.pending_allocations))


Booking = tuple[int, int, dict[str, int]]
"""A window and the slots held on each node over it."""


def bookings_of_ar(ar: Reservation) -> list[Booking]:
    """The windows an AR holds slots over, as alternatives (a pending modify
    holds both its windows, but only one will be in effect)."""
    if ar.state.value in ("x", "d"):
        return []
    held = [(ar.start, ar.end, {a.node: a.slots for a in ar.allocations})]
    if ar.pending_request is not None:
        held.append((ar.pending_request.start, ar.pending_request.end,
                     {a.node: a.slots for a in ar.pending_allocations}))
    return held


def bookings_of_view(view: dict) -> list[Booking]:
    """The same from plus_status --json."""
    if view["state"] in ("x", "d"):
        return []
    held = [(view["start"], view["end"], {a["node"]: a["slots"] for a in view["allocations"]})]
    pending = view["pending"]
    if pending and pending["start"] is not None:
        held.append((pending["start"], pending["end"],
                     {a["node"]: a["slots"] for a in pending["allocations"]}))
    return held


def overbooked(held: dict[int, list[Booking]]) -> list[str]:
    """Every node and instant where the ARs (by id) need more slots than the
    node has, each AR counted once, at its largest alternative."""
    instants = sorted({start for bookings in held.values() for start, _, _ in bookings})
    problems = []
    for node, capacity in CAPACITY.items():
        for instant in instants:
            users = {ar_id: max((slots.get(node, 0) for start, end, slots in bookings
                                 if start <= instant < end), default=0)
                     for ar_id, bookings in held.items()}
            if sum(users.values()) > capacity:
                taken = {ar_id: used for ar_id, used in users.items() if used}
                problems.append(f"{node} at {instant}: {taken} > {capacity} slots")
    return problems


def _wrong_slots(ar: Reservation, tracked: Tracked) -> list[str]:
    """Allocations of other than the -sn asked for (or the whole node)."""
    allocations = list(ar.allocations) + list(ar.pending_allocations)
    return [f"AR {ar.id} holds {a.slots} slots of {a.node}" for a in allocations
            if a.slots != (tracked.slots or CAPACITY[a.node])]


def model_mismatches(tracked: list[Tracked], ars: list[Reservation], now: float) -> list[str]:
    """ARs the commands' outcomes do not allow, and acknowledged ARs missing."""
    by_name: dict[str, list[Reservation]] = {}
    for ar in ars:
        by_name.setdefault(ar.name, []).append(ar)
    known = {t.name for t in tracked}
    problems = [f"AR {ar.id} ({ar.name!r}) was made by no command of the load"
                for ar in ars if ar.name not in known]
    for t in tracked:
        found = by_name.get(t.name, [])
        if len(found) > 1:
            problems.append(f"{t.name} stored {len(found)} times: ids {[ar.id for ar in found]}")
            continue
        ar = found[0] if found else None
        actual = None if ar is None else _shape_of_ar(ar)
        allowed = settled(t.possible, now)
        keys = {shape.key() if shape else None for shape in allowed}
        if (actual.key() if actual else None) not in keys:
            problems.append(f"{t.name} (id {t.id}) is {actual.key() if actual else 'gone'}; "
                            f"the commands allow only {sorted(map(str, keys))}; "
                            f"history: {t.history}")
        elif ar is not None:
            if t.id is not None and ar.id != t.id:
                problems.append(f"{t.name} was granted as AR {t.id} but is stored as {ar.id}")
            if ar.owner != t.user:
                problems.append(f"{t.name} belongs to {ar.owner}, not {t.user}")
            problems += _wrong_slots(ar, t)
    return problems


def _wait_for_time_outs(tracked: list[Tracked]) -> None:
    """Until every -T operation the load left is past its time-out, so the
    end state no longer moves while it is read."""
    ends = [shape.until + COMMIT_TIMEOUT + SETTLED for t in tracked for shape in t.possible
            if shape is not None and shape.pending]
    time.sleep(max(0.0, max(ends, default=0.0) - time.time()))


def _stored(url: str) -> list[Reservation]:
    store = Store(url)
    try:
        return store.load_all()
    finally:
        store.close()


# -- the test -----------------------------------------------------------------------


def _kill_loop(daemons: list[Daemon], load: Load, rng: random.Random) -> None:
    load.start()
    try:
        for _ in range(CYCLES):
            time.sleep(rng.uniform(*LOAD_SECONDS))
            daemon = rng.choice(daemons)
            daemon.kill9()
            time.sleep(rng.uniform(0, 0.5))
            daemon.start()
        time.sleep(rng.uniform(*LOAD_SECONDS))
    finally:
        load.finish()


def _agreeing_views(daemon: Daemon, ars: list[Reservation]) -> list[dict]:
    """plus_status at ``daemon`` once it shows the store's ARs (a standby
    takes in the leader's last transitions through the change feed)."""
    deadline = time.monotonic() + 60
    while True:
        views = daemon.status("-ne", "9999999")
        shown, stored = sorted(map(_view_facts, views)), sorted(map(_ar_facts, ars))
        if shown == stored:
            return views
        assert time.monotonic() < deadline, \
            f"plus_status and the store differ: only shown {[f for f in shown if f not in stored]}, " \
            f"only stored {[f for f in stored if f not in shown]}"
        time.sleep(0.1)


def _check_end_state(daemons: list[Daemon], load: Load, url: str) -> None:
    """plus_status at every daemon and the store agree, hold what the
    commands' outcomes allow, and overfill no node; no daemon logged an
    internal error."""
    ars = _stored(url)
    now = time.time()
    problems = (model_mismatches(load.tracked, ars, now)
                + overbooked({ar.id: bookings_of_ar(ar) for ar in ars}))
    for daemon in daemons:
        views = _agreeing_views(daemon, ars)
        problems += overbooked({view["id"]: bookings_of_view(view) for view in views})
        assert "Traceback" not in daemon.log.read_text(), daemon.log.read_text()[-3000:]
    assert not problems, "\n".join(problems)


def test_kill9_under_load_keeps_what_the_commands_acknowledged(store_url: str) -> None:
    daemons = [Daemon(SETTINGS, store=store_url)
               for _ in range(1 if store_url.startswith("sqlite") else 2)]
    try:
        for daemon in daemons:
            daemon.start()
        load = Load(daemons, int(time.time()) + 3600)
        _kill_loop(daemons, load, random.Random())
        assert load.counts[OK] > 20 and load.counts[UNKNOWN] > 0, load.counts
        assert not load.complaints, "\n".join(load.complaints)
        _wait_for_time_outs(load.tracked)
        _check_end_state(daemons, load, store_url)
    finally:
        for daemon in daemons:
            daemon.cleanup()


# -- the checks themselves: each catches what it is there for -----------------------

T = 2_000_000_000


def _ar(ar_id: int, name: str, nodes: dict[str, int], state: State = State.WAITING,
        start: int = T, end: int = T + 3600, pending: Operation | None = None,
        pending_window: tuple[int, int] | None = None) -> Reservation:
    allocations = [Allocation(node, slots) for node, slots in nodes.items()]
    pending_request = None
    if pending_window is not None:
        pending_request = Request(start=pending_window[0], end=pending_window[1], nodes=len(nodes))
    return Reservation(id=ar_id, owner="plusu1", group="plusu1",
                       request=Request(start=start, end=end, nodes=len(nodes), name=name),
                       state=state, submission_time=T - 60, allocations=allocations,
                       pending=pending, pending_request=pending_request,
                       pending_allocations=list(allocations) if pending_request else [])


def _followed(*steps: tuple[Op, str, str]) -> Tracked:
    tracked = Tracked("k0x0", "plusu1", None, id=1)
    for op, outcome, message in steps:
        assert tracked.record(op, outcome, message, time.time(), time.time()) is None
    return tracked


RESERVE = Op("reserve", window=(T, T + 3600, 1))


def test_the_model_wants_every_acknowledged_ar_and_no_refused_one() -> None:
    granted = _followed((RESERVE, OK, ""))
    assert model_mismatches([granted], [_ar(1, "k0x0", {"big": 16})], time.time()) == []
    assert "is gone" in model_mismatches([granted], [], time.time())[0]
    refused = _followed((RESERVE, REFUSED, "only 0 of the 1 requested nodes can be reserved"))
    assert model_mismatches([refused], [], time.time()) == []
    assert "the commands allow only ['None']" in \
        model_mismatches([refused], [_ar(1, "k0x0", {"big": 16})], time.time())[0]
    stranger = _ar(7, "other", {"big": 16})
    assert "made by no command" in model_mismatches([], [stranger], time.time())[0]


def test_the_model_allows_either_outcome_of_a_command_in_flight_only() -> None:
    unknown = _followed((RESERVE, UNKNOWN, "cannot reach plus_scheduler"))
    assert model_mismatches([unknown], [], time.time()) == []
    assert model_mismatches([unknown], [_ar(1, "k0x0", {"big": 16})], time.time()) == []
    lost = _followed((RESERVE, OK, ""))
    assert "does not exist" in lost.record(Op("cancel"), REFUSED, "AR 1 does not exist",
                                           time.time(), time.time())


def test_an_uncommitted_reservation_may_vanish_only_after_the_time_out() -> None:
    pending = _followed((Op("reserve", True, (T, T + 3600, 1)), OK, ""))
    assert "is gone" in model_mismatches([pending], [], time.time())[0]
    later = time.time() + COMMIT_TIMEOUT + SETTLED
    assert model_mismatches([pending], [], later) == []
    held = _ar(1, "k0x0", {"big": 16}, State.PENDING, pending=Operation.RESERVE)
    assert "is ('p'" in model_mismatches([pending], [held], later)[0]


def test_overbooking_is_found_and_alternatives_are_not_summed() -> None:
    first, second = _ar(1, "a", {"n01": 4}), _ar(2, "b", {"n01": 2}, start=T + 1800, end=T + 5400)
    assert overbooked({ar.id: bookings_of_ar(ar) for ar in (first, second)}) == \
        [f"n01 at {T + 1800}: {{1: 4, 2: 2}} > 4 slots"]
    touching = _ar(2, "b", {"n01": 4}, start=T + 3600, end=T + 7200)
    cancelled = _ar(3, "c", {"n01": 4}, State.DELETED)
    moving = _ar(4, "d", {"big": 16}, pending=Operation.MODIFY, pending_window=(T + 1800, T + 5400))
    fitting = (first, touching, cancelled, moving)
    assert overbooked({ar.id: bookings_of_ar(ar) for ar in fitting}) == []
