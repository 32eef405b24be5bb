"""iCalendar (RFC 5545) text, written by hand: content lines escaped and
folded, local times in a zone, and that zone's VTIMEZONE with the
transitions (DST rules) over the years the events span, taken from the
system's tz database. Writing it here keeps the icalendar library out of
the daemon (it parses the feeds in the tests) and costs a few
microseconds per event rather than its object model's hundreds."""

from __future__ import annotations

import datetime as dt
import threading
import zoneinfo
from functools import lru_cache

_UTC = dt.timezone.utc
_CONTROLS = {code: " " for code in (*range(0x00, 0x09), *range(0x0A, 0x20), 0x7F)}
_FOLD = 75
"""Octets of a content line before it is folded (RFC 5545, 3.1)."""


def text(value: str) -> str:
    """A TEXT value (RFC 5545, 3.3.11): backslash, semicolon, comma and
    newline escaped; other control characters, which no value may hold,
    made spaces."""
    value = value.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,")
    return value.replace("\r\n", "\n").replace("\n", "\\n").translate(_CONTROLS)


def line(name: str, value: str) -> str:
    """A content line ``name:value``, folded at 75 octets, ending CRLF;
    a fold never splits a UTF-8 sequence."""
    whole = f"{name}:{value}"
    if len(whole) <= _FOLD and whole.isascii():
        return whole + "\r\n"
    parts, width, used, start = [], _FOLD, 0, 0
    for index, char in enumerate(whole):
        size = len(char.encode())
        if used + size > width:
            parts.append(whole[start:index])
            start, used, width = index, 0, _FOLD - 1      # a continuation starts with a space
        used += size
    parts.append(whole[start:])
    return "\r\n ".join(parts) + "\r\n"


def utc_stamp(epoch: int) -> str:
    """A DATE-TIME in UTC (form 2): 20270328T010000Z."""
    return dt.datetime.fromtimestamp(epoch, _UTC).strftime("%Y%m%dT%H%M%SZ")


def local_stamp(epoch: int, zone: zoneinfo.ZoneInfo) -> str:
    """A DATE-TIME as local time in ``zone`` (form 3, with TZID)."""
    return dt.datetime.fromtimestamp(epoch, zone).strftime("%Y%m%dT%H%M%S")


def _offset(delta: dt.timedelta) -> str:
    seconds = int(delta.total_seconds())
    sign, seconds = ("-" if seconds < 0 else "+"), abs(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{sign}{hours:02d}{minutes:02d}" + (f"{seconds:02d}" if seconds else "")


def _rules(zone: zoneinfo.ZoneInfo, epoch: int) -> tuple:
    moment = dt.datetime.fromtimestamp(epoch, zone)
    return moment.utcoffset(), moment.dst(), moment.tzname()


def transitions(zone: zoneinfo.ZoneInfo, first: int, last: int) -> list[tuple[int, tuple, tuple]]:
    """The zone's changes of offset, DST or abbreviation in [first, last):
    (the UTC second it takes effect, the rules before, the rules after),
    found by probing each day and halving the day where they differ."""
    found, day = [], 86400
    before, probe = _rules(zone, first), first
    while probe < last:
        following = min(probe + day, last)
        after = _rules(zone, following)
        if after != before:
            low, high = probe, following           # before at low, after at high
            while high - low > 1:
                middle = (low + high) // 2
                if _rules(zone, middle) == before:
                    low = middle
                else:
                    high = middle
            found.append((high, before, _rules(zone, high)))
        before, probe = after, following
    return found


_cache_lock = threading.Lock()


@lru_cache(maxsize=64)
def _vtimezone(name: str, first_year: int, last_year: int) -> str:
    zone = zoneinfo.ZoneInfo(name)
    first = int(dt.datetime(first_year, 1, 1, tzinfo=_UTC).timestamp())
    last = int(dt.datetime(last_year + 1, 1, 1, tzinfo=_UTC).timestamp())
    offset, dst, abbreviation = _rules(zone, first)
    observances = [(first, (offset, dst, abbreviation), (offset, dst, abbreviation))]
    observances += transitions(zone, first, last)
    lines = [line("BEGIN", "VTIMEZONE"), line("TZID", text(name))]
    for at, (offset_from, _, _), (offset_to, dst_to, name_to) in observances:
        kind = "DAYLIGHT" if dst_to else "STANDARD"
        onset = dt.datetime.fromtimestamp(at, _UTC) + offset_from    # local time before it
        lines += [line("BEGIN", kind), line("DTSTART", onset.strftime("%Y%m%dT%H%M%S")),
                  line("TZOFFSETFROM", _offset(offset_from)), line("TZOFFSETTO", _offset(offset_to))]
        if name_to:
            lines.append(line("TZNAME", text(name_to)))
        lines.append(line("END", kind))
    lines.append(line("END", "VTIMEZONE"))
    return "".join(lines)


def vtimezone(name: str, first: int, last: int) -> str:
    """The VTIMEZONE of zone ``name`` covering the whole years from the
    year of ``first`` to that of ``last`` (epoch seconds): its rules at the
    start of the first year, then each transition, all as observances of
    their own (RFC 5545, 3.6.5, without RRULE: what the tz database says,
    not a rule that may have changed). Kept per zone and years."""
    zone = zoneinfo.ZoneInfo(name)
    years = (dt.datetime.fromtimestamp(first, zone).year - 1,
             dt.datetime.fromtimestamp(last, zone).year + 1)
    with _cache_lock:
        return _vtimezone(name, *years)
