"""Whether names and nodes match what a request asks: wildcard patterns
(* ? [..]) and a node's static attributes. The daemon's side of the request
language (overlay.request checks the forms, without the regex engine)."""

from __future__ import annotations

import fnmatch
import functools
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from overlay.model import Node, Request

@functools.lru_cache(maxsize=256)
def _wildcard(pattern: str):
    return re.compile(fnmatch.translate(pattern)).match


def wildcard_match(text: str, pattern: str) -> bool:
    """fnmatchcase for patterns users send: fnmatch keeps every pattern it
    ever compiled (32,768 of them), so distinct long patterns in refused
    requests grew the daemon by hundreds of megabytes; this cache keeps 256."""
    return _wildcard(pattern)(text) is not None


def node_satisfies(node: Node, request: Request) -> bool:
    """Whether ``node`` can ever hold ``request`` (its static attributes)."""
    if request.slots_per_node is not None and request.slots_per_node > node.slots:
        return False
    if request.memory_mb is not None and node.memory_mb < request.memory_mb:
        return False
    if request.ncpus is not None and node.ncpus < request.ncpus:
        return False
    if request.arch is not None and not wildcard_match(node.arch, request.arch):
        return False
    if request.os is not None and not wildcard_match(node.os, request.os):
        return False
    if request.queues and not any(wildcard_match(q, pattern)
                                  for q in node.queues for pattern in request.queues):
        return False
    for name, wanted in request.attributes:
        have = node.properties.get(name)
        if have is None or not wildcard_match(str(have), wanted):
            return False
    return True
