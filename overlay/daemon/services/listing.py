"""What a listing of ARs may be narrowed and ordered by, beyond
plus_status's owner and window (the HTTP API's ``GET /v1/reservations``):
states, a name or name pattern, a node held, a user the access list lets
in, and a sort order. Each filter costs one look per AR listed."""

from __future__ import annotations

from typing import Callable, Iterable

from overlay.kit.users import account, listed
from overlay.language.matching import wildcard_match
from overlay.language.model import InvalidRequest, Reservation, State

SORT_KEYS: dict[str, Callable[[Reservation], object]] = {
    "id": lambda ar: ar.id, "name": lambda ar: ar.name, "owner": lambda ar: ar.owner,
    "state": lambda ar: ar.state.value, "start": lambda ar: ar.start,
    "end": lambda ar: ar.end, "submission_time": lambda ar: ar.submission_time}
"""The fields a listing sorts by; ``-field`` sorts that one descending."""
MAX_SORT_KEYS = 4
STATE_LETTERS = "".join(state.value for state in State)


def states(letters: str | None) -> frozenset[str] | None:
    """The state letters asked for (``rw``, ``E``), or InvalidRequest
    naming the ones that are none."""
    if letters is None:
        return None
    unknown = sorted(set(letters) - set(STATE_LETTERS))
    if unknown or not letters:
        raise InvalidRequest(f"state: '{''.join(unknown)}' is no AR state; the states are the "
                             f"letters {STATE_LETTERS}")
    return frozenset(letters)


def sort_order(text: str | None) -> list[tuple[str, bool]]:
    """``text`` (``start``, ``-end,id``) as (field, descending) pairs."""
    if text is None:
        return []
    order = []
    for part in text.split(","):
        field, descending = part.removeprefix("-"), part.startswith("-")
        if field not in SORT_KEYS:
            raise InvalidRequest(f"sort: '{field}' is not a field to sort by; accepted: "
                                 f"{', '.join(SORT_KEYS)}, each with - before it to sort "
                                 "descending, separated by commas")
        order.append((field, descending))
    if len(order) > MAX_SORT_KEYS:
        raise InvalidRequest(f"sort: {len(order)} fields; at most {MAX_SORT_KEYS}")
    return order


def narrowed(ars: Iterable[Reservation], wanted_states: frozenset[str] | None,
             name: str | None, node: str | None, user: str | None) -> list[Reservation]:
    """The ARs that pass every filter given: a state among ``wanted_states``,
    a name equal to ``name`` or matching it as a pattern, ``node`` among
    their nodes, ``user`` let in by their access list (by name or by one of
    the user's groups)."""
    known = account(user) if user is not None else None
    groups = known[1] if known is not None else ()
    return [ar for ar in ars
            if (wanted_states is None or ar.state.value in wanted_states)
            and (name is None or ar.name == name or wildcard_match(ar.name, name))
            and (node is None or node in ar.node_names)
            and (user is None or listed(ar.acl, user, groups))]


def ordered(ars: list[Reservation], order: list[tuple[str, bool]]) -> list[Reservation]:
    """``ars`` sorted by ``order``, the last field first (sorts are stable);
    unordered, as they came (by id)."""
    for field, descending in reversed(order):
        ars = sorted(ars, key=SORT_KEYS[field], reverse=descending)
    return ars
