"""Time and duration arguments as users type them, to UTC epoch seconds.

Accepted times (local time unless a zone is given):
  Grid Engine  [[CC]YY]MMDDhhmm[.SS]      e.g. 12011200, 2612011200.30
  ISO 8601     2026-12-01T09:00[:SS][Z|+hh:mm] (a space may replace the T)
  relative     now, now+90s, now+10m, now+2h, now+1d, now+1:30:00
Accepted durations: TIME as h:m:s (or m:s), plain seconds, or 90s/10m/2h/1d.

Standard library only: the thin clients import this module.
"""

from __future__ import annotations

import datetime as _dt
import re
import time as _time

TIME_FORMS = ("[[CC]YY]MMDDhhmm[.SS], YYYY-MM-DDThh:mm[:ss][Z|+hh:mm], "
              "now, now+<duration> (e.g. now+10m, now+1:30:00)")
DURATION_FORMS = "h:m:s, seconds, or <n>s/<n>m/<n>h/<n>d (e.g. 2:00:00, 90m, 1d)"

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_GE_TIME = re.compile(r"^(\d{8}|\d{10}|\d{12})(?:\.(\d{2}))?$")
_ISO_TIME = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?"
    r"(Z|[+-]\d{2}:?\d{2})?$")
_RELATIVE = re.compile(r"^now(?:\+(.+))?$")
_UNIT_DURATION = re.compile(r"^(\d+)([smhd])$")
_TIME_DURATION = re.compile(r"^\d+(?::\d+){0,2}$")


class TimeSpecError(ValueError):
    """A time or duration argument that matches none of the accepted forms."""


def parse_duration(text: str) -> int:
    """Seconds in a duration argument; raises TimeSpecError naming the forms."""
    value = text.strip()
    unit = _UNIT_DURATION.match(value)
    if unit:
        return int(unit.group(1)) * _UNIT_SECONDS[unit.group(2)]
    if _TIME_DURATION.match(value):
        seconds = 0
        for part in value.split(":"):
            seconds = seconds * 60 + int(part)
        return seconds
    raise TimeSpecError(f"invalid duration '{text}': accepted forms are {DURATION_FORMS}")


def parse_time(text: str, now: float | None = None) -> int:
    """UTC epoch seconds of a time argument; raises TimeSpecError naming the forms."""
    value = text.strip()
    current = int(_time.time() if now is None else now)
    relative = _RELATIVE.match(value)
    if relative:
        offset = relative.group(1)
        if offset is None:
            return current
        try:
            return current + parse_duration(offset)
        except TimeSpecError:
            raise TimeSpecError(
                f"invalid time '{text}': the offset after now+ must be a duration "
                f"({DURATION_FORMS})") from None
    try:
        if _GE_TIME.match(value):
            return _parse_grid_engine(value, current)
        if _ISO_TIME.match(value):
            return _parse_iso(value)
    except ValueError as exc:
        raise TimeSpecError(f"invalid time '{text}': {exc}; accepted forms are {TIME_FORMS}") from None
    raise TimeSpecError(f"invalid time '{text}': accepted forms are {TIME_FORMS}")


def _parse_grid_engine(value: str, current: int) -> int:
    """[[CC]YY]MMDDhhmm[.SS] in local time; the year defaults to the current one."""
    digits, _, seconds = value.partition(".")
    year = _dt.datetime.fromtimestamp(current).year
    if len(digits) == 12:
        year, digits = int(digits[:4]), digits[4:]
    elif len(digits) == 10:
        year, digits = 2000 + int(digits[:2]), digits[2:]
    month, day, hour, minute = (int(digits[i:i + 2]) for i in range(0, 8, 2))
    stamp = _dt.datetime(year, month, day, hour, minute, int(seconds or 0))
    return int(stamp.timestamp())


def _parse_iso(value: str) -> int:
    """ISO 8601 date and time; naive values are local time."""
    stamp = _dt.datetime.fromisoformat(value.replace(" ", "T").replace("Z", "+00:00"))
    return int(stamp.timestamp())


def format_duration(seconds: int) -> str:
    """qrstat's duration column: hours:minutes:seconds without padding (24:0:10)."""
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60}:{seconds % 60}"


_minutes: dict[tuple, dict[int, str]] = {}


def format_time(epoch: int) -> str:
    """qrstat's table time: MM/DD/YYYY hh:mm:ss in local time. Listings of
    thousands of ARs repeat minutes, and zone offsets are whole minutes, so
    each minute is formatted once."""
    minute, second = divmod(int(epoch), 60)
    cache = _minutes.setdefault(_time.tzname, {})  # per zone: tests and tzset() change it
    text = cache.get(minute)
    if text is None:
        text = cache[minute] = _time.strftime("%m/%d/%Y %H:%M", _time.localtime(minute * 60))
    return f"{text}:{second:02d}"


def format_ctime(epoch: int) -> str:
    """qrstat -ar's detail time, as ctime(3) writes it: Mon Dec  5 10:00:00 2006."""
    return _time.ctime(epoch)


def format_iso(epoch: int) -> str:
    """xs:dateTime for XML output, in UTC."""
    return _dt.datetime.fromtimestamp(epoch, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
