"""An AR as the native scheduler sees it (``ReservedWindow``): what the
backend hands over for each AR the reservation core holds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence


@dataclass(frozen=True, slots=True)
class ReservedWindow:
    """An AR as the scheduler sees it: its window, the slots it holds per
    host and who may use it. ``state`` is the AR's letter (w r W E p);
    ``hard_error`` keeps its jobs out while it is in W or E.

    A qrsub AR also names its queue instances (``instances``: slots per
    (queue, host)) and what it holds of each container's consumables over
    its window (``debits``: container label, complex, amount; its slots
    among them): its jobs run in those instances and use only that."""

    id: int
    start: int
    end: int
    slots: Mapping[str, int]
    users: tuple[str, ...]          # user names and @groups (the AR's ACL)
    state: str = "w"
    hard_error: bool = False
    submitted: int = 0              # the AR's submission time, for accounting
    instances: Mapping[tuple[str, str], int] = field(default_factory=dict)
    debits: tuple[tuple[str, str, float], ...] = ()

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
