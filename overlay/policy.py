"""What policy hooks see besides the request: the clock, every node, and
PluS's plus_rsvutil(owner, start, end)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

from overlay.model import Node


class Usage(NamedTuple):
    """plus_rsvutil's answer: [0] count, [1] total seconds, [2] node-hours."""

    count: int
    duration: int
    node_hours: float


@dataclass(frozen=True)
class PolicyContext:
    now: int
    all_nodes: tuple[Node, ...]
    usage: Callable[[str, int, int], Usage]
