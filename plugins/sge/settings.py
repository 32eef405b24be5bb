"""The ``sge:`` section of plus.yaml, checked key by key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from overlay.api.plugin import Check, settings
from overlay_sge.objects import AR_QUEUE, OBJECT_PATTERN

CONFLICT_POLICIES = ("requeue", "kill", "avoid")
_OBJECT_NAME = settings.text("a Grid Engine object name (letters, digits, _ . -, not starting "
                             "with a digit)", OBJECT_PATTERN)
LEND_WATCH = (0.1, 60.0)
"""The bounds of ``lend_watch``, in seconds."""

_WATCH = Check(f"a number of seconds from {LEND_WATCH[0]} to {LEND_WATCH[1]:g}",
               lambda value: float(value) if isinstance(value, (int, float))
               and not isinstance(value, bool) and LEND_WATCH[0] <= value <= LEND_WATCH[1]
               else None)

CHECKS = {"sge_root": settings.path(), "sge_cell": _OBJECT_NAME, "template_queue": _OBJECT_NAME,
          "complex": _OBJECT_NAME, "conflict": settings.choice(CONFLICT_POLICIES),
          "timeout": settings.seconds(1), "ledger": settings.text(),
          "lend_queue": _OBJECT_NAME, "lend_watch": _WATCH}


@dataclass(frozen=True)
class Settings:
    sge_root: str = "/var/lib/gridengine"
    sge_cell: str = "default"
    template_queue: str = "all.q"
    complex: str = "plus_rsv"
    conflict: str = "requeue"
    timeout: int = 60
    ledger: str = "sge-ledger.json"
    lend_queue: str | None = None
    """The queue that lends running ARs' idle slots (None: no lending)."""
    lend_watch: float = 1.0
    """Seconds between two looks for lent jobs an AR took its slots back from."""

    @property
    def environment(self) -> dict[str, str]:
        return {"SGE_ROOT": self.sge_root, "SGE_CELL": self.sge_cell}


def load(options: dict[str, Any]) -> Settings:
    """Settings from the ``sge:`` mapping (``ssh`` is the runner's)."""
    chosen = Settings(**settings.read_section("sge", options, CHECKS, others=("ssh",)))
    lend = chosen.lend_queue
    if lend is not None and (AR_QUEUE.match(lend) or lend == chosen.template_queue):
        raise ValueError(f"sge.lend_queue: {lend!r} is an AR queue's name (R<number>) or the "
                         "template queue; expected a queue name of its own, e.g. plus_lend")
    return chosen
