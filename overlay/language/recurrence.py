"""A recurring AR's rule (``plus_reserve --repeat RRULE --except DATES``):
an RFC 5545 RRULE read with python-dateutil's ``rrulestr``, its first
occurrence at the AR's start, in the site's zone (plus.yaml's
``timezone``), so that "every weekday at 09:00" stays at 09:00 local time
across daylight-saving changes while its UTC instant moves. Times stay
UTC epoch seconds outside this module.

The rule is iterated on the local wall time (naive datetimes) and each
occurrence is then placed in the zone: a local time a spring-forward gap
skips is read with the offset before the gap (zoneinfo's ``fold=0``), one
an autumn fall-back repeats at its first instant. An UNTIL given in UTC
(``Z``, as RFC 5545 asks when the start has a zone) is turned into the
zone's wall time; one without ``Z`` is already local. No rule is looked
at past the horizon (``_Horizon``).
"""

from __future__ import annotations

import datetime as dt
import time
import zoneinfo
from dataclasses import dataclass
from typing import Iterator

import dateutil.rrule
from dateutil.rrule import rrule, rrulestr

from overlay.language import limits
from overlay.language.request import RequestError


class _Horizon:
    """dateutil's view of the datetime module, whose MAXYEAR is the year
    the horizon (limits.HORIZON, ten years ahead) ends: dateutil iterates a
    rule period by period until a match or MAXYEAR, so a rule that never
    matches (the 30th of February) took it seconds, day by day or hour by
    hour, to the year 9999. No time past the horizon is stored anyway."""

    def __getattr__(self, name: str) -> object:
        return getattr(dt, name)

    @property
    def MAXYEAR(self) -> int:  # noqa: N802 (the datetime module's name)
        return time.gmtime().tm_year + limits.HORIZON_DAYS // 365 + 1


dateutil.rrule.datetime = _Horizon()

MAX_RULE = 512
"""The longest --repeat rule, in characters."""
MAX_EXCEPTIONS = 64
"""The most --except dates one series may hold."""
ACCEPTED_RULE = ("an RFC 5545 RRULE such as FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR or "
                 "FREQ=DAILY;INTERVAL=2;COUNT=10 (parts FREQ, INTERVAL, COUNT, UNTIL, BYDAY, "
                 "BYMONTHDAY, BYYEARDAY, BYWEEKNO, BYMONTH, BYSETPOS, BYHOUR, BYMINUTE, "
                 "BYSECOND, WKST; no DTSTART: the start is -s)")
ACCEPTED_DATES = ("dates YYYY-MM-DD (every occurrence starting that day) or local start "
                  "times YYYY-MM-DDTHH:MM (that occurrence), comma-separated, in the site's zone")
_FREQUENCIES = ("YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY")
"""MINUTELY and SECONDLY are refused: an AR lasts more than DURATION_OFFSET,
so their occurrences would overlap one another."""


def _refused(option: str, value: str, why: str, accepted: str) -> RequestError:
    return RequestError(f"{option}: '{limits.shown(value)}' {why}; accepted: {accepted}")


def canonical_rule(text: str) -> str:
    """The rule as stored: upper case, without a leading ``RRULE:``;
    RequestError naming what is accepted for one that is too long, spans
    lines or names no accepted FREQ."""
    if len(text) > MAX_RULE:
        raise RequestError(f"--repeat: the rule has {len(text)} characters; at most "
                           f"{MAX_RULE} are accepted")
    rule = text.strip().upper().removeprefix("RRULE:")
    if not rule.isascii() or not rule.isprintable() or " " in rule:
        raise _refused("--repeat", text, "is not one line of a rule", ACCEPTED_RULE)
    parts = dict(part.partition("=")[::2] for part in rule.split(";") if part)
    if parts.get("FREQ") not in _FREQUENCIES:
        raise _refused("--repeat", text, f"needs FREQ={'|'.join(_FREQUENCIES)}", ACCEPTED_RULE)
    if "COUNT" in parts and not (parts["COUNT"].isdigit() and int(parts["COUNT"]) >= 1):
        raise _refused("--repeat", text, "has a COUNT that is not a whole number from 1",
                       ACCEPTED_RULE)
    if "COUNT" in parts and "UNTIL" in parts:
        raise _refused("--repeat", text, "gives both COUNT and UNTIL", ACCEPTED_RULE)
    return rule


def _local_until(rule: str, zone: zoneinfo.ZoneInfo) -> str:
    """The rule with an UNTIL in UTC (``...Z``) written as the zone's wall time."""
    parts = rule.split(";")
    for index, part in enumerate(parts):
        name, _, value = part.partition("=")
        if name == "UNTIL" and value.endswith("Z"):
            try:
                utc = dt.datetime.strptime(value, "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.timezone.utc)
            except ValueError:
                raise _refused("--repeat", rule, "has an UNTIL that is not YYYYMMDDTHHMMSSZ",
                               ACCEPTED_RULE) from None
            parts[index] = "UNTIL=" + utc.astimezone(zone).strftime("%Y%m%dT%H%M%S")
    return ";".join(parts)


def parse_exceptions(items: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """--except: dates and local start times, each checked, sorted, each once."""
    if len(items) > MAX_EXCEPTIONS:
        raise RequestError(f"--except: {len(items)} dates; at most {MAX_EXCEPTIONS} are accepted")
    checked = set()
    for item in items:
        text = item.strip()
        form = "%Y-%m-%dT%H:%M" if "T" in text else "%Y-%m-%d"
        try:
            if len(text) > 16:
                raise ValueError
            dt.datetime.strptime(text, form)
        except ValueError:
            raise _refused("--except", item, "is not a date or local start time",
                           ACCEPTED_DATES) from None
        checked.add(text)
    return tuple(sorted(checked))


@dataclass(frozen=True)
class Recurrence:
    """A series' rule, first start (epoch), zone and exceptions: which
    instants its occurrences start at."""

    rule: str
    first: int
    zone: str
    exceptions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self._rrule()       # refused here, naming what is accepted, rather than at the first use

    def _rrule(self) -> rrule:
        zone = zoneinfo.ZoneInfo(self.zone)
        start = dt.datetime.fromtimestamp(self.first, zone).replace(tzinfo=None)
        try:
            found = rrulestr(_local_until(self.rule, zone), dtstart=start)
        except (ValueError, TypeError, KeyError, OverflowError) as exc:
            raise _refused("--repeat", self.rule, f"is not a rule ({exc})", ACCEPTED_RULE) \
                from None
        if not isinstance(found, rrule):
            raise _refused("--repeat", self.rule, "is not a single RRULE", ACCEPTED_RULE)
        return found


    def _skipped(self, local: dt.datetime) -> bool:
        return (local.strftime("%Y-%m-%d") in self.exceptions
                or local.strftime("%Y-%m-%dT%H:%M") in self.exceptions)

    def excepted(self, epoch: int) -> bool:
        """Whether the occurrence at ``epoch`` is one --except leaves out."""
        return self._skipped(dt.datetime.fromtimestamp(epoch, zoneinfo.ZoneInfo(self.zone))
                             .replace(tzinfo=None))

    def plain(self) -> Recurrence:
        """The rule without its exceptions (a feed's RRULE, whose EXDATEs name them)."""
        return Recurrence(self.rule, self.first, self.zone)

    def starts(self, after: int | None = None) -> Iterator[int]:
        """The occurrences' starts (epoch seconds, ascending) later than
        ``after`` (None: from the first), the exceptions left out."""
        zone = zoneinfo.ZoneInfo(self.zone)
        rule = self._rrule()
        if after is None:
            found = iter(rule)
        else:
            local = dt.datetime.fromtimestamp(after, zone).replace(tzinfo=None)
            found = rule.xafter(local - dt.timedelta(hours=3), inc=True)
        for local in found:
            epoch = int(local.replace(tzinfo=zone).timestamp())
            if (after is None or epoch > after) and not self._skipped(local):
                yield epoch

    def next_start(self, after: int | None = None) -> int | None:
        """The first start later than ``after``, None when the rule has ended."""
        return next(self.starts(after), None)

    def local(self, epoch: int) -> str:
        """``epoch`` as the zone's wall time with its offset, for messages."""
        return dt.datetime.fromtimestamp(epoch, zoneinfo.ZoneInfo(self.zone)).isoformat(
            timespec="minutes")
