"""The ``sge:`` section of plus.yaml, checked key by key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from overlay.api.plugin import settings
from overlay_sge.objects import OBJECT_PATTERN

CONFLICT_POLICIES = ("requeue", "kill", "avoid")
_OBJECT_NAME = settings.text("a Grid Engine object name (letters, digits, _ . -, not starting "
                             "with a digit)", OBJECT_PATTERN)


CHECKS = {"sge_root": settings.path(), "sge_cell": _OBJECT_NAME, "template_queue": _OBJECT_NAME,
          "complex": _OBJECT_NAME, "conflict": settings.choice(CONFLICT_POLICIES),
          "timeout": settings.seconds(1), "ledger": settings.text()}


@dataclass(frozen=True)
class Settings:
    sge_root: str = "/var/lib/gridengine"
    sge_cell: str = "default"
    template_queue: str = "all.q"
    complex: str = "plus_rsv"
    conflict: str = "requeue"
    timeout: int = 60
    ledger: str = "sge-ledger.json"

    @property
    def environment(self) -> dict[str, str]:
        return {"SGE_ROOT": self.sge_root, "SGE_CELL": self.sge_cell}


def load(options: dict[str, Any]) -> Settings:
    """Settings from the ``sge:`` mapping (``ssh`` is the runner's)."""
    return Settings(**settings.read_section("sge", options, CHECKS, others=("ssh",)))
