"""The ``sge:`` section of plus.yaml, checked key by key."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from overlay_sge.objects import check_object

CONFLICT_POLICIES = ("requeue", "kill", "avoid")
_KEYS = ("sge_root", "sge_cell", "template_queue", "complex", "conflict", "timeout", "ledger", "ssh")


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
    unknown = sorted(set(options) - set(_KEYS))
    if unknown:
        raise ValueError(f"sge.{unknown[0]}: unknown setting; known: {', '.join(_KEYS)}")
    values = {}
    for key in ("sge_root", "sge_cell", "template_queue", "complex", "ledger"):
        if key in options:
            value = options[key]
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"sge.{key}: expected a non-empty string, got {value!r}")
            values[key] = value
    if "sge_root" in values and not os.path.isabs(values["sge_root"]):
        raise ValueError(f"sge.sge_root: expected an absolute path, got {values['sge_root']!r}")
    for key in ("sge_cell", "template_queue", "complex"):
        if key in values:
            check_object(values[key], f"sge.{key}")
    if "conflict" in options:
        if options["conflict"] not in CONFLICT_POLICIES:
            raise ValueError(f"sge.conflict: expected one of {', '.join(CONFLICT_POLICIES)}, "
                             f"got {options['conflict']!r}")
        values["conflict"] = options["conflict"]
    if "timeout" in options:
        timeout = options["timeout"]
        if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1:
            raise ValueError(f"sge.timeout: expected a number of seconds of 1 or more, got {timeout!r}")
        values["timeout"] = timeout
    return Settings(**values)
