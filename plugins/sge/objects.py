"""The Grid Engine objects of one AR and the files qconf reads for them.

Per AR 123: hostgroup ``@R123_hosts`` (the reserved hosts), userset
``R123_users`` (type ACL: the AR's users and @groups) and cluster queue
``R123`` on that hostgroup, open to that userset only and carrying the
FORCED complex that AR jobs request (``-l plus_rsv=R123``), so no other
job can land in it. Every name is checked here before it reaches qconf.
"""

from __future__ import annotations

import re
from typing import Iterable

from overlay.api.plugin import Allocation, with_members

AR_QUEUE = re.compile(r"^R([1-9][0-9]{0,6})$")
_HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,253}[A-Za-z0-9])?$")
_USER = re.compile(r"^@?[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
OBJECT_PATTERN = r"[A-Za-z_][A-Za-z0-9_.-]{0,63}"
"""A queue, complex or cell name taken from the configuration (matched whole)."""

CONTROLLED = ("qname", "hostlist", "slots", "user_lists", "xuser_lists", "complex_values",
              "h_rt", "s_rt", "load_thresholds", "suspend_thresholds", "subordinate_list",
              "calendar", "owner_list")
"""Queue attributes the AR decides; every other one comes from the template queue."""


def queue_name(ar_id: int) -> str:
    return f"R{ar_id}"


def hostgroup_name(ar_id: int) -> str:
    return f"@R{ar_id}_hosts"


def userset_name(ar_id: int) -> str:
    return f"R{ar_id}_users"


def ar_id_of(queue: str) -> int | None:
    """The AR id of an AR queue name (R123 -> 123), None for other queues."""
    match = AR_QUEUE.match(queue)
    return int(match.group(1)) if match else None


def check_host(name: str) -> str:
    if not _HOST.match(name):
        raise ValueError(f"refusing host name {name!r}: not a valid host name")
    return name


def check_user(entry: str) -> str:
    """A userset entry: a user or an @group."""
    if not _USER.match(entry):
        raise ValueError(f"refusing user {entry!r}: not a valid user or @group name")
    return entry


def parse_config(text: str) -> dict[str, str]:
    """qconf -sq/-shgrp/-su output as attribute -> value; backslash-continued
    lines are joined (qconf wraps long lists that way)."""
    joined = re.sub(r"\\\n\s*", "", text)
    attributes = {}
    for line in joined.splitlines():
        key, _, value = line.strip().partition(" ")
        if key and not key.startswith("#"):
            attributes[key] = re.sub(r"\s*,\s*", ",", " ".join(value.split()))
    return attributes


def render(attributes: dict[str, str]) -> str:
    return "".join(f"{key} {value}\n" for key, value in attributes.items())


def hostgroup(ar_id: int, hosts: Iterable[str]) -> dict[str, str]:
    names = sorted(check_host(h) for h in hosts)
    return {"group_name": hostgroup_name(ar_id), "hostlist": " ".join(names) or "NONE"}


def userset(ar_id: int, entries: Iterable[str]) -> dict[str, str]:
    """Grid Engine matches an @group entry against a job's primary group
    only, so each group's supplementary members are listed by name too."""
    users = list(dict.fromkeys(check_user(e) for e in with_members(entries)))
    return {"name": userset_name(ar_id), "type": "ACL", "fshare": "0", "oticket": "0",
            "entries": ",".join(users) or "NONE"}


def _default_part(value: str) -> str:
    """A queue value without its [host=value] overrides: they name hosts of
    the template's hostlist, not of the AR's."""
    return value.split(",[", 1)[0].strip()


def copied(template: dict[str, str]) -> dict[str, str]:
    """The template queue's attributes without their host overrides, for a
    queue of the overlay's own (an AR's, the lending queue)."""
    return {key: _default_part(value) for key, value in template.items()}


def per_host(default: str, values: dict[str, str]) -> str:
    """A queue value with a [host=value] override for each host whose value
    is not ``default``."""
    return default + "".join(f",[{check_host(host)}={value}]"
                             for host, value in sorted(values.items()) if value != default)


def slots_value(allocations: Iterable[Allocation]) -> str:
    """``slots`` with a [host=n] override wherever it differs from the first."""
    allocations = sorted(allocations, key=lambda a: a.node)
    if not allocations:
        return "0"
    return per_host(str(allocations[0].slots), {a.node: str(a.slots) for a in allocations})


def format_limit(seconds: int) -> str:
    """A queue time limit as Grid Engine writes it (hh:mm:ss)."""
    hours, rest = divmod(max(0, seconds), 3600)
    return f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"


def queue(ar_id: int, template: dict[str, str], allocations: Iterable[Allocation],
          complex_name: str, runtime_limit: int, subordinates: str = "NONE") -> dict[str, str]:
    """The AR queue's full configuration: the template queue's attributes
    (PEs, checkpointing, shell, tmpdir...) with the AR's hosts, slots, users,
    forced complex, job runtime limit (AR duration minus DURATION_OFFSET)
    and ``subordinates`` (the lending queue's jobs it preempts)."""
    attributes = copied(template)
    limit = format_limit(runtime_limit)
    attributes.update({
        "qname": queue_name(ar_id), "hostlist": hostgroup_name(ar_id),
        "slots": slots_value(allocations), "user_lists": userset_name(ar_id),
        "xuser_lists": "NONE", "complex_values": f"{complex_name}={queue_name(ar_id)}",
        "h_rt": limit, "s_rt": limit, "load_thresholds": "NONE", "suspend_thresholds": "NONE",
        "subordinate_list": subordinates, "calendar": "NONE", "owner_list": "NONE"})
    return attributes


def differences(current: dict[str, str], wanted: dict[str, str]) -> list[str]:
    """The controlled attributes whose live value is not the wanted one."""
    return [key for key in CONTROLLED if key in wanted and
            _normal(current.get(key, "")) != _normal(wanted[key])]


def _normal(value: str) -> str:
    """Grid Engine echoes some values differently from how they were written
    (times as h:mm:ss or seconds, lists with spaces)."""
    value = value.replace(" ", "")
    if re.fullmatch(r"\d+:\d{1,2}:\d{1,2}", value):
        h, m, s = (int(part) for part in value.split(":"))
        return str(h * 3600 + m * 60 + s)
    return value
