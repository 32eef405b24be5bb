"""An AR as the native scheduler sees it (``ReservedWindow``): what the
backend hands over for each AR the reservation core holds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence


@dataclass(frozen=True, slots=True)
class ReservedWindow:
    """An AR as the scheduler sees it: its window, the slots it holds per
    host and who may use it. ``state`` is the AR's letter (w r W E p);
    ``hard_error`` keeps its jobs out while it is in W or E."""

    id: int
    start: int
    end: int
    slots: Mapping[str, int]
    users: tuple[str, ...]          # user names and @groups (the AR's ACL)
    state: str = "w"
    hard_error: bool = False
    submitted: int = 0              # the AR's submission time, for accounting

    def admits(self, user: str, groups: Sequence[str]) -> bool:
        return any(entry == user or (entry.startswith("@") and entry[1:] in groups)
                   for entry in self.users)

    @property
    def blocked(self) -> bool:
        return self.hard_error and self.state in ("W", "E")

    @property
    def open(self) -> bool:
        """Its jobs may be dispatched now: window open, not held by a hard error."""
        return self.state in ("r", "E") and not self.blocked
