"""Reporting records in Grid Engine 6.2's format (seed 000, 5.4.3.2) and
their aggregation for plus_account.

Each line is ``time:record_type:fields...``:
  new_ar        submission_time:ar_number:ar_owner
  ar_attribute  event_time:submission_time:ar_number:ar_name:ar_account:
                ar_start_time:ar_end_time:ar_granted_pe:ar_granted_resources
  ar_log        state_change_time:submission_time:ar_number:ar_state:ar_event:ar_message
  ar_acct       ar_termination_time:submission_time:ar_number:ar_qname:ar_hostname:ar_slots
  ar_job        job_end_time:submission_time:ar_number:job_number:job_owner:job_start_time:
                job_hosts  (PluS's own: a job the leader saw run in the AR, below)

A qrsub AR's records are the ones Grid Engine 8.1.9 writes (recorded from
its qmaster): its PE or nothing as ar_granted_pe, its -l requests as
ar_granted_resources, one ar_acct per queue instance it held. A PluS node
AR writes NONE as ar_granted_pe and its hosts as ``host=slots``, which is
how plus_account knows an AR's hosts before its ar_acct records. An AR
with no -A has Grid Engine's account, ``sge``. Readers also take 8.1.9's
own name for ar_attribute, ``ar_attr``, so a Grid Engine reporting file
loads as well.

Standard library only: plus_account reads the file itself, like qacct.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from typing import BinaryIO, Callable, Iterable, Iterator

from overlay.language.limits import shown
from overlay.language.request import DEFAULT_ACCOUNT
from overlay.reporting import filemark

log = logging.getLogger("plus.accounting")

EVENT_START = "START TIME REACHED"
EVENT_UNSATISFIED = "RESOURCES UNSATISFIED"
EVENT_SATISFIED = "RESOURCES SATISFIED"
EVENT_MODIFIED = "MODIFIED"
EVENT_DELETED = "DELETED"
EVENT_TERMINATED = "TERMINATED"
"""ar_log's events, as 8.1.9's qmaster writes them: TERMINATED when the end
time is reached, DELETED at qrdel. MODIFIED is PluS's own (8.1.9 cannot
change an AR); 8.1.9 writes no ar_log record at the grant."""
EVENT_APPROVAL_REQUESTED = "APPROVAL REQUESTED"
EVENT_APPROVED = "APPROVED"
EVENT_DENIED = "DENIED"
"""PluS's own ar_log events of an AR a policy holds for a manager's
approval (state h): asked for at the request, then approved (the AR goes
on in w or r) or denied, by a manager or by approval_timeout (state d)."""
EVENT_ALIASES = {"END TIME REACHED": EVENT_TERMINATED}
"""Events earlier PluS versions wrote for 8.1.9's: an AR's end was
``END TIME REACHED``, so readers of old reporting files count it as the
TERMINATED the seed's ARCo queries look for."""

ACCT = ("qname hostname group owner job_name job_number account priority submission_time "
        "start_time end_time failed exit_status ru_wallclock ru_utime ru_stime ru_maxrss ru_ixrss "
        "ru_ismrss ru_idrss ru_isrss ru_minflt ru_majflt ru_nswap ru_inblock ru_oublock "
        "ru_msgsnd ru_msgrcv ru_nsignals ru_nvcsw ru_nivcsw project department granted_pe slots "
        "task_number cpu mem io category iow pe_taskid maxvmem arid ar_sub_time").split()
"""accounting(5)'s fields in order, as SoGE 8.1.9 and the native batch
system write them after ``time:acct:`` (the core reads the format, it
imports no batch system)."""
_OWNER, _START, _END, _ARID = (ACCT.index(name) for name in ("owner", "start_time", "end_time",
                                                             "arid"))
NODE_AR_PE = "NONE"
"""ar_granted_pe of a PluS node AR, whose granted resources are its hosts."""
AR_JOB = "ar_job"
"""PluS's record of a job the leader saw run in an AR (ar_job_records)."""
RECORD_ALIASES = {"ar_attr": "ar_attribute"}
"""Grid Engine 8.1.9's record names for the seed's."""


def _field(value: object) -> str:
    """Colons separate fields and line breaks records: a colon in free text
    becomes ';' and every control character (\\r, \\n, escapes, and the
    Unicode line separators) a space, so no field can forge a record."""
    text = str(value).replace(":", ";")
    return text if text.isprintable() else "".join(c if c.isprintable() else " " for c in text)


def record_line(time: int, record_type: str, *fields: object) -> str:
    """One record as the reporting file holds it, newline and all."""
    return ":".join([str(int(time)), record_type] + [_field(f) for f in fields]) + "\n"


def new_ar_records(time: int, ar) -> list[str]:
    return [record_line(time, "new_ar", ar.submission_time, ar.id, ar.owner)]


def ar_attribute_records(time: int, ar) -> list[str]:
    if ar.request.by_slots:
        pe = ar.granted_pe
        resources = ar.request.resource_list
    else:
        pe = NODE_AR_PE
        resources = ",".join(f"{a.node}={a.slots}" for a in ar.allocations)
    return [record_line(time, "ar_attribute", time, ar.submission_time, ar.id, ar.name,
                        ar.account or DEFAULT_ACCOUNT, ar.start, ar.end, pe, resources)]


def ar_log_records(time: int, ar, event: str, message: str) -> list[str]:
    return [record_line(time, "ar_log", time, ar.submission_time, ar.id, ar.state.value, event,
                        message)]


def ar_job_records(end: int, submission_time: int, ar_id: int, job_id: str, owner: str,
                   start: int, hosts: Iterable[str]) -> list[str]:
    """A job that ran in an AR on a backend whose accounting the overlay
    does not read (Grid Engine, TORQUE, Slurm): from its start to ``end``
    on ``hosts``, as the leader's passes saw it (overlay.reporting.observedjobs).
    ARCo and qacct have no table for it; plus_account counts it as it
    counts the native batch system's acct records, a node each."""
    return [record_line(end, AR_JOB, end, submission_time, ar_id, job_id, owner, start,
                        ",".join(hosts))]


def ar_acct_records(time: int, ar) -> list[str]:
    """One ar_acct per host (per queue instance of a qrsub AR) the AR held."""
    return [record_line(time, "ar_acct", time, ar.submission_time, ar.id,
                        allocation.queue or f"R{ar.id}", allocation.node, allocation.slots)
            for allocation in ar.allocations]


class ReportingWriter:
    """Appends records to the reporting file, a batch of whole lines per
    write. The daemon's records reach it through the store's outbox
    (overlay.reporting.drain); the record methods write at once, for tools
    and tests that make a reporting file without a store."""

    def __init__(self, path: str, header: bytes = b"") -> None:
        self.path, self.header = path, header
        self._lock = threading.Lock()
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)

    def append(self, data: bytes, before: Callable[[BinaryIO], None] | None = None) -> None:
        """Append ``data`` (whole lines) and fsync it; ``before`` is given the
        open file first (its end is where the data will land), after the
        ``header`` that starts a new (empty) file. OSError if the file
        cannot be written."""
        with self._lock, open(self.path, "ab") as handle:
            if self.header and not os.fstat(handle.fileno()).st_size:
                _write_all(handle, self.header)
            if before is not None:
                before(handle)
            _write_all(handle, data)
            os.fsync(handle.fileno())

    def write(self, time: int, record_type: str, *fields: object) -> None:
        """Append one record; a failure (a full disk) is logged and the record lost."""
        self._append_or_log([record_line(time, record_type, *fields)])

    def _append_or_log(self, lines: list[str]) -> None:
        try:
            self.append("".join(lines).encode("utf-8"))
        except OSError as exc:
            log.error("cannot write the reporting file %s (%s); record lost: %s",
                      self.path, exc.strerror, "".join(lines).rstrip())

    def new_ar(self, time: int, ar) -> None:
        self._append_or_log(new_ar_records(time, ar))

    def ar_attribute(self, time: int, ar) -> None:
        self._append_or_log(ar_attribute_records(time, ar))

    def ar_log(self, time: int, ar, event: str, message: str) -> None:
        self._append_or_log(ar_log_records(time, ar, event, message))

    def ar_acct(self, time: int, ar) -> None:
        self._append_or_log(ar_acct_records(time, ar))


def _write_all(handle: BinaryIO, data: bytes) -> None:
    written = 0
    while written < len(data):
        written += os.write(handle.fileno(), data[written:])


@dataclass(slots=True)
class ARUsage:
    """One AR as the reporting file tells it. ``last_state`` is its latest
    ar_log record's state, w from its new_ar on: a granted AR is waiting,
    and 8.1.9 logs no state at the grant."""

    id: int
    owner: str = ""
    name: str = ""
    start: int = 0
    end: int = 0
    terminated: int | None = None
    last_state: str = ""
    hosts: dict[str, int] = field(default_factory=dict)

    def used_window(self, first: int | None = None, last: int | None = None) -> tuple[int, int]:
        """The part of the AR's window it held, clipped to [first, last)."""
        begin = self.start
        finish = self.end if self.terminated is None else min(self.end, self.terminated)
        if first is not None:
            begin = max(begin, first)
        if last is not None:
            finish = min(finish, last)
        return begin, max(begin, finish)


@dataclass(frozen=True, slots=True)
class JobUse:
    """A job that ran in an AR, as its acct record tells it."""

    owner: str
    ar: int
    start: int
    end: int


def _granted(resources: str) -> dict[str, int]:
    """node=slots,node=slots -> {node: slots}."""
    hosts = {}
    for item in filter(None, resources.split(",")):
        node, _, slots = item.partition("=")
        hosts[node] = int(slots)
    return hosts


class ReportingFormatError(ValueError):
    """A line of the reporting file that is not a record this module knows."""


def _raise(error: ReportingFormatError) -> None:
    raise error


def read_records(lines: Iterable[str], on_error: Callable[[ReportingFormatError], None] = _raise,
                 with_jobs: bool = False,
                 first: int = 1) -> Iterator[tuple[int, int, str, list[str]]]:
    """(line number, time, record_type, fields) of every AR record (and,
    ``with_jobs``, every job's acct record); other record types (queues,
    hosts) are skipped, a malformed record goes to ``on_error`` (by default
    raised) with its line number."""
    for number, line in enumerate(lines, first):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        parts = line.split(":")
        if len(parts) < 2 or not (parts[1].startswith(("new_ar", "ar_")) or
                                  with_jobs and parts[1] == "acct"):
            continue
        if not parts[0].isascii() or not parts[0].isdigit():
            on_error(ReportingFormatError(f"line {number}: the record time "
                                          f"'{shown(parts[0])}' is not a number"))
            continue
        yield number, int(parts[0]), RECORD_ALIASES.get(parts[1], parts[1]), parts[2:]


def charged(ar: ARUsage, begin: int, finish: int, hosts: dict[str, int],
            jobs_of: dict[int, list[JobUse]], first: int, last: int) -> tuple[int, int, int]:
    """An AR's node-seconds within [first, last) apart, for ``hosts`` (those
    ``used`` gave): asked (its window, as reserved), used (its jobs' in the
    acct records, a record one node) and released (asked, less what it held
    from ``begin`` to ``finish`` before it was released or cancelled).
    What it held, ``(finish - begin) * len(hosts)``, is what it is charged."""
    start, end = max(ar.start, first), max(max(ar.start, first), min(ar.end, last))
    asked = (end - start) * len(hosts)
    used_seconds = sum(max(0, min(job.end, end) - max(job.start, start))
                       for job in jobs_of.get(ar.id, ()))
    return asked, used_seconds, max(0, asked - (finish - begin) * len(hosts))


def jobs_by_ar(jobs: Iterable[JobUse]) -> dict[int, list[JobUse]]:
    """The jobs that ran in ARs, by AR id."""
    found: dict[int, list[JobUse]] = {}
    for job in jobs:
        found.setdefault(job.ar, []).append(job)
    return found


def used(ars: Iterable[ARUsage], first: int, last: int, owners: set | None,
         nodes: set | None) -> Iterator[tuple[ARUsage, int, int, dict[str, int]]]:
    """Each AR's use within [first, last): the AR, the part of its window
    held there, and its hosts with their slots, of the ``owners`` and on
    the ``nodes`` asked for (None or empty: all)."""
    for ar in ars:
        if owners and ar.owner not in owners:
            continue
        begin, finish = ar.used_window(first, last)
        hosts = {h: s for h, s in ar.hosts.items() if not nodes or h in nodes}
        if finish > begin and hosts:
            yield ar, begin, finish, hosts


class Collector:
    """collect()'s state, fed a reporting file's lines as they come: the
    daemon keeps one (ReportingFollower), so each question reads only what
    was appended since the last instead of the whole history again."""

    def __init__(self, on_error: Callable[[ReportingFormatError], None] = _raise,
                 with_jobs: bool = False) -> None:
        self.on_error = on_error
        self.ars: dict[int, ARUsage] = {}
        self.finished: list[ARUsage] = []
        self.jobs: list[JobUse] | None = [] if with_jobs else None
        self.lines = 0

    def feed(self, lines: Iterable[str]) -> None:
        """Take the next lines of the file (whole lines, numbered on)."""
        counted = _Counted(lines)
        for number, time, kind, fields in read_records(counted, self.on_error,
                                                        self.jobs is not None, self.lines + 1):
            try:
                self._take(kind, fields)
            except (IndexError, ValueError):
                self.on_error(ReportingFormatError(
                    f"line {number}: malformed {kind} record at time {time}: "
                    f"{shown(':'.join(fields))}"))
        self.lines += counted.count

    def _take(self, kind: str, fields: list[str]) -> None:
        if kind == "acct":
            if len(fields) == len(ACCT) and fields[_ARID] not in ("", "0"):
                use = JobUse(fields[_OWNER], int(fields[_ARID]), int(float(fields[_START])),
                             int(float(fields[_END])))
                if 0 < use.start < use.end:          # a job that never ran used nothing
                    self.jobs.append(use)
            return
        if kind == AR_JOB:
            if self.jobs is not None:
                self._take_ar_job(fields)
            return
        if kind == "new_ar":
            ar_id = int(fields[1])
            if ar_id in self.ars:
                self.finished.append(self.ars[ar_id])
            self.ars[ar_id] = ARUsage(id=ar_id, owner=fields[2], last_state="w")
            return
        # the other AR records start with their event time, then submission_time
        ar_id = int(fields[2])
        ar = self.ars.setdefault(ar_id, ARUsage(id=ar_id))
        if kind == "ar_attribute":
            ar.name, ar.start, ar.end = fields[3], int(fields[5]), int(fields[6])
            if fields[7] == NODE_AR_PE:
                ar.hosts = _granted(fields[8])
        elif kind == "ar_log":
            ar.last_state = fields[3]
        elif kind == "ar_acct":
            if ar.terminated is None:     # the final word on the AR's hosts
                ar.hosts = {}
            ar.terminated = int(fields[0])
            ar.hosts[fields[4]] = ar.hosts.get(fields[4], 0) + int(fields[5])

    def _take_ar_job(self, fields: list[str]) -> None:
        """An ar_job record: the job on each of its hosts, as one acct
        record per host would tell it."""
        end, ar_id, owner, start = int(fields[0]), int(fields[2]), fields[4], int(fields[5])
        hosts = set(filter(None, fields[6].split(",")))
        if 0 < start < end and len(fields) == 7:
            self.jobs.extend(JobUse(owner, ar_id, start, end) for _ in hosts)

    def usages(self) -> list[ARUsage]:
        return self.finished + list(self.ars.values())


class _Counted:
    """Lines, counted as they are read."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines, self.count = lines, 0

    def __iter__(self) -> Iterator[str]:
        for line in self.lines:
            self.count += 1
            yield line


def collect(lines: Iterable[str], on_error: Callable[[ReportingFormatError], None] = _raise,
            jobs: list[JobUse] | None = None) -> list[ARUsage]:
    """Each AR's owner, window, hosts and termination from its records;
    and into ``jobs``, if given, the jobs that ran in ARs. Records of a
    reused AR id start a new AR at its new_ar record. A malformed record
    goes to ``on_error`` (by default raised); plus_account skips it with a
    warning, as qacct does, so one bad line cannot keep every user from
    their figures."""
    collector = Collector(on_error, jobs is not None)
    collector.feed(lines)
    if jobs is not None:
        jobs.extend(collector.jobs)
    return collector.usages()


class ReportingFollower:
    """A reporting file's ARs and jobs in ARs, kept up to date by reading
    only what was appended since the last look (from the start again when
    the file was replaced, truncated or rewritten in place: overlay.reporting.filemark),
    CHUNK bytes at a time. Malformed records are skipped, as plus_account
    skips them."""

    CHUNK = 4 << 20

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._restart()

    def _restart(self) -> None:
        self._collector = Collector(lambda error: None, with_jobs=True)
        self._mark: filemark.Mark | None = None
        self._partial = b""

    def current(self) -> tuple[list[ARUsage], list[JobUse]]:
        with self._lock:
            if not self._read():
                return [], []
            return self._collector.usages(), list(self._collector.jobs)

    def jobs_after(self, seen: int, reading: object) -> tuple[object, list[JobUse]]:
        """The jobs read since the first ``seen`` of ``reading`` (an earlier
        answer's first item), or all of them when the file has been read
        from its start again since: a question costs what was appended."""
        with self._lock:
            self._read()
            if reading is not self._collector:
                seen = 0
            return self._collector, self._collector.jobs[seen:]

    def _read(self) -> bool:
        """Take in what was appended; False when there is no file."""
        try:
            handle = open(self.path, "rb")
        except FileNotFoundError:
            self._restart()
            return False
        with handle:
            if self._mark is not None and not filemark.still(handle, self._mark):
                self._restart()
            offset = self._mark.offset if self._mark else 0
            handle.seek(offset)
            while chunk := handle.read(self.CHUNK):
                offset += len(chunk)
                whole, newline, self._partial = (self._partial + chunk).rpartition(b"\n")
                if newline:
                    self._collector.feed(whole.decode("utf-8", "replace").split("\n"))
            self._mark = filemark.mark(handle, offset)
        return True
