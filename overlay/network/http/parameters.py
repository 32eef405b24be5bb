"""Query parameters an endpoint does not take are refused, not ignored: a
client that misspells a filter (``?stat=r``) would otherwise get every AR
and believe them filtered."""

from __future__ import annotations

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from overlay.network.http.errors import text
from overlay.network.http.refusal import Refusal
from overlay.wire import protocol


def _names(dependant: Dependant) -> set[str]:
    """The query parameters of ``dependant`` and its dependencies."""
    names = {param.alias for param in dependant.query_params}
    for below in dependant.dependencies:
        names |= _names(below)
    return names


_TAKEN: dict[int, frozenset[str]] = {}
"""Each route's, worked out at its first request (routes are made once)."""


def _taken(route: APIRoute) -> frozenset[str]:
    """The query parameters ``route`` takes, its dependencies' included."""
    taken = _TAKEN.get(id(route))
    if taken is None:
        taken = _TAKEN[id(route)] = frozenset(_names(route.dependant))
    return taken


async def known_parameters(request: Request) -> None:
    """Refuse a request naming a query parameter its endpoint does not take."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    taken = _taken(route)
    unknown = sorted(set(request.query_params) - taken)
    if unknown:
        accepted = ", ".join(sorted(taken)) or "none"
        raise Refusal(400, {"error": f"unknown query parameter '{text(unknown[0])}'"
                                    f"{f' (and {len(unknown) - 1} more)' if len(unknown) > 1 else ''}"
                                    f"; this endpoint takes: {accepted}",
                            "status": protocol.EXIT_USAGE, "kind": "invalid"})
