"""Grid Engine calendars that keep jobs off hosts an AR will hold, from
its grant on and whatever the conflict policy (nodes cleared ahead), so
that at the start only jobs started before the grant are left for the
conflict policy (and, with ``conflict: avoid``, none).

Grid Engine 6.2 never grants an AR over jobs that would still run at its
start, and never dispatches a job without h_rt to a host with an AR. An
overlay cannot change the scheduler, but a queue calendar that switches the
host's normal queue instances off over the AR windows has that very effect:
with resource reservation on (max_reservation > 0) the scheduler puts a job
there only if its h_rt (plus DURATION_OFFSET) ends before the window, and
never a job without h_rt.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Iterable

LAST_YEAR = 2037
"""Grid Engine's calendars end with 2037."""


def calendar_name(host: str) -> str:
    """The calendar of one host's windows (plus_node1, plus_n1_example_org)."""
    return "plus_" + re.sub(r"[^A-Za-z0-9_]", "_", host)


def year_field(windows: Iterable[tuple[int, int]], now: int) -> str:
    """calendar_conf's ``year`` switching the queue off over each window
    [start, end) still ahead, one entry per local day it covers."""
    entries = []
    for start, end in sorted(windows):
        if end <= now:
            continue
        day = dt.datetime.fromtimestamp(start).replace(hour=0, minute=0, second=0, microsecond=0)
        while day.timestamp() < end and day.year <= LAST_YEAR:
            following = (day + dt.timedelta(days=1)).replace(hour=0, minute=0, second=0)
            low = max(start, int(day.timestamp()))
            high = min(end, int(following.timestamp()))
            until = ("24:00:00" if high == int(following.timestamp())
                     else dt.datetime.fromtimestamp(high).strftime("%H:%M:%S"))
            entries.append(f"{day.day}.{day.month}.{day.year}="
                           f"{dt.datetime.fromtimestamp(low).strftime('%H:%M:%S')}-{until}=off")
            day = following
    return " ".join(entries) or "NONE"


def calendar(host: str, windows: Iterable[tuple[int, int]], now: int) -> dict[str, str]:
    return {"calendar_name": calendar_name(host), "year": year_field(windows, now), "week": "NONE"}
