"""Notice leads: how long before an AR's start or end its users are told
(plus_reserve and plus_modify --notify-start/--notify-end, the request's
``notify_start``/``notify_end``, plus.yaml's ``notice:``).

Standard library only: the commands check a lead list before they
connect, and the daemon checks the same way what any client sends. Each
lead costs a stored event and a mail per AR, so a list is short and each
lead bounded.
"""

from __future__ import annotations

from overlay.language.limits import MAX_ARGUMENT, shown
from overlay.language.request import RequestError
from overlay.language.timespec import (
    DURATION_FORMS,
    TimeSpecError,
    format_duration,
    parse_duration,
)

MAX_LEADS = 4
"""Leads in one list (before the start, or before the end)."""
SHORTEST = 1
LONGEST = 30 * 86400
"""A lead is 1 second to 30 days."""
NONE = "none"
"""The word for no notice at all (the site's defaults not taken either)."""
LEAD_FORMS = (f"LEAD[,LEAD...], at most {MAX_LEADS}, each {SHORTEST}s to {LONGEST // 86400}d "
              f"({DURATION_FORMS}), or '{NONE}'")


class LeadError(RequestError):
    """A lead list that is malformed, too long, or out of range (a bad
    request: exit status 2, HTTP 400)."""


def parse_leads(text: str, option: str) -> tuple[int, ...]:
    """A command's lead list (``1h,10m``, or ``none``): seconds, longest first."""
    if len(text) > MAX_ARGUMENT:
        raise LeadError(f"{option}: longer than {MAX_ARGUMENT} characters; accepted: {LEAD_FORMS}")
    if text.strip() == NONE:
        return ()
    words = text.split(",")
    if len(words) > MAX_LEADS:
        raise LeadError(f"{option}: {len(words)} leads; accepted: {LEAD_FORMS}")
    seconds = []
    for word in words:
        try:
            seconds.append(parse_duration(word, option) if word.strip() else -1)
        except TimeSpecError:
            seconds.append(-1)
        if seconds[-1] < 0:
            raise LeadError(f"{option}: invalid lead '{shown(word)}'; accepted: {LEAD_FORMS}")
    return checked_leads(seconds, option)


def checked_leads(values: object, option: str) -> tuple[int, ...]:
    """A lead list as the wire carries it (a list of seconds): each in
    range, at most MAX_LEADS; each once, longest first."""
    if not isinstance(values, (list, tuple)) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise LeadError(f"{option}: expected a list of whole seconds, got "
                        f"{shown(repr(values))}; accepted: {LEAD_FORMS}")
    if len(values) > MAX_LEADS:
        raise LeadError(f"{option}: {len(values)} leads; accepted: {LEAD_FORMS}")
    for value in values:
        if not SHORTEST <= value <= LONGEST:
            raise LeadError(f"{option}: the lead {shown(value)} s is out of range; "
                            f"accepted: {LEAD_FORMS}")
    return tuple(sorted(set(values), reverse=True))


def shown_leads(leads: tuple[int, ...] | None) -> str:
    """A lead list as plus_status -r shows it: durations (h:mm:ss), or ``none``."""
    return ",".join(format_duration(lead) for lead in leads) if leads else NONE
