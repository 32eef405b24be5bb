"""Standard Workload Format traces (Parallel Workloads Archive, SWF 2.2):
the jobs of a real machine's log, for replay by the simulator."""

from __future__ import annotations

import gzip
from dataclasses import dataclass


@dataclass(frozen=True)
class TraceJob:
    """The SWF fields a replay needs; -1 means unknown, as in the format."""

    id: int
    submit: int
    run: int
    slots: int
    requested_time: int


@dataclass(frozen=True)
class Trace:
    jobs: list[TraceJob]
    processors: int
    header: dict[str, str]
    skipped: int            # records without a run time or a processor count


def read(path: str) -> Trace:
    """Read an SWF file (plain or .gz). Processors are the requested count,
    or the allocated one where none was requested."""
    opener = gzip.open if path.endswith(".gz") else open
    jobs, header, skipped = [], {}, 0
    with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if line.startswith(";"):
                key, sep, value = line[1:].partition(":")
                if sep and key.strip():
                    header.setdefault(key.strip(), value.strip())
                continue
            fields = line.split()
            if not fields:
                continue
            if len(fields) < 9:
                raise ValueError(f"{path}:{number}: an SWF record has 18 fields, found {len(fields)}")
            try:
                job, submit, run, allocated, requested, limit = (
                    int(float(fields[i])) for i in (0, 1, 3, 4, 7, 8))
            except ValueError:
                raise ValueError(f"{path}:{number}: fields must be numbers: {line.strip()[:60]}") from None
            slots = requested if requested > 0 else allocated
            if run < 0 or slots <= 0:
                skipped += 1
                continue
            jobs.append(TraceJob(job, submit, run, slots, limit))
    processors = int(header.get("MaxProcs", "0") or 0) or max((j.slots for j in jobs), default=0)
    jobs.sort(key=lambda j: (j.submit, j.id))
    return Trace(jobs, processors, header, skipped)
