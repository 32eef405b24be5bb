"""Users and groups as this host knows them: the lookups the core and the
backends share (the daemon naming its callers, policies counting a group's
members, Grid Engine usersets and TORQUE queue ACLs listing them)."""

from __future__ import annotations

import functools
import grp
import os
import pwd
import time
from typing import Iterable

GROUPS_TTL = 60       # seconds a looked-up account and its groups are trusted
GROUPS_KEPT = 4096    # accounts kept between requests
LOGIN_DEFS = "/etc/login.defs"
DEFAULT_UID_MIN = 1000
"""useradd's own default, where login.defs sets no UID_MIN."""
OVERFLOW_UID = 65534
"""nobody: the kernel's overflow uid, an account every system has and no person uses."""


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


def account(user: int | str, gid: int | None = None) -> tuple[str, tuple[str, ...]] | None:
    """The name and groups (``gid`` first, else the account's own primary
    group) of a uid or user name; None for one this host does not know.
    Looked up again after GROUPS_TTL seconds, so a change of membership
    takes effect within a minute: each request names its caller and its
    policies every owner with ARs, and NSS lookups may go to LDAP."""
    return _looked_up(user, gid, int(time.monotonic() // GROUPS_TTL))


@functools.lru_cache(maxsize=GROUPS_KEPT)
def _looked_up(user: int | str, gid: int | None, period: int) -> tuple[str, tuple[str, ...]] | None:
    try:
        entry = pwd.getpwuid(user) if isinstance(user, int) else pwd.getpwnam(user)
    except KeyError:
        return None
    return entry.pw_name, groups_of(entry.pw_name, entry.pw_gid if gid is None else gid)


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


def login_uid_min(path: str = LOGIN_DEFS) -> int:
    """The lowest uid of a person's account: login.defs' UID_MIN, as
    useradd reads it (DEFAULT_UID_MIN where the file or the key is missing)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                words = line.split()
                if len(words) >= 2 and words[0] == "UID_MIN" and words[1].isdigit():
                    return int(words[1])
    except OSError:
        pass
    return DEFAULT_UID_MIN


def system_account(uid: int, min_uid: int) -> bool:
    """Whether ``uid`` is root or an account of the system (below
    ``min_uid``, or nobody): nothing is ever done as one for a client."""
    return uid == 0 or uid < min_uid or uid == OVERFLOW_UID


def listed(entries: Iterable[str], user: str, groups: Iterable[str]) -> bool:
    """Whether a list of user names, @groups and "*" (arusers, act_for)
    names ``user``, a member of ``groups``."""
    for entry in entries:
        if entry == "*" or entry == user:
            return True
        if entry.startswith("@") and entry[1:] in groups:
            return True
    return False
