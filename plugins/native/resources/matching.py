"""Matching jobs' resource requests to global, host and queue (seed 002,
sections 3 and 5; seed 001, 4c), consumables, and job categories.

Public API:

- ``ResourceContainer(table, level, name, parent=None)``: what one level
  offers; ``level`` is "global", "host" or "queue", ``parent`` the container
  one level up (a queue's host, a host's global). ``.set(name, value,
  kind="fixed")`` configures a value: ``fixed`` (complex_values) anywhere,
  ``load`` only on global and host, ``limit`` (queue_conf's resource limits)
  only on queues; a consumable's fixed value is its capacity. Section 3's
  overriding rules are checked as values are set. ``.used`` maps consumables
  to the amount taken (set it from a utilization diagram to ask about a
  future window); ``.available(name)`` what is left; ``.chain()`` the
  containers from global down to this one. A host container offers
  ``hostname``, a queue container (named queue@host) ``qname``.
- ``mismatch(requests, container, slots=1, master=True) -> str | None``:
  why ``slots`` tasks of a job cannot run in the container (walking global,
  host, queue), or None; in Grid Engine's words (``cannot run at host "h"
  because it offers only hl:arch=lx-amd64``), as ``qstat -j`` shows them.
- ``soft_violations(requests, container, slots=1) -> int``: soft requests missed.
- ``debit(request, slots) -> float``: what a job with ``slots`` tasks consumes.
- ``slots_fit(requests, container, limit, master=True) -> int``: how many
  tasks (at most ``limit``) the container's own consumables allow.
- ``assign(requests, queues, slots) -> [(queue, tasks), ...] | None``: the
  tasks of a parallel job spread over queue instances in the given order,
  each level's consumables counted once for all queues below it; the first
  queue is the master. ``consume``/``release(requests, assignment)`` book it;
  ``assignment_debits(requests, assignment)`` says what each container gives.
- ``category_key(hard, soft, pe, queues, user, project)`` and
  ``CategoryCache``: seed 002's result caching per job category.

Rules. A request matches where ``requested relop offered``. Levels are
walked global, host, queue: one without the attribute passes it on, one
whose value does not match ends the walk; an attribute offered nowhere does
not match. Fixed values and limits are per slot (the request as is); load
values of <, <=, >, >= numbers are per job (the request times the slots),
and so is every value below a level that had one. A consumable's
``available`` must cover request x slots (YES) or the request (JOB, master
only); a consumable the job leaves out is taken at its default where it is
managed (``slots``: 1 per task). ``requests`` come from
``complexes.parse_requests``. Typical use: skip queues the category cache
marks unfit; ``mismatch(requests, queue)`` for the rest (mark the failures);
``assign`` over those that passed; ``consume`` when the job starts.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Hashable, Iterator, Mapping, Sequence

from overlay_native.resources.complexes import (
    NUMERIC,
    Complex,
    ComplexError,
    ComplexTable,
    Request,
    compare,
    parse_value,
)

LEVELS = ("global", "host", "queue")
FIXED, LOAD, LIMIT = "fixed", "load", "limit"
CONSUMABLE = "consumable"    # a consumable's amount left, in messages
RESOURCE_LIMITS = ("s_rt", "h_rt", "s_cpu", "h_cpu", "s_fsize", "h_fsize", "s_data", "h_data",
                   "s_stack", "h_stack", "s_core", "h_core", "s_rss", "h_rss", "s_vmem", "h_vmem")
_ORDERED = ("<=", "<", ">=", ">")
Requests = Mapping[str, Request]


def _tight(a: float, b: float, relop: str) -> bool:
    """Whether offering ``a`` is at least as restrictive as ``b`` under ``relop``
    (with request <= offer, a smaller offer admits fewer requests)."""
    return a <= b if relop in ("<=", "<") else a >= b


def _ordered_setting(cx: Complex, kind: str) -> bool:
    """Whether a value of this kind falls under the order rule: a configured
    (not load) value of an ordered complex, other than a consumable's capacity."""
    return cx.relop in _ORDERED and kind != LOAD and (cx.consumable == "NO" or kind == LIMIT)


def _scaled(cx: Complex) -> bool:
    """Load values of ordered numeric complexes are per job: compared with
    the request times the slots (seed 002, 1); == and != never scale."""
    return cx.type in NUMERIC and cx.relop in _ORDERED


class ResourceContainer:
    """One level's resources: the global host, an execution host or a queue
    instance (named queue@host; it offers qname=queue)."""

    def __init__(self, table: ComplexTable, level: str, name: str,
                 parent: ResourceContainer | None = None) -> None:
        if level not in LEVELS:
            raise ComplexError(f"unknown level {level!r}; accepted: {', '.join(LEVELS)}")
        if parent is not None and LEVELS.index(parent.level) >= LEVELS.index(level):
            raise ComplexError(f"{level} {name}: the parent must be on a higher level, "
                               f"got {parent.label}")
        self.table, self.level, self.name, self.parent = table, level, name, parent
        self.label = "global" if level == "global" else f"{level} {name}"
        self.used: Mapping[str, float] = {}
        self._values: dict[str, dict[str, tuple[float | str, str]]] = {}
        self._children: list[ResourceContainer] = []
        self._chain = (parent._chain if parent is not None else ()) + (self,)
        self.reported: dict[str, float] = {}    # load values as last reported (ClusterConfig)
        self._managed: tuple[Complex, ...] | None = None    # consumables, until the next set()
        if parent is not None:
            parent._children.append(self)
        if level == "host":
            self.set("hostname", name)
        elif level == "queue":
            self.set("qname", name.partition("@")[0])

    def chain(self) -> tuple[ResourceContainer, ...]:
        """This container and those above it, global first (seed 002's order)."""
        return self._chain

    def _below(self) -> Iterator[ResourceContainer]:
        for child in self._children:
            yield child
            yield from child._below()

    def set(self, name: str, value: Any, kind: str = FIXED) -> None:
        """Configure ``name`` (name or shortcut) here; text in Grid Engine's formats."""
        try:
            cx = self.table.find(name)
        except ComplexError as error:
            raise ComplexError(f"{self.label}: {error}") from None
        if kind not in (FIXED, LOAD, LIMIT):
            raise ComplexError(f"{self.label}: {cx.name}: unknown kind {kind!r}; "
                               "accepted: fixed, load, limit")
        if kind == LOAD and self.level == "queue":
            raise ComplexError(f"{self.label}: {cx.name} cannot be a load value; "
                               "load values exist only on global and host level")
        if kind == LIMIT and (self.level != "queue" or cx.name not in RESOURCE_LIMITS):
            raise ComplexError(f"{self.label}: {cx.name} cannot be a resource limit; limits exist "
                               f"only on queues, for {' '.join(RESOURCE_LIMITS)}")
        try:
            parsed = parse_value(cx.type, value)
        except ComplexError as error:
            raise ComplexError(f"{self.label}: {cx.name}: {error}") from None
        text = str(value)
        if cx.consumable != "NO" and kind != LIMIT and isinstance(parsed, float) and parsed < 0:
            raise ComplexError(f"{self.label}: {cx.name}: a consumable amount cannot be "
                               f"negative, got {text!r}")
        self._check_override(cx, kind, parsed, text)
        self._values.setdefault(cx.name, {})[kind] = (parsed, text)
        self._managed = None

    def _check_override(self, cx: Complex, kind: str, value: float | str, text: str) -> None:
        """Seed 002, section 3: == and != are overridden on the same level only;
        an ordered value only by an at least as restrictive one further down.
        Consumable capacities are not overrides (each level is debited), and
        load values are measurements, so the order rule leaves them out."""
        others = [(c, True) for c in self.chain()[:-1]] + [(c, False) for c in self._below()]
        for other, above in others:
            values = other._values.get(cx.name, {})
            if cx.relop in ("==", "!=") and values:
                raise ComplexError(f"{self.label}: {cx.name} is already set on {other.label}; an "
                                   f"attribute with relop {cx.relop} can only be overridden on the "
                                   "same level")
            if not _ordered_setting(cx, kind):
                continue
            for other_kind, (other_value, other_text) in values.items():
                if not _ordered_setting(cx, other_kind):
                    continue
                upper, lower = (other_value, value) if above else (value, other_value)
                if not _tight(lower, upper, cx.relop):
                    first, second = (self, other) if above else (other, self)
                    shown = (text, other_text) if above else (other_text, text)
                    raise ComplexError(
                        f"{first.label}: {cx.name}={shown[0]} is less restrictive than "
                        f"{shown[1]} on {second.label}; a lower level may only "
                        f"{'lower' if cx.relop in ('<=', '<') else 'raise'} a {cx.relop} attribute")

    def _consumables(self) -> tuple[Complex, ...]:
        """Consumables this container manages (has a capacity or load value for)."""
        if self._managed is None:
            self._managed = tuple(
                cx for cx in (self.table.find(name) for name in self._values)
                if cx.consumable != "NO" and (FIXED in self._values[cx.name]
                                             or LOAD in self._values[cx.name]))
        return self._managed

    def available(self, name: str) -> float:
        """What is left of a consumable: capacity minus used, or the load
        value if more stringent (complex(5), 'Overriding attributes')."""
        cx = self.table.find(name)
        values = self._values.get(cx.name, {})
        if cx.consumable == "NO" or not (FIXED in values or LOAD in values):
            raise ComplexError(f"{self.label}: {cx.name} is not a consumable managed here")
        amounts = []
        if FIXED in values:
            amounts.append(float(values[FIXED][0]) - self.used.get(cx.name, 0.0))
        if LOAD in values:
            amounts.append(float(values[LOAD][0]))
        return min(amounts)

    def _offer(self, cx: Complex, kinds: Sequence[str]) -> tuple[float | str, str, str] | None:
        """The value matched at this level and its kind: for == and != the
        configured one (fixed before limit before load), else the most
        restrictive."""
        values = [(*self._values[cx.name][kind], kind) for kind in kinds
                  if kind in self._values.get(cx.name, {})]
        if not values or cx.relop not in _ORDERED:
            return values[0] if values else None
        best = values[0]
        for value in values[1:]:
            if _tight(float(value[0]), float(best[0]), cx.relop):
                best = value
        return best

    def cannot_run(self, why: str) -> str:
        """Grid Engine's pending reason for this level: cannot run globally,
        at host "h" or in queue "q@h", because ``why``."""
        where = {"global": "globally", "host": f'at host "{self.name}"',
                 "queue": f'in queue "{self.name}"'}[self.level]
        return f"cannot run {where} because {why}"

    def offers_only(self, name: str, kind: str, text: str) -> str:
        """Grid Engine's 'it offers only' reason: level and kind letters (g/h/q,
        l load, f fixed or limit, c consumable), then name=value."""
        letter = {LOAD: "l", FIXED: "f", LIMIT: "f", CONSUMABLE: "c"}[kind]
        return self.cannot_run(f"it offers only {self.level[0]}{letter}:{name}={text}")


def debit(request: Request, slots: int) -> float:
    """The amount a job of ``slots`` tasks consumes: per slot (YES) times the
    slots, per job (JOB) once, nothing for non-consumables."""
    consumable = request.complex.consumable
    if consumable == "NO":
        return 0.0
    return float(request.value) * (slots if consumable == "YES" else 1)


@functools.lru_cache(maxsize=None)
def _implicit(cx: Complex) -> Request | None:
    return None if cx.default is None else Request(cx, cx.default, _show(cx.default))


def _with_defaults(requests: Requests, chain: Sequence[ResourceContainer]) -> list[Request]:
    """The requests plus the default of each managed consumable the job leaves out."""
    result = dict(requests)
    for container in chain:
        for cx in container._consumables():
            implicit = _implicit(cx)
            if implicit is not None:
                result.setdefault(cx.name, implicit)
    return list(result.values())


def _show(amount: float) -> str:
    return f"{amount:.15g}"


def _count(available: float, per_task: float) -> float:
    """Tasks ``available`` can serve; the epsilon absorbs binary rounding
    (0.3 / 0.1 is 2.9999999999999996)."""
    if per_task <= 0 or available == math.inf:
        return math.inf
    return max(0, math.floor(available / per_task + 1e-9))


def _check(request: Request, chain: Sequence[ResourceContainer], slots: int, master: bool) -> str | None:
    """Seed 002, 3: global, host, queue in turn; a level without the attribute
    passes it on, a level whose value does not match ends the search."""
    cx = request.complex
    found = per_job = False
    for container in chain:
        values = container._values.get(cx.name)
        if not values:
            continue
        found = True
        kinds: Sequence[str] = (FIXED, LIMIT, LOAD)
        if cx.consumable != "NO":
            kinds = (LIMIT,)
            if (FIXED in values or LOAD in values) and (cx.consumable == "YES" or master):
                tasks = slots if cx.consumable == "YES" else 1
                available = container.available(cx.name)
                if _count(available, float(request.value)) < tasks:
                    return container.offers_only(cx.name, CONSUMABLE, f"{available:f}")
        elif LOAD in values and _scaled(cx):
            per_job = True
        offer = container._offer(cx, kinds)
        if offer is None:
            continue
        value = request.value
        if per_job:
            value = float(value) * slots
        if not compare(cx, value, offer[0]):
            return container.offers_only(cx.name, offer[2], offer[1])
    if found or (cx.name in RESOURCE_LIMITS and chain[-1].level == "queue"):
        return None    # a queue's limits are INFINITY unless set (queue_conf(5))
    return chain[-1].cannot_run(f'job requests unknown resource "{cx.name}"')


def mismatch(requests: Requests, container: ResourceContainer, slots: int = 1,
             master: bool = True) -> str | None:
    """Why ``slots`` tasks cannot run in ``container``, or None when they can.
    A container offering a FORCED complex takes only jobs requesting it.
    A JOB consumable counts only where the job's master task runs (``master``)."""
    chain = container.chain()
    for request in _with_defaults(requests, chain):
        reason = _check(request, chain, slots, master)
        if reason:
            return reason
    for level in chain:
        for name in level._values:
            if level.table.find(name).requestable == "FORCED" and name not in requests:
                return {"global": f"does not request globally 'forced' resource \"{name}\"",
                        "host": f"does not request 'forced' resource \"{name}\" of host {level.name}",
                        "queue": f"does not request 'forced' resource \"{name}\" of queue instance "
                                 f"{level.name}"}[level.level]
    return None


def soft_violations(requests: Requests, container: ResourceContainer, slots: int = 1) -> int:
    """How many soft requests the container does not meet (fewer is better)."""
    chain = container.chain()
    return sum(_check(request, chain, slots, True) is not None for request in requests.values())


def _fit(requests: Requests, container: ResourceContainer, available: Callable[[str], float],
         limit: int, master: bool) -> int:
    tasks = limit
    for cx in container._consumables():
        request = requests.get(cx.name) or _implicit(cx)
        if request is None or (cx.consumable == "JOB" and not master):
            continue
        count = _count(available(cx.name), float(request.value))
        if cx.consumable == "JOB":
            if count < 1:
                return 0
        else:
            tasks = min(tasks, count)
    return int(tasks)


def slots_fit(requests: Requests, container: ResourceContainer, limit: int,
              master: bool = True) -> int:
    """Seed 001, 4c: the tasks (at most ``limit``) the container's consumables
    allow, the minimum over them of floor(available / per task request); a
    JOB consumable allows all of them or, on the master, none."""
    return _fit(requests, container, container.available, limit, master)


def assign(requests: Requests, queues: Sequence[ResourceContainer],
           slots: int) -> list[tuple[ResourceContainer, int]] | None:
    """Spread ``slots`` tasks over ``queues`` (already matched with ``mismatch``)
    in their order, as many as fit on each; None if they do not all fit."""
    left: dict[ResourceContainer, dict[str, float]] = {}
    plan: list[tuple[ResourceContainer, int]] = []
    remaining = slots
    for queue in queues:
        if not remaining:
            break
        chain = queue.chain()
        for container in chain:
            left.setdefault(container, {cx.name: container.available(cx.name)
                                        for cx in container._consumables()})
        tasks = min(_fit(requests, c, left[c].__getitem__, remaining, not plan) for c in chain)
        if tasks:
            for container, name, amount in assignment_debits(requests, [(queue, tasks)], not plan):
                left[container][name] -= amount
            plan.append((queue, tasks))
            remaining -= tasks
    return None if remaining else plan


def assignment_debits(requests: Requests, assignment: Sequence[tuple[ResourceContainer, int]],
                      master: bool = True) -> Iterator[tuple[ResourceContainer, str, float]]:
    """What each container on the queues' chains gives, per (queue, tasks)
    entry and container (a shared level appears once per entry); JOB
    consumables come from the master's chain only (the first queue, if
    ``master``)."""
    for position, (queue, tasks) in enumerate(assignment):
        for container in queue.chain():
            for cx in container._consumables():
                request = requests.get(cx.name) or _implicit(cx)
                if request is not None and (cx.consumable == "YES" or (master and position == 0)):
                    yield container, cx.name, debit(request, tasks)


def consume(requests: Requests, assignment: Sequence[tuple[ResourceContainer, int]]) -> None:
    """Book a started job's consumables (its ``assign`` result) in ``used``."""
    for container, name, amount in assignment_debits(requests, assignment):
        container.used[name] = container.used.get(name, 0.0) + amount


def release(requests: Requests, assignment: Sequence[tuple[ResourceContainer, int]]) -> None:
    """Give back what ``consume`` booked."""
    for container, name, amount in assignment_debits(requests, assignment):
        container.used[name] = container.used.get(name, 0.0) - amount


def _frozen(requests: Requests | None) -> tuple:
    return tuple(sorted((name, r.value) for name, r in (requests or {}).items()))


def category_key(hard: Requests, soft: Requests | None = None, pe: Hashable = None,
                 queues: Sequence[str] = (), user: str | None = None,
                 project: str | None = None) -> tuple:
    """Seed 002's job category: jobs with equal requests (by value: 1G equals
    1024M, a shortcut its name), PE request, -q list, user and project share
    every matching result."""
    return (_frozen(hard), _frozen(soft), pe, tuple(sorted(queues)), user, project)


class CategoryCache:
    """Results per job category for one scheduling run (seed 002, "Result
    caching"): queue instances (or hosts) that cannot run the category, and
    its soft violations per queue. Within a run resources only shrink, so a
    queue that failed stays failed; ``clear()`` before the next run."""

    def __init__(self) -> None:
        self._unfit: dict[tuple, set[Hashable]] = {}
        self._soft: dict[tuple, dict[Hashable, int]] = {}

    def is_unfit(self, key: tuple, queue: Hashable) -> bool:
        return queue in self._unfit.get(key, ())

    def mark_unfit(self, key: tuple, queue: Hashable) -> None:
        self._unfit.setdefault(key, set()).add(queue)

    def soft_violations(self, key: tuple, queue: Hashable, compute: Callable[[], int]) -> int:
        """The category's soft violations on ``queue``, computed once."""
        cached = self._soft.setdefault(key, {})
        if queue not in cached:
            cached[queue] = compute()
        return cached[queue]

    def clear(self) -> None:
        self._unfit.clear()
        self._soft.clear()
