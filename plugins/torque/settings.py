"""The ``torque:`` section of plus.yaml, checked key by key."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

CONFLICT_POLICIES = ("requeue", "kill", "avoid")
SCHEDULERS = ("pbs_sched", "plus")
ORDER_KEYS = ("JobSortKey", "NodeSortKey", "OwnersOrder", "GroupsOrder", "HostsOrder", "sched_conf")
_KEYS = ("bin", "server", "scheduler", "schedule_interval", "conflict", "drain", "keep_property",
         "queue_timeout", "timeout", "ledger", "ssh", *ORDER_KEYS)
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class Settings:
    bin: str = ""                     # directory of qmgr, pbsnodes, ...; "" = PATH
    server: str = ""                  # PBS_DEFAULT; "" = the client's default server
    scheduler: str = "pbs_sched"      # or "plus": PluS's self-scheduling mode
    schedule_interval: int = 10       # plus mode: seconds between passes
    conflict: str = "requeue"
    drain: int = 0                    # seconds before a start to take the nodes offline
    keep_property: str = "plus"       # keeps a node's property list from ever emptying
    queue_timeout: int = 30           # seconds to retry deleting a queue that still counts jobs
    timeout: int = 60
    ledger: str = "torque-ledger.json"

    @property
    def environment(self) -> dict[str, str]:
        return {"PBS_DEFAULT": self.server} if self.server else {}


def _seconds(key: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"torque.{key}: expected a whole number of seconds of {least} or more, "
                         f"got {value!r}")
    return value


def load(options: dict[str, Any]) -> Settings:
    """Settings from the ``torque:`` mapping (``ssh`` is the runner's, the
    job order keys the self-scheduler's)."""
    unknown = sorted(set(options) - set(_KEYS))
    if unknown:
        raise ValueError(f"torque.{unknown[0]}: unknown setting; known: {', '.join(_KEYS)}")
    values: dict[str, Any] = {}
    for key in ("bin", "server", "keep_property", "ledger"):
        if key in options:
            value = options[key]
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"torque.{key}: expected a non-empty string, got {value!r}")
            values[key] = value
    if "bin" in values and not os.path.isabs(values["bin"]):
        raise ValueError(f"torque.bin: expected an absolute path, got {values['bin']!r}")
    if "keep_property" in values and (not _NAME.match(values["keep_property"])
                                      or re.fullmatch(r"R\d+", values["keep_property"])):
        raise ValueError(f"torque.keep_property: expected a node property name (letters, digits, "
                         f"_ . -; not R<number>, the AR properties), got {values['keep_property']!r}")
    for key, accepted in (("scheduler", SCHEDULERS), ("conflict", CONFLICT_POLICIES)):
        if key in options:
            if options[key] not in accepted:
                raise ValueError(f"torque.{key}: expected one of {', '.join(accepted)}, "
                                 f"got {options[key]!r}")
            values[key] = options[key]
    for key, least in (("schedule_interval", 1), ("drain", 0), ("queue_timeout", 1), ("timeout", 1)):
        if key in options:
            values[key] = _seconds(key, options[key], least)
    return Settings(**values)
