"""A recurring series (plus_reserve --repeat) as one VEVENT of a feed: its
first occurrence's window in the site's zone, its RRULE (an UNTIL in UTC,
as RFC 5545 asks beside a DTSTART with a zone) and an EXDATE for each
occurrence left out: the series' exceptions, the occurrences refused and
those cancelled. Its occurrences' own events are left out of the feed,
which this one event stands for."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from typing import Iterable

from overlay.feeds.ical import line, local_stamp, text, utc_stamp
from overlay.persistence.series import ACTIVE, CANCELLED, Series

_EXCEPTED_AHEAD = 366 * 86400
"""How far past a series' next occurrence its exceptions are written as EXDATEs."""


def _utc_rule(series: Series, zone: zoneinfo.ZoneInfo) -> str:
    """The rule with a local UNTIL written in UTC."""
    parts = series.recurrence.rule.split(";")
    for index, part in enumerate(parts):
        name, _, value = part.partition("=")
        if name == "UNTIL" and not value.endswith("Z"):
            form = "%Y%m%dT%H%M%S" if "T" in value else "%Y%m%d"
            until = dt.datetime.strptime(value, form).replace(tzinfo=zone)
            parts[index] = "UNTIL=" + utc_stamp(int(until.timestamp()))
    return ";".join(parts)


def left_out(series: Series, cancelled: Iterable[int]) -> list[int]:
    """The starts of the occurrences the feed must not show: those --except
    leaves out (up to a year past the next one), refused and cancelled."""
    recurrence = series.recurrence
    horizon = max(series.next_start or 0, recurrence.first) + _EXCEPTED_AHEAD
    excepted = []
    if recurrence.exceptions:
        for start in recurrence.plain().starts():
            if start > horizon:
                break
            if recurrence.excepted(start):
                excepted.append(start)
    return sorted({*excepted, *(start for start, _ in series.refused), *cancelled})


def series_event(series: Series, cancelled: Iterable[int], zone: zoneinfo.ZoneInfo, host: str,
                 page: str) -> str:
    """The series as one VEVENT with RRULE and EXDATE."""
    request, zone_id = series.request, text(zone.key)
    first = series.recurrence.plain().next_start() or series.recurrence.first
    summary = f"series {series.id} {request.name}".rstrip()
    described = [f"Recurring AR series {series.id} of {series.owner}, {series.state}: "
                 f"{request.nodes} node(s) each occurrence",
                 f"{series.granted} occurrence(s) granted, {len(series.refused)} refused"]
    described += [f"refused {utc_stamp(start)}: {why}" for start, why in series.refused[-5:]]
    exdates = left_out(series, cancelled)
    return "".join((
        line("BEGIN", "VEVENT"),
        line("UID", text(f"S{series.id}-{series.created}@{host}")),
        line("DTSTAMP", utc_stamp(series.created)),
        line("SEQUENCE", str(series.handled)),
        line(f"DTSTART;TZID={zone_id}", local_stamp(first, zone)),
        line(f"DTEND;TZID={zone_id}", local_stamp(first + series.duration, zone)),
        line("RRULE", _utc_rule(series, zone)),
        *(line(f"EXDATE;TZID={zone_id}", ",".join(local_stamp(start, zone)
                                                   for start in exdates[i:i + 50]))
          for i in range(0, len(exdates), 50)),
        line("STATUS", "CANCELLED" if series.state == CANCELLED else "CONFIRMED"),
        line("SUMMARY", text(summary)),
        line("DESCRIPTION", text("\n".join(described))),
        line("URL;VALUE=URI", f"{page}#series={series.id}"),
        line("TRANSP", "OPAQUE" if series.state == ACTIVE else "TRANSPARENT"),
        line("END", "VEVENT")))
