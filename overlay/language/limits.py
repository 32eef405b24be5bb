"""The bounds on everything a user may send, in one place.

A value outside them is refused where it enters (a command's option, a
socket request, later the HTTP API) with a message naming the bound, so no
request can store a time the lifecycle cannot schedule, a pattern that
fills a cache, or a list that holds the manager's lock for seconds.
Standard library only: the thin clients import it.
"""

from __future__ import annotations

HORIZON_DAYS = 3650
"""How far ahead a time may lie: ten years, on SQLite and PostgreSQL alike."""
HORIZON = HORIZON_DAYS * 86400
MAX_DURATION = HORIZON
"""The longest window or duration, in seconds."""

MAX_COUNT = 9_999_999
"""Nodes, CPUs, slots, job counts: Grid Engine's largest slot count."""
MAX_CALENDAR_SPAN = 400 * 86400
"""The longest window the calendar page asks for (a month's view and as much
again on each side, with room to spare)."""
MAX_MEMORY_MB = 2 ** 30
"""A memory size in MiB: one pebibyte."""

PAGE = 100
"""ARs a page of an HTTP listing holds unless the client asks for fewer or more."""
MAX_PAGE = 1000
"""ARs a page holds at most: no answer of the API is unbounded."""
MAX_SPANS = 100_000
"""Spans of usage one answer holds at most (the calendar's chart of a period)."""
MAX_WINDOW_ARS = 50_000
"""ARs one calendar window holds at most (1,000 nodes busy for weeks)."""
MAX_NAME = 64
"""User, group, AR, job and queue names, in characters."""
MAX_PATTERN = 256
"""A wildcard pattern or attribute value (-arch, -os, -l), in characters."""
MAX_ITEMS = 256
"""Entries in one list: users, queues, mail addresses, -l attributes."""
MAX_WORDS = 65536
"""Words of a job's command line (plus_qsub -b y command args...)."""
MAX_ADDRESS = 254
"""A mail address, in characters (RFC 5321)."""
MAX_ARGUMENT = 4096
"""Any other single command-line argument, in characters; longer ones are
refused without being echoed back whole."""
MAX_REASON = 512
"""A manager's reason for a decision (plus_deny -reason), in characters."""
MAX_ECHO = 80
"""How much of a refused value an error message repeats."""

MAX_MESSAGE = 8 * 2 ** 20
"""One socket request, in bytes (a job's script and environment included)."""
MAX_SCRIPT = 4 * 2 ** 20
"""A job script sent with plus_qsub, in bytes."""
MAX_ENVIRONMENT = 2 ** 20
"""A job's environment (-v, -V), names and values together, in bytes."""


def printable(text: str) -> str:
    """``text`` with its control characters escaped (\\r, \\x1b, ...), for
    terminals and XML: a stored name can neither move the cursor nor
    forge a line of another user's listing."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def shown(value: object, width: int = MAX_ECHO) -> str:
    """A user's value as an error message may quote it: at most ``width``
    characters, control characters escaped, so that a refusal neither
    floods the terminal nor forges lines."""
    text = str(value)
    quoted = printable(text[:width])
    if len(quoted) > width or len(text) > width:
        quoted = quoted[:width] + f"... ({len(text)} characters)"
    return quoted
