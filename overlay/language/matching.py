"""Whether names match what a request asks: wildcard patterns (* ? [..]).
The daemon's side of the request language (overlay.language.request checks the
forms, without the regex engine); whether a node fits a request is the
placement's (overlay.placement.eligible)."""

from __future__ import annotations

import fnmatch
import functools
import re


@functools.lru_cache(maxsize=256)
def _wildcard(pattern: str):
    return re.compile(fnmatch.translate(pattern)).match


def wildcard_match(text: str, pattern: str) -> bool:
    """fnmatchcase for patterns users send: fnmatch keeps every pattern it
    ever compiled (32,768 of them), so distinct long patterns in refused
    requests grew the daemon by hundreds of megabytes; this cache keeps 256."""
    return _wildcard(pattern)(text) is not None
