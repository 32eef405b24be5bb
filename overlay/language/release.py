"""Early release: how long an open AR may run no job before it ends
(plus_reserve and plus_modify --idle-release, the request's
``idle_release``, plus.yaml's ``idle_release``), and whether it ends once
its jobs have all ended (--release-when-done).

Standard library only: the commands check an idle time before they
connect, and the daemon checks the same way what any client sends.
"""

from __future__ import annotations

from overlay.language.limits import MAX_ARGUMENT, shown
from overlay.language.request import RequestError
from overlay.language.timespec import DURATION_FORMS, TimeSpecError, parse_duration

SHORTEST = 1
LONGEST = 30 * 86400
"""An idle time is 1 second to 30 days."""
NONE = "none"
"""The word for never released when idle (the site's default not taken either)."""
IDLE_FORMS = (f"SECS, {SHORTEST}s to {LONGEST // 86400}d ({DURATION_FORMS}), "
              f"or 0 or '{NONE}' (never)")
NEVER = 0
"""The idle time stored for 'none'."""


class ReleaseError(RequestError):
    """An idle time that is malformed or out of range, or options that
    contradict (a bad request: exit status 2, HTTP 400)."""


def parse_idle_release(text: str, option: str) -> int:
    """A command's idle time (``600``, ``10m``, ``0`` or ``none``): seconds, 0 for never."""
    if len(text) > MAX_ARGUMENT:
        raise ReleaseError(f"{option}: longer than {MAX_ARGUMENT} characters; "
                           f"accepted: {IDLE_FORMS}")
    if text.strip() == NONE:
        return NEVER
    try:
        seconds = parse_duration(text, option)
    except TimeSpecError:
        raise ReleaseError(f"{option}: invalid idle time '{shown(text)}'; "
                           f"accepted: {IDLE_FORMS}") from None
    return checked_idle_release(seconds, option)


def checked_idle_release(value: object, option: str) -> int:
    """An idle time as the wire carries it: whole seconds in range, or 0 (never)."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise ReleaseError(f"{option}: expected whole seconds, got {shown(repr(value))}; "
                           f"accepted: {IDLE_FORMS}")
    if value != NEVER and not SHORTEST <= value <= LONGEST:
        raise ReleaseError(f"{option}: {shown(value)} s is out of range; accepted: {IDLE_FORMS}")
    return value


def shown_idle_release(seconds: int | None) -> str:
    """An AR's idle time as plus_status -r shows it: seconds, ``none``, or the site's."""
    if seconds is None:
        return "site's"
    return NONE if seconds == NEVER else f"{seconds}s"
