"""ARs counted by state and owner, the ones inside their window, the ids
of each recurring series' occurrences, and the maintenance ARs, kept as the
Manager's memory changes: /metrics reads the counts at every scrape, a
listing of series their occurrences, and every pass the maintenance ARs
over the ARs it looks at; finding them anew there would cost a walk over
every AR held."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Iterable

from overlay.language.model import Reservation, State

IN_WINDOW = frozenset({State.RUNNING, State.ERROR})
"""States of an AR whose window has begun and that still holds its nodes."""


class Tally:
    """Counts of the ARs in memory, changed AR by AR (``replace``)."""

    def __init__(self, ars: Iterable[Reservation] = ()) -> None:
        self._lock = threading.Lock()
        self._counts: Counter = Counter()
        self._in_window: dict[int, Reservation] = {}
        self._of_series: dict[int, set[int]] = {}
        self._maintenance: dict[int, Reservation] = {}
        for ar in ars:
            self.replace(None, ar)

    def replace(self, before: Reservation | None, after: Reservation | None) -> None:
        """Memory's copy of an AR changed from ``before`` to ``after``
        (None: it was not there, or is gone)."""
        with self._lock:
            if before is not None:
                key = (before.state.value, before.owner)
                self._counts[key] -= 1
                if not self._counts[key]:
                    del self._counts[key]
                self._in_window.pop(before.id, None)
                self._maintenance.pop(before.id, None)
                if before.series is not None:
                    occurrences = self._of_series[before.series]
                    occurrences.discard(before.id)
                    if not occurrences:
                        del self._of_series[before.series]
            if after is not None:
                self._counts[after.state.value, after.owner] += 1
                if after.state in IN_WINDOW:
                    self._in_window[after.id] = after
                if after.series is not None:
                    self._of_series.setdefault(after.series, set()).add(after.id)
                if after.request.maint:
                    self._maintenance[after.id] = after

    def by_state_and_owner(self) -> dict[tuple[str, str], int]:
        """How many ARs are in each (state letter, owner)."""
        with self._lock:
            return dict(self._counts)

    def of_series(self, series_id: int) -> list[int]:
        """The ids of the series' ARs in memory."""
        with self._lock:
            return list(self._of_series.get(series_id, ()))

    def in_window(self) -> list[Reservation]:
        """The ARs whose window has begun and that still hold their nodes."""
        with self._lock:
            return list(self._in_window.values())

    def maintenance(self) -> list[Reservation]:
        """The maintenance ARs in memory (plus_reserve --maint)."""
        with self._lock:
            return list(self._maintenance.values())
