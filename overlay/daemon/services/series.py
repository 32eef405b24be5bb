"""Recurring ARs' operations (overlay.usecases.series): plus_reserve
--repeat (reached through ``reserve``), plus_status -series,
plus_modify -series and plus_cancel -series."""

from __future__ import annotations

from overlay.daemon.services.base import Context, Operation
from overlay.daemon.services.views import reservation_view, reservation_views
from overlay.language import limits
from overlay.language.model import Request, Reservation
from overlay.language.recurrence import MAX_EXCEPTIONS, MAX_RULE
from overlay.language.request import RequestError
from overlay.persistence.series import MAX_SERIES_ID, Series
from overlay.usecases.manager import Caller
from overlay.usecases.series import SeriesCases
from overlay.wire import codec


def _cases(context: Context) -> SeriesCases:
    if context.series is None:
        raise RequestError("this daemon keeps no recurring series")
    return context.series


def series_view(series: Series, occurrences: list[Reservation]) -> dict:
    """A series as the commands and the API show it."""
    request = series.request
    return {"id": series.id, "owner": series.owner, "name": request.name,
            "rule": series.recurrence.rule, "zone": series.recurrence.zone,
            "first_start": series.recurrence.first, "duration": request.duration,
            "nodes": request.nodes, "users": list(request.users),
            "exceptions": list(series.recurrence.exceptions), "state": series.state,
            "handled": series.handled, "granted": series.granted,
            "next_start": series.next_start, "next_due": series.next_due,
            "refused": [{"start": start, "end": start + request.duration, "reason": reason}
                        for start, reason in series.refused],
            "occurrences": [{"id": ar.id, "start": ar.start, "end": ar.end,
                             "state": ar.state.value} for ar in occurrences]}


def reserve_series(context: Context, caller: Caller, args: codec.Arguments,
                   request: Request) -> dict:
    """plus_reserve --repeat: the first occurrence's view, with the series'."""
    rule = args.text("repeat", True)
    if len(rule) > MAX_RULE:
        raise RequestError(f"--repeat: the rule has {len(rule)} characters; at most {MAX_RULE} "
                           "are accepted")
    exceptions = args.strings("except") or []
    if len(exceptions) > MAX_EXCEPTIONS:
        raise RequestError(f"--except: {len(exceptions)} dates; at most {MAX_EXCEPTIONS} are "
                           "accepted")
    for flag, option in (("transactional", "-T"), ("verify", "-w v"), ("start_now", "now")):
        if args.flag(flag):
            raise RequestError(f"--repeat: {option} is for single ARs; a series is granted at once")
    if args.text("idempotency_key") is not None:
        raise RequestError("--repeat: an idempotency key is for single ARs")
    args.done()
    cases = _cases(context)
    series, granted = cases.reserve(caller, request, rule, exceptions)
    context.on_change(granted)
    view = reservation_view(granted[0], context.manager)
    view["series_made"] = series_view(series, cases.occurrences(series.id))
    return view


def _series_id(args: codec.Arguments, required: bool = True) -> int | None:
    return args.integer("series", 1, MAX_SERIES_ID, required, "-series")


def series_status(context: Context, caller: Caller, args: codec.Arguments) -> list[dict]:
    """plus_status -series [ID]: one series, or those the caller may see."""
    series_id = _series_id(args, required=False)
    owner = codec.owner(args)
    args.done()
    cases = _cases(context)
    chosen = [cases.get(caller, series_id)] if series_id is not None else \
        cases.listed(caller, owner)
    return [series_view(series, cases.occurrences(series.id)) for series in chosen]


def series_cancel(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """plus_cancel -series ID: no more occurrences, the open ones cancelled."""
    series_id = _series_id(args)
    args.done()
    cases = _cases(context)
    series, cancelled = cases.cancel(caller, series_id)
    context.on_change(cancelled)
    return {**series_view(series, cases.occurrences(series_id)),
            "cancelled": reservation_views(cancelled, context.manager)}


def series_modify(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """plus_modify -series ID: the template and every occurrence not started."""
    series_id = _series_id(args)
    for moved, option in (("start", "-s"), ("end", "-e")):
        if args.args.get(moved) is not None:
            raise RequestError(f"{option}: a series' times come from its rule; change its "
                               "length with -D, or cancel it (plus_cancel -series) and "
                               "reserve again")
        args.read.add(moved)
    duration = args.integer("duration", 1, limits.MAX_DURATION, what="-D")
    nodes, users, repair = args.count("nodes", "-n"), codec.users(args), codec.repair(args)
    notify_start = args.leads("notify_start", "--notify-start")
    notify_end = args.leads("notify_end", "--notify-end")
    if args.flag("transactional"):
        raise RequestError("-T: a series is modified at once; -T is for single ARs")
    args.done()
    cases = _cases(context)
    series, changed, refused = cases.modify(caller, series_id, duration, nodes, users, repair,
                                            notify_start, notify_end)
    context.on_change(changed)
    return {**series_view(series, cases.occurrences(series_id)),
            "modified": [ar.id for ar in changed],
            "not_modified": [{"id": ar_id, "reason": why} for ar_id, why in refused]}


OPERATIONS: dict[str, Operation] = {
    "series_status": series_status, "series_cancel": series_cancel,
    "series_modify": series_modify}
