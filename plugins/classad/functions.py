"""PluS's built-in ClassAd functions, worked out in Python.

HTCondor's ClassAd library cannot be given new functions, so the plugin
evaluates each call's arguments with the library, computes the result here
and hands it back as a value (see ``program``). None means the ClassAd
value ``error``, which is what a ClassAd function gives for bad arguments.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Callable

import classad2

from overlay.api.plugin import PolicyContext


def number(value: Any) -> float | None:
    """A ClassAd value as a number: reltimes arrive as seconds, absTimes
    as datetimes (taken as epoch seconds); anything else is not a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dt.datetime):
        return value.timestamp()
    return None


def _interpolate(shape: Callable[[float], float], args: tuple[Any, ...]) -> float | None:
    values = [number(v) for v in args]
    if None in values or values[1] == values[3]:
        return None
    x, x1, y1, x2, y2 = values
    return y1 + (y2 - y1) * shape((x - x1) / (x2 - x1))


def linear(x: Any, x1: Any, y1: Any, x2: Any, y2: Any) -> float | None:
    """f(x) of the straight line through (x1, y1) and (x2, y2) (seed 004, 3.4.5.2)."""
    return _interpolate(lambda t: t, (x, x1, y1, x2, y2))


def quadratic(x: Any, x1: Any, y1: Any, x2: Any, y2: Any) -> float | None:
    """f(x) of the parabola with its vertex at (x1, y1) through (x2, y2): the
    manual's "use quadratic() in the same way" as linear()."""
    return _interpolate(lambda t: t * t, (x, x1, y1, x2, y2))


def rsvutil(context: PolicyContext) -> Callable[[Any, Any, Any], classad2.ExprTree | None]:
    """plus_rsvutil(owner, start, end): {count, relTime(total duration),
    node-hours} of the owner's ARs overlapping [start, end)."""
    def function(owner: Any, start: Any, end: Any) -> classad2.ExprTree | None:
        begin, finish = number(start), number(end)
        if not isinstance(owner, str) or begin is None or finish is None:
            return None
        usage = context.usage(owner, int(begin), int(finish))
        return classad2.ExprTree(f"{{{usage.count}, relTime({usage.duration}), "
                                 f"{float(usage.node_hours)!r}}}")
    return function


ARITY = {"linear": 5, "quadratic": 5, "plus_rsvutil": 3}
"""PluS's functions by name (ClassAd names are case-insensitive) and their argument counts."""
