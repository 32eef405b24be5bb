"""Recurring ARs: ``plus_reserve --repeat RRULE [--except DATES]`` makes a
series whose occurrences are ordinary ARs linked to it (``Reservation.series``),
so every backend enforces them with no change of its own.

Occurrences are granted ahead to plus.yaml's ``repeat: depth``: the
command grants the first one with the series (one transaction: a refused
first occurrence stores nothing) and up to ``_AT_ONCE`` more within the
depth; the leading daemon's lifecycle grants the rest, and each later one
as the depth moves on (a series' due time: its next start less the depth).
Each occurrence moves the series' cursor in the transaction that grants or
refuses it (overlay.persistence.series), so none is granted twice or
skipped across restarts and failovers. A refused occurrence (its nodes
taken, a policy) is told by an event (``reservation.occurrence_refused``)
and a mail, and listed with the series.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from itertools import islice

from overlay.contract.advice import Advice
from overlay.events.catalog import occurrence_refused_event
from overlay.language.model import (
    FINISHED_STATES,
    AlreadyEnded,
    InvalidRequest,
    LimitExceeded,
    PermissionDenied,
    Request,
    Reservation,
    ReservationError,
    State,
    UnknownReservation,
)
from overlay.language.recurrence import Recurrence, canonical_rule, parse_exceptions
from overlay.log.ratelog import RateLimitedLog
from overlay.persistence.series import (
    ACTIVE,
    CANCELLED,
    COMPLETE,
    KEPT_REFUSALS,
    Series,
    SeriesMoved,
    SeriesStore,
)
from overlay.usecases.manager import START_GRACE, Caller, Manager, owner_of

log = logging.getLogger("plus.series")
_REFUSALS_LOG = RateLimitedLog(log)

_AT_ONCE = 32
"""Occurrences a plus_reserve --repeat grants itself beyond the first; the
leader grants the others in its next pass, which the command wakes."""
ALLOCATIONS_AT_ONCE = 5000
"""Nodes the occurrences granted by one command or one pass hold at most
(beyond the first occurrence): a whole-cluster occurrence of 1,000 nodes
takes the store about half a second, so a command or a pass grants a
few of those and the next passes the rest."""
_STEP_TRIES = 3
"""Writes of a command's change of a series that met a step of the leader's."""
_OVERLAP_CHECKED = 1000
"""Occurrences whose starts are checked against one another at creation."""


class SeriesCases:
    """The use cases of series, on the Manager's ARs and the series table."""

    def __init__(self, manager: Manager, table: SeriesStore) -> None:
        self.manager = manager
        self.table = table

    @property
    def depth(self) -> int:
        return self.manager.config.repeat.depth

    # -- reserve -----------------------------------------------------------------

    def reserve(self, caller: Caller, request: Request, rule: str,
                exceptions: tuple[str, ...] | list[str] = ()) -> tuple[Series, list[Reservation]]:
        """A new series and its first occurrences (up to ``_AT_ONCE`` more
        within the depth); every refusal of the first one, or of the rule,
        stores nothing."""
        settings = self.manager.config.repeat
        if request.by_slots:
            raise InvalidRequest("--repeat: a series reserves nodes (plus_reserve), not slots")
        recurrence = Recurrence(canonical_rule(rule), request.start, self.manager.config.timezone,
                                parse_exceptions(tuple(exceptions)))
        starts = list(islice(recurrence.starts(), _OVERLAP_CHECKED))
        if not starts:
            raise InvalidRequest(f"--repeat: the rule {recurrence.rule} gives no occurrence from "
                                 f"{recurrence.local(request.start)} (the exceptions left out)")
        for earlier, later in zip(starts, starts[1:], strict=False):
            if later - earlier < request.duration:
                raise InvalidRequest(
                    f"--repeat: occurrences at {recurrence.local(earlier)} and "
                    f"{recurrence.local(later)} would overlap ({request.duration} s each); "
                    "accepted: a rule whose occurrences start at least the duration apart")
        ahead = sum(1 for start in starts if start < starts[0] + self.depth)
        if ahead >= settings.max_occurrences and len(starts) > settings.max_occurrences:
            raise LimitExceeded(f"--repeat: more than {settings.max_occurrences} occurrences "
                                f"within the depth ({self.depth} s): repeat.max_occurrences")
        if not caller.is_manager and self.table.active_count(caller.user) >= settings.max_series:
            raise LimitExceeded(f"{caller.user} has {settings.max_series} active series already "
                                "(repeat.max_series): cancel one first (plus_cancel -series ID)")
        first, following = starts[0], recurrence.next_start(starts[0])
        series = Series(id=self.table.new_id(), owner=caller.user,
                        group=caller.groups[0] if caller.groups else "", recurrence=recurrence,
                        request=replace(request, start=first, end=first + request.duration))
        series = replace(series, **self._cursor(1, 1, following))
        made = self.manager.reserve(caller, series.occurrence(first), series=series.id,
                                    also=self.table.inserted(series))
        granted = [made, *self.extend(series.id, limit=_AT_ONCE)]
        return self.table.get(series.id) or series, granted

    def _cursor(self, handled: int, granted: int, following: int | None) -> dict:
        """A series' cursor after ``handled`` occurrences, the next at ``following``."""
        return dict(handled=handled, granted=granted, next_start=following,
                    next_due=None if following is None else following - self.depth,
                    state=ACTIVE if following is not None else COMPLETE)

    # -- the depth moving on -------------------------------------------------------

    def extend(self, series_id: int, limit: int | None = None,
               allocations: int | None = ALLOCATIONS_AT_ONCE) -> list[Reservation]:
        """Grant (or refuse, telling why) the series' occurrences that have
        come within the depth, at most ``limit`` and about ``allocations``
        nodes in all (at least one occurrence); those granted."""
        granted: list[Reservation] = []
        series = self.table.get(series_id)     # then as each step wrote it
        if series is not None and series.state == CANCELLED:
            self._cancel_open(series_id, limit or len(self.manager.ars))
            return granted
        while series is not None and (limit is None or len(granted) < limit) and (
                allocations is None or sum(len(ar.allocations) for ar in granted) < allocations):
            now = self.manager.now()
            if series.state != ACTIVE or series.next_due is None or series.next_due > now:
                break
            try:
                made, series = self._step(series, now)
            except SeriesMoved:
                break                          # another daemon handled it: it goes on there
            if made is not None:
                granted.append(made)
        return granted

    def _step(self, series: Series, now: int) -> tuple[Reservation | None, Series]:
        """Grant the series' next occurrence, or record why not; the AR
        granted, and the series as the step wrote it."""
        start = series.next_start
        following = series.recurrence.next_start(start)
        if start < now - START_GRACE:
            return None, self._refuse(series, start, following, now, "its start passed while no "
                                      "daemon led (the depth was not granted in time)")
        moved = self.table.following(
            series, **self._cursor(series.handled + 1, series.granted + 1, following))
        try:
            return self.manager.reserve(owner_of(series), series.occurrence(start),
                                        series=series.id,
                                        also=self.table.stepped(series, moved)), moved
        except SeriesMoved:
            raise
        except ReservationError as exc:
            return None, self._refuse(series, start, following, now, str(exc))

    def _refuse(self, series: Series, start: int, following: int | None, now: int,
                reason: str) -> Series:
        """Record a refused occurrence with its event, then tell the plugins;
        the series as written."""
        refused = (*series.refused, (start, reason))[-KEPT_REFUSALS:]
        moved = self.table.following(
            series, refused=refused, **self._cursor(series.handled + 1, series.granted, following))
        self.table.write(self.table.stepped(
            series, moved, [occurrence_refused_event(now, series, start, reason)]))
        self.manager.reported()
        _REFUSALS_LOG.info(series.owner, "series %d: occurrence at %s refused: %s", series.id,
                           series.recurrence.local(start), reason)
        would_be = Reservation(id=0, owner=series.owner, group=series.group,
                               request=series.occurrence(start), state=State.DELETED,
                               submission_time=now, acl=series.request.users,
                               message=reason, series=series.id)
        advice = Advice(self.manager.config.timezone, lambda: None)
        try:
            self.manager.pm.hook.plus_reservation_occurrence_refused(
                reservation=would_be, series=series.id, reason=reason, advice=advice)
        except Exception:
            log.exception("plugin hook plus_reservation_occurrence_refused failed")
        return moved

    def due(self) -> dict[int, int]:
        """Every active series' due time (the lifecycle's heap is primed so)."""
        return self.table.due()

    # -- views, cancel, modify -------------------------------------------------------

    def get(self, caller: Caller, series_id: int) -> Series:
        """A series its owner, a user its access list names, or a manager may see."""
        series = self.table.get(series_id)
        if series is None:
            raise UnknownReservation(f"series {series_id} does not exist")
        if not (caller.is_manager or caller.user == series.owner
                or caller.user in series.request.users):
            raise PermissionDenied(f"series {series_id} belongs to {series.owner}; only its "
                                   "owner, its users or a manager may see it")
        return series

    def listed(self, caller: Caller, owner: str | None = None) -> list[Series]:
        """The series of ``owner`` (everyone's: None), those the caller may see."""
        return [series for series in self.table.listed(owner)
                if caller.is_manager or caller.user == series.owner
                or caller.user in series.request.users]

    def occurrences(self, series_id: int) -> list[Reservation]:
        """The series' ARs still in memory, by start: what the tally's
        index of them names, so a listing costs the occurrences listed."""
        with self.manager.lock:
            ars = self.manager.ars
            found = [ars[ar_id] for ar_id in self.manager.tally.of_series(series_id)
                     if ar_id in ars]
        return sorted(found, key=lambda ar: (ar.start, ar.id))

    def _owned(self, caller: Caller, series_id: int, action: str) -> Series:
        series = self.get(caller, series_id)
        if caller.user != series.owner and not caller.is_manager:
            raise PermissionDenied(f"series {series_id} belongs to {series.owner}; only its "
                                   f"owner or a manager may {action} it")
        return series

    def cancel(self, caller: Caller, series_id: int) -> tuple[Series, list[Reservation]]:
        """No more occurrences, and the open ones cancelled: the soonest
        ``_AT_ONCE`` now, the others by the leader's next passes (the series
        stays due until none is open), so the command's time is bounded
        however many whole-cluster occurrences a series holds."""
        series = self._owned(caller, series_id, "cancel")
        for _ in range(_STEP_TRIES):
            if series.state == CANCELLED:
                break
            try:
                self.table.write(self.table.stepped(series, self.table.following(
                    series, state=CANCELLED, next_due=self.manager.now())))
                break
            except SeriesMoved:                # the leader granted one meanwhile: on its copy
                series = self._owned(caller, series_id, "cancel")
        else:
            raise SeriesMoved(f"series {series_id} moved on meanwhile, again and again; try again")
        cancelled = self._cancel_open(series_id, _AT_ONCE)
        return self.table.get(series_id) or series, cancelled

    def _cancel_open(self, series_id: int, limit: int) -> list[Reservation]:
        """Cancel up to ``limit`` open occurrences of a cancelled series,
        soonest first, holding about ALLOCATIONS_AT_ONCE nodes in all; once
        none is left, the series is due no more."""
        open_ones = [ar for ar in self.occurrences(series_id) if ar.state not in FINISHED_STATES]
        cancelled: list[Reservation] = []
        held = 0
        for index, ar in enumerate(open_ones[:limit]):
            if held >= ALLOCATIONS_AT_ONCE:
                limit = index                  # about as many nodes as a grant: the rest later
                break
            held += len(ar.allocations)
            try:
                cancelled += self.manager.cancel(owner_of(ar), ar.id, None)
            except (UnknownReservation, AlreadyEnded):
                continue                       # gone or ended meanwhile (the leader's pass
                                               # and the command cancel the same series)
        if len(open_ones) <= limit:
            series = self.table.get(series_id)
            if series is not None and series.next_due is not None:
                try:
                    self.table.write(self.table.stepped(series, self.table.following(
                        series, next_due=None)))
                except SeriesMoved:
                    pass                       # another daemon finished it
        return cancelled

    def modify(self, caller: Caller, series_id: int, duration: int | None,
               nodes: int | None, users: tuple[str, ...] | None, repair: str | None,
               notify_start: tuple[int, ...] | None, notify_end: tuple[int, ...] | None
               ) -> tuple[Series, list[Reservation], list[tuple[int, str]]]:
        """The template changes, and so does every occurrence not started
        yet; the ARs changed, and those that could not be, with why (they
        keep their old form)."""
        series = self._owned(caller, series_id, "modify")
        if series.state != ACTIVE and not any(
                ar.state in (State.WAITING, State.WARNING) for ar in self.occurrences(series_id)):
            raise InvalidRequest(f"series {series_id} is {series.state}: nothing is ahead of it")
        request = series.request
        template = replace(request, end=request.start + (duration or request.duration),
                           nodes=nodes or request.nodes,
                           users=request.users if users is None else users,
                           repair=repair or request.repair,
                           notify_start=request.notify_start if notify_start is None
                           else notify_start,
                           notify_end=request.notify_end if notify_end is None else notify_end)
        self.table.write(self.table.stepped(series, self.table.following(series,
                                                                          request=template)))
        changed, refused = [], []
        for ar in self.occurrences(series_id):
            if ar.state not in (State.WAITING, State.WARNING):
                continue                        # started or ended: the modify is of the future
            try:
                changed.append(self.manager.modify(
                    caller, ar.id, None, None, duration, nodes, users, repair=repair,
                    notify_start=notify_start, notify_end=notify_end))
            except ReservationError as exc:
                refused.append((ar.id, str(exc)))
        return self.table.get(series_id) or series, changed, refused
