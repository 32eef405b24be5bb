"""Job accounting in Grid Engine's accounting(5) format: one line of 45
colon-separated fields per finished job, ``arid`` and ``ar_sub_time`` last,
and qacct's views of it (the totals, per owner, group, host, queue or AR,
and the per-job listing), byte for byte as SoGE 8.1.9 prints them.

Standard library only: plus_qacct reads the file itself, as qacct does.
"""

from __future__ import annotations

import math
import signal
from dataclasses import dataclass, fields
from typing import Callable, Iterable, Iterator

from overlay.api.commands import DEFAULT_ACCOUNT, format_ctime, shown

FAILED = {
    0: "no failure", 1: "assumedly before job", 11: "before job", 26: "opening output file",
    27: "searching requested shell", 28: "changing into working directory",
    25: "rescheduling", 37: "qmaster enforced h_rt, h_cpu, or h_vmem limit",
    100: "assumedly after job",
}
"""sge_status(5)'s failed codes the native shepherd can produce."""
PREEMPTED = 25
"""The failed code of a run preempted from an AR's idle slots, requeued or
killed (Grid Engine's "rescheduling", which it writes for each run of a
rescheduled job)."""
LENT = "-lent"
"""The category's mark of a run on an AR's idle slots: ``-lent AR_ID``."""


def one_line(text: str) -> str:
    """``text`` as one printable line, a space for anything else in it (line
    breaks, control characters, bytes that were not UTF-8): a job's names
    and reasons may neither split a record nor fail to be written."""
    return text if text.isprintable() else "".join(c if c.isprintable() else " " for c in text)


@dataclass
class JobRecord:
    """One accounting(5) line; floats as Grid Engine writes them (%f)."""

    qname: str
    hostname: str
    group: str
    owner: str
    job_name: str
    job_number: int
    account: str = DEFAULT_ACCOUNT
    priority: int = 0
    submission_time: int = 0
    start_time: int = 0
    end_time: int = 0
    failed: int = 0
    exit_status: int = 0
    ru_wallclock: int = 0
    ru_utime: float = 0.0
    ru_stime: float = 0.0
    ru_maxrss: float = 0.0        # kilobytes, as getrusage(2) gives it
    ru_ixrss: int = 0
    ru_ismrss: int = 0
    ru_idrss: int = 0
    ru_isrss: int = 0
    ru_minflt: int = 0
    ru_majflt: int = 0
    ru_nswap: int = 0
    ru_inblock: float = 0.0
    ru_oublock: int = 0
    ru_msgsnd: int = 0
    ru_msgrcv: int = 0
    ru_nsignals: int = 0
    ru_nvcsw: int = 0
    ru_nivcsw: int = 0
    project: str = "NONE"
    department: str = "defaultdepartment"
    granted_pe: str = "NONE"
    slots: int = 1
    task_number: int = 0
    cpu: float = 0.0
    mem: float = 0.0              # GB seconds
    io: float = 0.0               # GB
    category: str = "NONE"
    iow: float = 0.0
    pe_taskid: str = "NONE"
    maxvmem: float = 0.0          # bytes
    arid: int = 0
    ar_sub_time: int = 0

    def line(self) -> str:
        values = []
        for spec in fields(self):
            value = getattr(self, spec.name)
            text = f"{value:f}" if isinstance(value, float) else str(value)
            values.append(one_line(text).replace(":", ";"))
        return ":".join(values)

    @classmethod
    def parse(cls, line: str) -> JobRecord:
        parts = line.rstrip("\n").split(":")
        specs = fields(cls)
        if len(parts) != len(specs):
            raise ValueError(f"expected {len(specs)} fields, found {len(parts)}")
        values = {}
        for spec, text in zip(specs, parts, strict=True):
            kind = spec.type if isinstance(spec.type, str) else spec.type.__name__
            values[spec.name] = _number(text, spec.name, float) if kind == "float" else \
                int(_number(text, spec.name, float)) if kind == "int" else text
        return cls(**values)


def _number(text: str, field: str, kind: type) -> float:
    """A finite number of a record's field (inf and nan are no figures)."""
    value = kind(text)
    if not math.isfinite(value):
        raise ValueError(f"{field}: '{shown(text)}' is not a finite number")
    return value


TARGET = "accounting"
"""The store outbox's target for the accounting file: the scheduler puts a
job's record there with its end, the leader appends it (as the core's
records to the reporting file, overlay.reporting.drain)."""

HEADER = "# Version: plus-overlay\n# \n# DO NOT MODIFY THIS FILE MANUALLY!\n# \n"
"""Grid Engine's comment lines at the top of a new accounting file."""


def _raise(error: ValueError) -> None:
    raise error


def read(path: str, on_error: Callable[[ValueError], None] = _raise) -> Iterator[JobRecord]:
    """The records of an accounting file; comments and lines of one
    character or less are skipped (as qacct does), a malformed line goes to
    ``on_error`` (by default raised) naming it: plus_qacct skips it with a
    warning, as qacct does, so one bad line cannot hide everyone's jobs."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if len(line.strip()) <= 1 or line.startswith("#"):
                continue
            try:
                record = JobRecord.parse(line)
            except ValueError as error:
                on_error(ValueError(f"{path}:{number}: not an accounting record: {error}"))
                continue
            yield record


# -- qacct's views ---------------------------------------------------------------------------

_COLUMNS = ("WALLCLOCK", "UTIME", "STIME", "CPU", "MEMORY", "IO", "IOW")


def _usage(records: Iterable[JobRecord]) -> tuple[int, float, float, float, float, float, float]:
    records = list(records)
    return (sum(r.ru_wallclock for r in records), sum(r.ru_utime for r in records),
            sum(r.ru_stime for r in records), sum(r.cpu for r in records),
            sum(r.mem for r in records), sum(r.io for r in records),
            sum(r.iow for r in records))


def _figures(usage: tuple) -> str:
    wall, utime, stime, cpu, mem, io, iow = usage
    return f"{utime:>14.3f}{stime:>14.3f}{cpu:>14.3f}{mem:>19.3f}{io:>19.3f}{iow:>19.3f}"


def _titles() -> str:
    return "".join(f"{name:>14}" for name in _COLUMNS[1:4]) + \
        "".join(f"{name:>19}" for name in _COLUMNS[4:])


def total(records: Iterable[JobRecord]) -> str:
    """qacct without grouping: Total System Usage."""
    usage = _usage(records)
    return "\n".join(["Total System Usage", f"{'WALLCLOCK':>13}{_titles()}", "=" * 112,
                      f"{usage[0]:>13}{_figures(usage)}"])


GROUPINGS = {"owner": ("OWNER", lambda r: r.owner), "group": ("GROUP", lambda r: r.group),
             "host": ("HOST", lambda r: r.hostname), "queue": ("CLUSTER QUEUE", lambda r: r.qname),
             "ar": ("AR", lambda r: r.arid)}


def grouped(records: Iterable[JobRecord], by: str, only: str | None = None) -> str:
    """qacct -o, -g, -h, -q or -ar: one line per owner, group, host, cluster
    queue or AR (``only`` that one), in name order. Column widths follow
    SoGE 8.1.9: the name column is the longest name in the file (or the
    title) plus 4; a listing of every AR includes AR 0 (jobs in none) and
    has a wider WALLCLOCK column than one of a single AR."""
    title, key = GROUPINGS[by]
    records = list(records)
    groups: dict = {}
    for record in records:
        name = key(record)
        if only is None or str(name) == only:
            groups.setdefault(name, []).append(record)
    if by == "ar":
        wall = 13 if only is not None else 14
        lines = [f"{title:<5}{'WALLCLOCK':>{wall}}{_titles()}", "=" * (5 + wall + 99)]
        for name in sorted(groups):
            usage = _usage(groups[name])
            lines.append(f"{name:>5}{usage[0]:>{wall}}{_figures(usage)}")
        return "\n".join(lines)
    width = max([len(title)] + [len(str(key(record))) for record in records]) + 4
    lines = [f"{title:<{width}}{'WALLCLOCK':>10}{_titles()}", "=" * (width + 10 + 99)]
    for name in sorted(groups):
        usage = _usage(groups[name])
        lines.append(f"{name:<{width}}{usage[0]:>10}{_figures(usage)}")
    return "\n".join(lines)


def lent_from(record: JobRecord) -> int | None:
    """The AR whose idle slots the record's run used, if it was lent one."""
    words = record.category.split()
    for word, after in zip(words, words[1:], strict=False):
        if word == LENT and after.isdigit():
            return int(after)
    return None


def lending(records: Iterable[JobRecord]) -> str:
    """The runs on ARs' idle slots apart from the rest, after qacct's own
    lines (nothing if there were none): the preempted runs' wall clock,
    and per AR the slot-hours its lent jobs used, preempted or not."""
    preempted = [0, 0]
    lent: dict[int, float] = {}
    for record in records:
        ar_id = lent_from(record)
        if ar_id is None:
            continue
        lent[ar_id] = lent.get(ar_id, 0.0) + record.ru_wallclock * record.slots / 3600
        if record.failed == PREEMPTED:
            preempted[0] += 1
            preempted[1] += record.ru_wallclock
    if not lent:
        return ""
    lines = [f"PREEMPTED RUNS {preempted[0]}, WALLCLOCK {preempted[1]}",
             f"{'LENT BY AR':<10}{'SLOT HOURS':>14}"]
    lines += [f"{ar_id:>10}{hours:>14.3f}" for ar_id, hours in sorted(lent.items())]
    return "\n".join(lines)


def _memory(amount: float) -> str:
    """qacct's memory figures: bytes scaled to B, KB, MB, GB or TB, 3 decimals."""
    for unit in ("B", "KB", "MB", "GB"):
        if amount < 1024:
            return f"{amount:.3f}{unit}"
        amount /= 1024
    return f"{amount:.3f}TB"


def _when(epoch: int) -> str:
    return format_ctime(epoch) if epoch else "-/-"


def _exit_status(status: int) -> str:
    text = f"{status:<20}"
    if status > 128:
        try:
            text += f" ({signal.strsignal(status - 128)})"
        except ValueError:
            pass
    return text


def detail(record: JobRecord) -> str:
    """qacct -j: one job's record."""
    r = record
    failed = f"{r.failed:<5}" if not r.failed else f"{r.failed:<4}: {FAILED.get(r.failed, '')}"
    padded = [("qname", r.qname), ("hostname", r.hostname), ("group", r.group),
              ("owner", r.owner), ("project", r.project), ("department", r.department),
              ("jobname", r.job_name), ("jobnumber", r.job_number)]
    lines = ["=" * 62] + [f"{name:<13}{value:<20}" for name, value in padded]
    lines += [f"{'taskid':<13}undefined", f"{'account':<13}{r.account:<20}",
              f"{'priority':<13}{r.priority:<20}", f"{'qsub_time':<13}{_when(r.submission_time)}",
              f"{'start_time':<13}{_when(r.start_time)}", f"{'end_time':<13}{_when(r.end_time)}",
              f"{'granted_pe':<13}{r.granted_pe:<20}", f"{'slots':<13}{r.slots:<20}",
              f"{'failed':<13}{failed}", f"{'exit_status':<13}{_exit_status(r.exit_status)}",
              f"{'ru_wallclock':<13}{r.ru_wallclock}s", f"{'ru_utime':<13}{r.ru_utime:.3f}s",
              f"{'ru_stime':<13}{r.ru_stime:.3f}s", f"{'ru_maxrss':<13}{_memory(r.ru_maxrss)}"]
    lines += [f"{name:<13}{_memory(getattr(r, name))}"
              for name in ("ru_ixrss", "ru_ismrss", "ru_idrss", "ru_isrss")]
    lines += [f"{name:<13}{int(getattr(r, name)):<20}"
              for name in ("ru_minflt", "ru_majflt", "ru_nswap", "ru_inblock", "ru_oublock",
                           "ru_msgsnd", "ru_msgrcv", "ru_nsignals", "ru_nvcsw", "ru_nivcsw")]
    lines += [f"{'cpu':<13}{r.cpu:.3f}s", f"{'mem':<13}{_memory(r.mem * 2 ** 30)}s",
              f"{'io':<13}{_memory(r.io * 2 ** 30)}", f"{'iow':<13}{r.iow:.3f}s",
              f"{'maxvmem':<13}{_memory(r.maxvmem)}",
              f"{'arid':<13}{r.arid:<20}" if r.arid else f"{'arid':<13}undefined",
              f"{'ar_sub_time':<13}{_when(r.ar_sub_time)}" if r.arid
              else f"{'ar_sub_time':<13}undefined",
              f"{'category':<13}{r.category}"]
    return "\n".join(lines)
