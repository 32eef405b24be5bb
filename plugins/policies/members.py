"""Who a list of members means: user names and @group names, as Grid
Engine's arusers and access lists write them."""

from __future__ import annotations

from typing import Iterable


class Members:
    """Users and groups; an owner belongs when named or in one of the groups."""

    def __init__(self, entries: Iterable[str]) -> None:
        entries = tuple(entries)
        self.users = frozenset(e for e in entries if not e.startswith("@"))
        self.groups = frozenset(e[1:] for e in entries if e.startswith("@"))

    def includes(self, owner: str, groups: Iterable[str]) -> bool:
        """Is ``owner`` (whose groups are ``groups``) one of the members?"""
        return owner in self.users or not self.groups.isdisjoint(groups)
