"""The ARs as the native scheduler holds them between passes: each AR's
reserved window by id, the ones whose window has started, per host a
planner of the slots ARs hold there (the base of each pass's AR guard),
and per container and consumable what qrsub's ARs hold of it.

The reservation core changes them AR by AR, and each change costs what that
AR holds; a pass then reads them as they are instead of rebuilding a model
of every AR, so its cost follows the hosts and jobs, not the ARs stored.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Mapping

from overlay.api.plugin import Planner
from overlay_native.resources.window import ReservedWindow

_STARTED = ("r", "E")


class Reservations(Mapping[int, ReservedWindow]):
    """The reserved windows by AR id, with their slots planned per host."""

    def __init__(self, windows: Iterable[ReservedWindow] = ()) -> None:
        self._windows: dict[int, ReservedWindow] = {}
        self._started: dict[int, ReservedWindow] = {}
        self.held: dict[str, Planner] = {}
        self.consumed: dict[tuple[str, str], Planner] = {}
        self.put_all(windows)

    def __getitem__(self, ar_id: int) -> ReservedWindow:
        return self._windows[ar_id]

    def __iter__(self) -> Iterator[int]:
        return iter(self._windows)

    def __len__(self) -> int:
        return len(self._windows)

    def remove(self, ar_id: int) -> bool:
        """Forget one AR's window; whether it was there."""
        window = self._windows.pop(ar_id, None)
        if window is None:
            return False
        self._unplan(window)
        return True

    def replace_all(self, windows: Iterable[ReservedWindow]) -> bool:
        """Make the windows exactly ``windows``; whether anything changed."""
        fresh = {window.id: window for window in windows}
        changed = False
        for ar_id in [ar_id for ar_id in self._windows if ar_id not in fresh]:
            changed = self.remove(ar_id) or changed
        return self.put_all(fresh.values()) or changed

    def put_all(self, windows: Iterable[ReservedWindow]) -> bool:
        """Add or change windows, planning each host's new slots with one
        sort (a daemon's start hands over every AR at once)."""
        spans: dict[str, list[tuple[int, int, int]]] = {}
        debits: dict[tuple[str, str], list[tuple[int, int, float]]] = {}
        changed = False
        for window in windows:
            before = self._windows.get(window.id)
            if before == window:
                continue
            changed = True
            if before is not None:
                self._unplan(before)
            self._windows[window.id] = window
            if window.state in _STARTED:
                self._started[window.id] = window
            for host, slots in window.slots.items():
                spans.setdefault(host, []).append((window.start, window.end, slots))
            for label, name, amount in window.debits:
                debits.setdefault((label, name), []).append((window.start, window.end, amount))
        for table, planned in ((self.held, spans), (self.consumed, debits)):
            for key, found in planned.items():
                planner = table.get(key)
                if planner is None:
                    planner = table[key] = Planner(0)
                if len(found) == 1:
                    planner.add(*found[0])
                else:
                    planner.add_many(found)
        return changed

    def _unplan(self, window: ReservedWindow) -> None:
        self._started.pop(window.id, None)
        held = [(self.held, host, slots) for host, slots in window.slots.items()]
        held += [(self.consumed, (label, name), amount) for label, name, amount in window.debits]
        for table, key, amount in held:
            planner = table[key]
            planner.remove(window.start, window.end, amount)   # the window says what it held
            if not planner.last_end():
                del table[key]

    def started(self) -> Iterable[ReservedWindow]:
        """The windows the core has opened (state r or E)."""
        return self._started.values()

    def open_hosts(self) -> set[str]:
        """Hosts of the ARs whose jobs may be dispatched now."""
        return {host for window in self._started.values() if window.open for host in window.slots}
