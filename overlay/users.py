"""Users and groups as this host knows them: the lookups the core and the
backends share (the daemon naming its callers, policies counting a group's
members, Grid Engine usersets and TORQUE queue ACLs listing them)."""

from __future__ import annotations

import grp
import os
from typing import Iterable


def groups_of(user: str, gid: int) -> tuple[str, ...]:
    """The user's group names, the primary (``gid``) first."""
    names: list[str] = []
    for group_id in [gid] + os.getgrouplist(user, gid):
        try:
            name = grp.getgrgid(group_id).gr_name
        except KeyError:
            continue
        if name not in names:
            names.append(name)
    return tuple(names)


def with_members(entries: Iterable[str]) -> list[str]:
    """An access list with each @group's members listed after it by name:
    batch systems match a group entry against a job's primary group only,
    or not at all."""
    expanded = []
    for entry in entries:
        expanded.append(entry)
        if entry.startswith("@"):
            try:
                expanded.extend(sorted(grp.getgrnam(entry[1:]).gr_mem))
            except KeyError:
                pass    # a group this host does not know: the entry only
    return expanded
