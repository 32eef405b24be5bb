"""ARs as an iCalendar feed (RFC 5545): one VEVENT per AR, in the site's
zone, and the zone's VTIMEZONE."""

from __future__ import annotations

import zoneinfo
from typing import Iterable

from overlay.feeds.ical import line, local_stamp, text, utc_stamp, vtimezone
from overlay.feeds.recurring import series_event
from overlay.language.model import Reservation, State
from overlay.persistence.series import Series

PRODID = "-//PluS overlay//Reservations feed//EN"
REFRESH = "PT15M"
"""How often a client should fetch the feed again (RFC 7986's
REFRESH-INTERVAL, and Outlook's X-PUBLISHED-TTL): a conditional GET costs
the daemon little, but an AR seldom changes more often."""
LISTED_NODES = 16
"""Nodes named in an event's LOCATION; beyond, how many more: an AR of a
thousand nodes keeps its event a few hundred bytes."""
MESSAGE_CHARS = 300
"""Characters of an AR's message (why it is in error) in DESCRIPTION."""

STATUS = {State.WAITING: "CONFIRMED", State.RUNNING: "CONFIRMED", State.EXITED: "CONFIRMED",
          State.DELETED: "CANCELLED", State.WARNING: "TENTATIVE", State.ERROR: "TENTATIVE",
          State.PENDING: "TENTATIVE", State.AWAITING: "TENTATIVE"}
"""An AR's state as an event's STATUS: granted (waiting, running, ended)
is confirmed; cancelled is cancelled; waiting for its commit (-T) or a
manager's approval, or with a reserved node failed (W before its start,
E after), is in doubt."""
_WORDS = {State.WAITING: "waiting", State.RUNNING: "running", State.EXITED: "ended",
          State.DELETED: "cancelled", State.WARNING: "warning: a reserved node failed",
          State.ERROR: "error: a reserved node failed",
          State.PENDING: "pending: waiting for plus_commit",
          State.AWAITING: "awaiting a manager's approval"}


def uid(ar: Reservation, host: str) -> str:
    """The AR's event's UID: its id and submission time (ids are used
    again once they wrap) at the host the feed was asked of, the same at
    every daemon of the site."""
    return f"R{ar.id}-{ar.submission_time}@{host}"


def nodes_text(ar: Reservation) -> str:
    names = ar.node_names
    shown = ", ".join(names[:LISTED_NODES])
    return shown + (f" and {len(names) - LISTED_NODES} more" if len(names) > LISTED_NODES else "")


def event(ar: Reservation, zone: zoneinfo.ZoneInfo, host: str, page: str) -> str:
    """One AR as a VEVENT: SEQUENCE is the store's revision of its last
    write, which grows with every change (window, nodes, state)."""
    summary = f"R{ar.id} {ar.name}" if ar.name else f"R{ar.id}"
    if ar.request.maint:
        summary = "Maintenance " + summary
    slots = sum(a.slots for a in ar.allocations)
    described = [f"AR {ar.id} of {ar.owner}, {_WORDS[ar.state]}",
                 f"{len(ar.allocations)} node(s), {slots} slot(s): {nodes_text(ar)}"]
    if ar.acl:
        described.append("users: " + ", ".join(ar.acl[:LISTED_NODES]))
    if ar.message and ar.state in (State.WARNING, State.ERROR, State.DELETED):
        described.append(ar.message[:MESSAGE_CHARS])
    zone_id = text(zone.key)
    return "".join((
        line("BEGIN", "VEVENT"),
        line("UID", text(uid(ar, host))),
        line("DTSTAMP", utc_stamp(ar.changed or ar.submission_time)),
        line("SEQUENCE", str(ar.revision)),
        line(f"DTSTART;TZID={zone_id}", local_stamp(ar.start, zone)),
        line(f"DTEND;TZID={zone_id}", local_stamp(ar.end, zone)),
        line("STATUS", STATUS[ar.state]),
        line("SUMMARY", text(summary)),
        *((line("CATEGORIES", "MAINTENANCE"),) if ar.request.maint else ()),
        line("LOCATION", text(nodes_text(ar))),
        line("DESCRIPTION", text("\n".join(described))),
        line("URL;VALUE=URI", f"{page}#ar={ar.id}"),
        line("TRANSP", "OPAQUE" if STATUS[ar.state] != "CANCELLED" else "TRANSPARENT"),
        line("END", "VEVENT")))


def calendar(title: str, ars: Iterable[Reservation], zone_name: str, host: str, page: str,
             now: int, series: Iterable[tuple[Series, list[int]]] = ()) -> str:
    """The feed: ``ars`` as events in zone ``zone_name``, named ``title``;
    UIDs at ``host``, each event's URL the calendar ``page``'s link to it.
    No METHOD, so each DTSTAMP is when the store last wrote the AR (RFC
    5545, 3.8.7.2), and the same ARs give the same bytes. ``series``:
    recurring series, each one event (overlay.feeds.recurring) with the
    starts of its occurrences cancelled; their ARs are not in ``ars``."""
    zone = zoneinfo.ZoneInfo(zone_name)
    ars = list(ars)
    first = min((ar.start for ar in ars), default=now)
    last = max((ar.end for ar in ars), default=now)
    return "".join((
        line("BEGIN", "VCALENDAR"), line("VERSION", "2.0"), line("PRODID", PRODID),
        line("CALSCALE", "GREGORIAN"),
        line("NAME", text(title)), line("X-WR-CALNAME", text(title)),
        line("X-WR-TIMEZONE", text(zone_name)),
        line("REFRESH-INTERVAL;VALUE=DURATION", REFRESH), line("X-PUBLISHED-TTL", REFRESH),
        vtimezone(zone_name, first, last),
        *(event(ar, zone, host, page) for ar in ars),
        *(series_event(made, cancelled, zone, host, page) for made, cancelled in series),
        line("END", "VCALENDAR")))
