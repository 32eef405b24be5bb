"""Match policies by name, as flux-sched's dfu_match_policy_factory: a
new placement (maintenance-aware, pack, spread) is a class here and a name
to choose it by."""

from __future__ import annotations

from typing import Callable

from overlay.placement.base import MatchPolicy
from overlay.placement.first_fit import FirstFit

DEFAULT_POLICY = FirstFit.name

MATCH_POLICIES: dict[str, Callable[[], MatchPolicy]] = {FirstFit.name: FirstFit}


def match_policy(name: str) -> MatchPolicy:
    """The match policy called ``name``; ValueError naming those there are."""
    make = MATCH_POLICIES.get(name)
    if make is None:
        raise ValueError(f"unknown match policy {name!r}; known: {', '.join(MATCH_POLICIES)}")
    return make()
