"""Node names or fnmatch patterns of them, matched in one step: policies ask
this for every candidate node of a request, so names are looked up in a set
and all wildcard patterns are one compiled expression."""

from __future__ import annotations

import fnmatch
import re
from typing import Iterable

_WILDCARDS = frozenset("*?[")


class NodeNames:
    """Node names and fnmatch patterns (case-sensitive, as host names are
    compared elsewhere in the overlay)."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(patterns)
        wild = [p for p in self.patterns if _WILDCARDS.intersection(p)]
        self.exact = frozenset(p for p in self.patterns if p not in wild)
        self.wild = re.compile("|".join(fnmatch.translate(p) for p in wild)) if wild else None

    def __contains__(self, name: str) -> bool:
        return name in self.exact or (self.wild is not None and self.wild.match(name) is not None)

    def __str__(self) -> str:
        return ", ".join(self.patterns)
