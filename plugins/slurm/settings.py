"""The ``slurm:`` section of plus.yaml, checked key by key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from overlay.api.plugin import settings

CONFLICT_POLICIES = ("requeue", "kill", "avoid")
_NAME = settings.text("a Slurm name (letters, digits, _ . -)", r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class Settings:
    bin: str = ""                   # directory of scontrol, squeue, sbatch, scancel; "" = PATH
    conf: str = ""                  # SLURM_CONF; "" = the commands' default
    partition: str = ""             # the reservations' PartitionName; "" = none
    conflict: str = "requeue"
    lend_partition: str = ""        # the partition of preemptible jobs lent ARs' idle nodes; "" none
    timeout: int = 60
    ledger: str = "slurm-ledger.json"

    @property
    def environment(self) -> dict[str, str]:
        """Every command's: times read and written in UTC, printed as epoch
        seconds (SLURM_TIME_FORMAT), so no zone or format is guessed."""
        chosen = {"TZ": "UTC", "SLURM_TIME_FORMAT": "%s"}
        if self.conf:
            chosen["SLURM_CONF"] = self.conf
        return chosen


CHECKS = {"bin": settings.path(), "conf": settings.path(), "partition": _NAME,
          "lend_partition": _NAME,
          "conflict": settings.choice(CONFLICT_POLICIES), "timeout": settings.seconds(1),
          "ledger": settings.text()}


def load(options: dict[str, Any]) -> Settings:
    """Settings from the ``slurm:`` mapping (``ssh`` is the runner's)."""
    return Settings(**settings.read_section("slurm", options, CHECKS, others=("ssh",)))
