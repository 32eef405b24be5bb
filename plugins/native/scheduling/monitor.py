"""params MONITOR: every pass's resource utilizations in the schedule file,
in the format of seed 001 and sge_schedule(5):

    ::::::::
    <job>:<task>:<RUNNING|STARTING|RESERVING>:<start>:<duration>:<P|G|H|Q>:<object>:<resource>:<amount>

A job held for ever (no h_rt, default_duration INFINITY) ends, as Grid
Engine writes it, at 2^32 - 1. The file is never truncated (rotate it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Sequence

from overlay_native.resources.timeline import Debit

SECTION = "::::::::"
END_OF_TIME = 2 ** 32 - 1


@dataclass(frozen=True)
class Utilization:
    """One job's use of resources in a pass, as one group of lines."""

    job_id: int
    state: str              # RUNNING, STARTING or RESERVING
    start: int
    duration: float
    debits: Sequence[Debit]

    def lines(self) -> list[str]:
        duration = int(min(self.start + self.duration, END_OF_TIME) - self.start)
        return [f"{self.job_id}:1:{self.state}:{self.start}:{duration}:{d.level}:{d.object}:"
                f"{d.resource}:{d.amount:f}" for d in self.debits]


def append_pass(path: str, utilizations: Iterable[Utilization]) -> None:
    """Add one pass's section to the schedule file."""
    text = "\n".join([SECTION] + [line for u in utilizations for line in u.lines()]) + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)
