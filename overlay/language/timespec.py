"""Time and duration arguments as users type them, to UTC epoch seconds.

Accepted times (local time unless a zone is given):
  Grid Engine  [[CC]YY]MMDDhhmm[.SS]      e.g. 12011200, 2612011200.30
  ISO 8601     2026-12-01T09:00[:SS][Z|+hh:mm] (a space may replace the T)
  relative     now, now+90s, now+10m, now+2h, now+1d, now+1:30:00
Accepted durations: TIME as h:m:s (or m:s), plain seconds, or 90s/10m/2h/1d.
Times lie between the epoch and the horizon after now, durations are at
most MAX_DURATION (overlay.language.limits); digits are ASCII only.

Standard library only: the thin clients import this module, so it checks
forms without the regex engine and reads dates with datetime's C type only
where one is given (each costs a command a millisecond or more at start).
"""

from __future__ import annotations

import os as _os
import time as _time

from overlay.language.limits import HORIZON, HORIZON_DAYS, MAX_ARGUMENT, MAX_DURATION, shown

TYPE_CHECKING = False       # typing costs a command 3 ms to import
if TYPE_CHECKING:
    from typing import Callable

TIME_FORMS = ("[[CC]YY]MMDDhhmm[.SS], YYYY-MM-DDThh:mm[:ss][Z|+hh:mm], "
              "now, now+<duration> (e.g. now+10m, now+1:30:00)")
DURATION_FORMS = "h:m:s, seconds, or <n>s/<n>m/<n>h/<n>d (e.g. 2:00:00, 90m, 1d)"

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_SHAPE = str.maketrans("0123456789", "9999999999")
"""A text's shape: each ASCII digit a 9 (no other script's digits)."""
_GE_SHAPES = frozenset(digits + seconds for digits in ("9" * 8, "9" * 10, "9" * 12)
                       for seconds in ("", ".99"))
_ISO_SHAPES = frozenset(f"9999-99-99{t}99:99{seconds}{zone}" for t in "T "
                        for seconds in ("", ":99")
                        for zone in ("", "Z", "+99:99", "+9999", "-99:99", "-9999"))


def _shape(text: str) -> str:
    return text.translate(_SHAPE)


def _is_number(text: str) -> bool:
    """One or more ASCII digits, nothing else."""
    return text.isascii() and text.isdigit()


class TimeSpecError(ValueError):
    """A time or duration argument that matches none of the accepted forms,
    or lies outside the bounds."""


def _error(option: str, message: str) -> TimeSpecError:
    """An error whose text starts with the option, when there is one."""
    return TimeSpecError(f"{option}: {message}" if option else message)


def _stripped(text: str, option: str, what: str) -> str:
    """The argument without surrounding blanks; one too long for any form is
    refused before a pattern or int() sees it."""
    if len(text) > MAX_ARGUMENT:
        raise _error(option, f"invalid {what} '{shown(text)}': longer than {MAX_ARGUMENT} characters")
    return text.strip()


def _duration_seconds(value: str) -> int | None:
    """Seconds in a stripped duration, unbounded; None if no form matches."""
    if value[-1:] in _UNIT_SECONDS and _is_number(value[:-1]):
        return int(value[:-1]) * _UNIT_SECONDS[value[-1]]
    parts = value.split(":")
    if len(parts) <= 3 and all(map(_is_number, parts)):
        seconds = 0
        for part in parts:
            seconds = seconds * 60 + int(part)
        return seconds
    return None


def parse_duration(text: str, option: str = "") -> int:
    """Seconds in a duration argument, 0 to MAX_DURATION; raises TimeSpecError
    naming the option (if given) and the forms."""
    seconds = _duration_seconds(_stripped(text, option, "duration"))
    if seconds is None:
        raise _error(option, f"invalid duration '{shown(text)}': accepted forms are {DURATION_FORMS}")
    if seconds > MAX_DURATION:
        raise _error(option, f"the duration '{shown(text)}' is longer than {HORIZON_DAYS} days; "
                             f"accepted are durations up to {MAX_DURATION // 86400}d")
    return seconds


def parse_time(text: str, now: float | None = None, option: str = "") -> int:
    """UTC epoch seconds of a time argument, from the epoch to the horizon
    after ``now``; raises TimeSpecError naming the option (if given) and the forms."""
    value = _stripped(text, option, "time")
    current = int(_time.time() if now is None else now)
    if value == "now" or value.startswith("now+") and len(value) > 4:
        seconds = _duration_seconds(value[4:]) if value != "now" else 0
        if seconds is None:
            raise _error(option, f"invalid time '{shown(text)}': the offset after now+ must be a "
                                 f"duration ({DURATION_FORMS})")
        return bounded_time(current + seconds, current, option, text)
    shape = _shape(value)
    try:
        epoch = (_parse_grid_engine(value, current) if shape in _GE_SHAPES else
                 _parse_iso(value) if shape in _ISO_SHAPES else None)
    except (ValueError, OverflowError, OSError) as exc:   # no such date, or none the C library can hold
        raise _error(option, f"invalid time '{shown(text)}': {exc}; accepted forms are "
                             f"{TIME_FORMS}") from None
    if epoch is None:
        raise _error(option, f"invalid time '{shown(text)}': accepted forms are {TIME_FORMS}")
    return bounded_time(epoch, current, option, text)


def bounded_time(epoch: int, now: float, option: str = "", typed: str | None = None) -> int:
    """``epoch`` if it lies from the epoch to the horizon after ``now``, where
    the lifecycle can schedule it and every store can hold it; the error
    quotes ``typed`` (the argument as the user wrote it) or the number."""
    value = f"'{shown(typed)}'" if typed is not None else shown(epoch)
    if epoch < 0:
        raise _error(option, f"{value} is before the epoch (1970-01-01 00:00 UTC); "
                             "accepted are later times")
    limit = int(now) + HORIZON
    if epoch > limit:
        raise _error(option, f"{value} is more than {HORIZON_DAYS} days ahead (the horizon); "
                             f"accepted are times up to {format_time(limit)}")
    return epoch


def _parse_grid_engine(value: str, current: int) -> int:
    """[[CC]YY]MMDDhhmm[.SS] in local time; the year defaults to the current one."""
    digits, _, seconds = value.partition(".")
    year = _time.localtime(current).tm_year
    if len(digits) == 12:
        year, digits = int(digits[:4]), digits[4:]
    elif len(digits) == 10:
        year, digits = 2000 + int(digits[:2]), digits[2:]
    month, day, hour, minute = (int(digits[i:i + 2]) for i in range(0, 8, 2))
    stamp = _datetime()(year, month, day, hour, minute, int(seconds or 0))
    return int(stamp.timestamp())


def _datetime() -> type:
    """datetime's C type, imported where a date is read: the datetime module
    first defines a pure-Python version of everything and then replaces it
    with the C one (1 ms of a command's start); this imports only the latter."""
    from _datetime import datetime
    return datetime


def _parse_iso(value: str) -> int:
    """ISO 8601 date and time; naive values are local time."""
    stamp = _datetime().fromisoformat(value.replace(" ", "T").replace("Z", "+00:00"))
    return int(stamp.timestamp())


def format_duration(seconds: int) -> str:
    """qrstat's duration column: hours:minutes:seconds without padding (24:0:10)."""
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60}:{seconds % 60}"


_minutes: dict[tuple, dict[int, str]] = {}
_SECONDS = tuple(f":{second:02d}" for second in range(60))
_LAST_SHOWN = 253402214400
"""9999-12-31 00:00 UTC: a later time (an AR stored before times were
bounded) is shown as this, in every zone, instead of failing the listing."""


def _showable(epoch: int) -> int:
    return min(max(int(epoch), 0), _LAST_SHOWN)



def format_time(epoch: int) -> str:
    """qrstat's table time: MM/DD/YYYY hh:mm:ss in local time."""
    return time_formatter()(epoch)


def time_formatter() -> Callable[[int], str]:
    """format_time for a listing: listings of thousands of ARs repeat
    minutes, and zone offsets are whole minutes, so each minute is formatted
    once, from a cache per zone (its TZ and names: tests, and a command
    server's warm worker serving one command after another, set TZ and call
    tzset()) looked up once per listing; it was half of plus_status's time
    at 10,000 ARs."""
    cache = _minutes.setdefault((_os.environ.get("TZ"), _time.tzname), {})
    strftime, localtime, seconds = _time.strftime, _time.localtime, _SECONDS

    def when(epoch: int) -> str:
        epoch = int(epoch)
        if not 0 <= epoch <= _LAST_SHOWN:
            epoch = _showable(epoch)
        minute, second = divmod(epoch, 60)
        text = cache.get(minute)
        if text is None:
            text = cache[minute] = strftime("%m/%d/%Y %H:%M", localtime(minute * 60))
        return text + seconds[second]
    return when


def duration_formatter() -> Callable[[int], str]:
    """format_duration for a listing, each distinct duration formatted once
    (most ARs of a site last one of a few lengths)."""
    seen: dict[int, str] = {}

    def length(seconds: int) -> str:
        text = seen.get(seconds)
        if text is None:
            text = seen[seconds] = format_duration(seconds)
        return text
    return length


def format_ctime(epoch: int) -> str:
    """qrstat -ar's detail time, as ctime(3) writes it: Mon Dec  5 10:00:00 2006."""
    return _time.ctime(_showable(epoch))


def format_iso(epoch: int) -> str:
    """xs:dateTime for XML output, in UTC."""
    return _time.strftime("%Y-%m-%dT%H:%M:%SZ", _time.gmtime(_showable(epoch)))
