"""The ``torque:`` section of plus.yaml, checked key by key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from overlay.api.plugin import settings

CONFLICT_POLICIES = ("requeue", "kill", "avoid")
SCHEDULERS = ("pbs_sched", "plus")
ORDER_KEYS = ("JobSortKey", "NodeSortKey", "OwnersOrder", "GroupsOrder", "HostsOrder", "sched_conf")


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
    windows_file: str = "torque-windows.json"   # pbs_sched mode: open windows, for the filter

    @property
    def environment(self) -> dict[str, str]:
        return {"PBS_DEFAULT": self.server} if self.server else {}


_PROPERTY = settings.text("a node property name (letters, digits, _ . -; not R<number>, the AR "
                          "properties)", r"(?!R[0-9]+\Z)[A-Za-z][A-Za-z0-9_.-]*")
CHECKS = {"bin": settings.path(), "server": settings.text(),
          "scheduler": settings.choice(SCHEDULERS), "schedule_interval": settings.seconds(1),
          "conflict": settings.choice(CONFLICT_POLICIES), "drain": settings.seconds(0),
          "keep_property": _PROPERTY, "queue_timeout": settings.seconds(1),
          "timeout": settings.seconds(1), "ledger": settings.text(),
          "windows_file": settings.text()}


def load(options: dict[str, Any]) -> Settings:
    """Settings from the ``torque:`` mapping (``ssh`` is the runner's, the
    job order keys the self-scheduler's)."""
    return Settings(**settings.read_section("torque", options, CHECKS,
                                            others=("ssh", *ORDER_KEYS)))
