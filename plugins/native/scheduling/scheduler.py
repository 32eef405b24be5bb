"""The native batch system's master: it keeps the jobs, runs the scheduling
passes, starts and watches jobs on their hosts, and accounts for them.

A pass (Grid Engine's scheduling run): poll the hosts for ended jobs,
release held jobs whose dependencies ended, compute priorities, order the
pending jobs (JobSortKey), and let ``scheduling.dispatch`` start them or
reserve for them on ``resources.ClusterResources``, the cluster as the
running jobs, the ARs and the pass's own decisions hold it. Jobs are then
started outside the lock, so commands are served meanwhile.

Passes come every schedule_interval, and sooner after a submission, a
deletion or a job's end (Grid Engine's flush_submit_sec and
flush_finish_sec); hosts are polled every few seconds in between.

The store is the truth for jobs, the hosts' spools for what runs: after a
restart, jobs that were running are found again (or found ended) there,
and so they are by a standby daemon that takes the lead (``lead``: the
jobs are read then, not before). A standby's scheduler runs nothing: what
it shows it reads from the store (``overlay_native.jobview``), where the
leader's passes publish what plus_qstat shows beside the jobs. The leader
asks ``fence`` before it polls, starts or kills, so that one that lost the
lead (stopped, then woken) touches no job, and its writes of jobs are
fenced in the store itself (``overlay_native.jobstore``): each start
follows the job's fenced write as being started (t), and a new leader
adopts a ``t`` job its host runs, and queues again one its host never got.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable, Iterable, NamedTuple

from overlay.api.plugin import (
    DEFAULT_UID_MIN,
    REPORTING,
    JobTransition,
    Outbox,
    ReportingDrain,
    end_fields,
    format_pe_range,
    job_fields,
    order_jobs,
    record_line,
    wildcard_match,
)
from overlay_native import acct
from overlay_native.execution.hosts import ExecutionHosts, Poll
from overlay_native.execution.runners import ExecutionError, Finished, JobSpec
from overlay_native.jobs import MAX_JOB_ID, PENDING_STATES, Job, JobState, Placement
from overlay_native.jobstore import JobStore, StoredJob, shown_of
from overlay_native.jobview import JobView
from overlay_native.resources.cluster import Cluster, ClusterConfig, ClusterQueue
from overlay_native.resources.complexes import parse_value
from overlay_native.resources.matching import RESOURCE_LIMITS
from overlay_native.resources.reserved import Reservations
from overlay_native.resources.timeline import Baseline, ClusterResources
from overlay_native.resources.window import ReservedWindow
from overlay_native.scheduling.dispatch import Policy, dispatch
from overlay_native.scheduling.monitor import Utilization, append_pass
from overlay_native.scheduling.priority import Priority, priorities
from overlay_native.submit import SubmitError, check_reservation, make_job, verify

log = logging.getLogger("plus.native")
POLL_EVERY = 5          # seconds between host polls at most
FLUSH_DELAY = 0.2       # a pass this long after a submission, deletion or job end


@dataclass(frozen=True)
class Submitter:
    """Who submits or deletes, from the socket's peer credentials."""

    user: str
    groups: tuple[str, ...]
    is_manager: bool


class Planned(NamedTuple):
    """A job's resource reservation (-R y): where and when it will start."""

    job: int
    owner: str
    start: int
    placement: Placement


class Outlook(NamedTuple):
    """What a pass would start from now, for an estimate running passes
    ahead (``scheduling.estimate``): copies of the jobs that hold slots
    and of those waiting, the ARs, and the id the next job would get."""

    config: ClusterConfig
    now: int
    running: list[Job]
    waiting: list[Job]
    windows: list[ReservedWindow]
    unavailable: dict[tuple[str, str], str]
    reports: dict[str, dict[str, float]]
    next_id: int


class HostsShown(NamedTuple):
    """What plus_qstat -f shows beside the jobs, as the leader's passes
    found it: the hosts' load reports, those it cannot reach, and the
    started ARs' windows (start, end, slots per host)."""

    reports: dict[str, dict[str, float]]
    unreachable: dict[str, str]
    started: list[tuple[int, int, dict[str, int]]]

    def reserved(self, now: int) -> dict[str, int]:
        """Slots held on each host by the ARs whose window is open at ``now``."""
        reserved: dict[str, int] = {}
        for start, end, slots in self.started:
            if start <= now < end:
                for host, count in slots.items():
                    reserved[host] = reserved.get(host, 0) + count
        return reserved


_HOSTS = "hosts"
"""The name HostsShown is published under."""


class Scheduler:
    def __init__(self, cluster: Cluster, store: JobStore, hosts: ExecutionHosts,
                 accounting_file: str, schedule_file: str, duration_offset: int,
                 clock: Callable[[], float] = time.time,
                 reporting: bool = False, min_uid: int = DEFAULT_UID_MIN) -> None:
        self.cluster, self.store, self.hosts = cluster, store, hosts
        self.min_uid = min_uid              # no job runs as an account below it, nor as root
        self.schedule_file = schedule_file
        self.accounting = ReportingDrain(Outbox(store.engine, store.url, acct.TARGET),
                                         accounting_file, lambda: self.fence(),
                                         acct.HEADER.encode())
        """The accounting file's records, from the store's outbox, while this daemon leads."""
        self.reporting = reporting              # acct records into the store's reporting outbox
        self.offset, self.clock = duration_offset, clock
        self.lock = threading.RLock()           # the jobs, for passes and commands
        self._passing = threading.Lock()        # one pass (or poll) at a time
        self.jobs: dict[int, Job] = {}
        self.windows = Reservations()
        self._windows_changed = threading.Condition(self.lock)
        self.unreachable: dict[str, str] = {}
        self.reports: dict[str, dict[str, float]] = {}   # host -> load_avg, mem_free
        self.priority: dict[int, Priority] = {}
        self.baseline = Baseline()             # the passes' own: one pass at a time
        self._wake = threading.Event()
        self._stop = threading.Event()
        self.standing_by = False
        """Another daemon on the store leads and runs the jobs: read them from the store."""
        self.fence: Callable[[], bool] = lambda: True
        """Whether this daemon still leads (its lease), asked before acting on jobs."""
        self.view: JobView | None = JobView(store, self._restored_all)
        """The jobs as the store holds them, until this scheduler leads."""
        self._thread: threading.Thread | None = None
        self._last_pass = 0.0
        self._planned: list[Planned] = []
        self.last_id = 0                           # the id the last submission got
        self._starting: dict[int, Job] = {}        # the pass's starts, not yet recorded (t)
        self._settling: set[int] = set()           # requeued since the last pass's poll
        self._published: dict[object, str] = {}    # what the store shows, by job id and _HOSTS
        hosts.sync(cluster.config())

    def lead(self, fence: Callable[[], bool]) -> None:
        """This daemon leads (``fence`` says until when). The first time, it
        takes the jobs as the store holds them (after taking the store's
        next epoch, which fences off any daemon that led before); running
        ones are found again in their hosts' spools at the first poll."""
        with self.lock:
            self.fence = fence
            if self.view is None:
                return
            if self.store.shared:
                self.store.take_epoch()
            self.jobs = {job.id: job for job in self.view.read()}
            self._published = {job.id: shown_of(job) for job in self.jobs.values()}
            self._published[_HOSTS] = self.view.published.get(_HOSTS, "")
            self.view, self.standing_by = None, False

    def stand_by(self) -> None:
        """Another daemon leads (from the start, or since this one lost its
        lease): read the jobs from the store again, keep none of its own;
        taking the lead later reads them afresh under a new epoch."""
        with self.lock:
            self.standing_by = True
            if self.view is None:
                self.view = JobView(self.store, self._restored_all)
                self.jobs = {}

    def _restored_all(self, stored: list[StoredJob]) -> list[Job]:
        config = self.cluster.config()
        return [self._restored(job, config) for job in stored]

    def _restored(self, stored: StoredJob, config: ClusterConfig) -> Job:
        """A stored job, checked again and its requests parsed against
        today's complexes; one that no longer passes (or was stored before
        a check it fails) waits in error state (Eqw) saying why."""
        try:
            job = make_job(config, stored.id, stored.owner, stored.groups, stored.submit_time,
                           stored.submission, is_manager=True)
        except Exception as error:    # whatever a stored job holds, the others are restored
            return Job(stored.id, stored.owner, stored.groups[0] if stored.groups else "",
                       stored.groups, stored.submit_time, stored.submission, {}, {},
                       JobState.ERROR, error=acct.one_line(f"after a restart: {_why(error)}"))
        job.state, job.placement, job.start_time = stored.state, stored.placement, stored.start_time
        job.error, job.deleting = stored.error, stored.deleting
        if stored.shown:
            job.priority, job.urgency = stored.shown["priority"], stored.shown["urgency"]
            job.reasons = tuple(stored.shown["reasons"])
        return job

    def now(self) -> int:
        return int(self.clock())

    # -- the thread ------------------------------------------------------------------------

    def start(self) -> None:
        """Run passes and write accounting from now on (again, after
        standing by: one thread each)."""
        self.accounting.start()
        if self._thread is not None and self._thread.is_alive():
            return
        self._thread = threading.Thread(target=self._loop, name="native-scheduler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.accounting.stop()
        self.hosts.close()

    def wake(self) -> None:
        """Ask for a pass soon (a submission, a deletion, an AR change)."""
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            interval = self.cluster.config().scheduler.schedule_interval
            due = self._last_pass + interval
            woken = self._wake.wait(timeout=max(0.0, min(due - time.monotonic(), POLL_EVERY)))
            if self._stop.is_set():
                return
            if woken:
                time.sleep(FLUSH_DELAY)    # let a burst of submissions arrive
                self._wake.clear()
            try:
                if self.standing_by:
                    self.poll()            # another daemon leads: account what ends, start none
                elif woken or time.monotonic() >= due:
                    self.run_pass()
                elif self.poll():
                    self.run_pass()        # a job ended: its resources are free now
            except Exception:
                log.exception("scheduling pass failed; the next one retries")

    # -- polling the hosts -------------------------------------------------------------------

    def poll(self) -> bool:
        """Ask the hosts what ended; True if some job did."""
        with self._passing:
            if not self.fence():
                return False
            result = self.hosts.poll(self.store.epoch)
            with self.lock:
                ended = self._take(result)
                self._publish_hosts()
                return ended

    def _take(self, result: Poll) -> bool:
        now = self.now()
        self.unreachable = result.unreachable
        self.reports.update(result.reports)
        ended = False
        for host, finished in result.finished:
            job = self.jobs.get(_job_id(finished.job_id))
            if job is not None and job.placement is not None and job.placement.master[1] == host:
                self._ended(job, finished, now)     # if it raises, the next poll finds the end again
                ended = True
            self.hosts.taken(host, finished.job_id)
        for job in list(self.jobs.values()):
            if job.state not in (JobState.RUNNING, JobState.TRANSFERRING) or job.placement is None:
                continue
            host = job.placement.master[1]
            if host not in result.running or host in result.unreachable:
                continue
            if str(job.id) not in result.running[host]:
                self._lost(job, host, now)
                ended = True
            elif job.state == JobState.TRANSFERRING:
                self._running(job)    # started by the leader before this one: adopted
        return ended

    def _lost(self, job: Job, host: str, now: int) -> None:
        """A job its host knows nothing of: a start that never happened goes
        back to the queue; a running one ended unseen (failed 100)."""
        if job.state == JobState.TRANSFERRING:
            log.warning("job %d: its start on %s left no trace; queued again", job.id, host)
            job.state, job.placement, job.start_time = JobState.QUEUED, None, None
            self.store.save(job)
            return
        log.warning("job %d: %s no longer knows it; recorded as ended", job.id, host)
        self._ended(job, Finished(str(job.id), None, None, "lost", job.start_time, now), now)

    # -- ending jobs -------------------------------------------------------------------------

    def _ended(self, job: Job, finished: Finished, now: int) -> None:
        """Accounting for a job that ran (or failed to start); a job that
        could not be started stays in error state (Eqw) until deleted. The
        record goes to the accounting file, and to the reporting file too
        (reporting(5)'s acct: time, type, the accounting fields) for
        plus_dbwriter, through the store's outbox, which the leader drains
        into them: put there in the job's own write, so a crash leaves the
        job ended and its records, or neither (and the next leader accounts
        it). Memory follows once the store committed: a store that fails
        (or a fenced leader) leaves the job as it was, for the next poll to
        account. A job of an AR that ran has its end's event in the same
        write (``_end_events``)."""
        record = self._record(job, finished, now)
        events = _end_events(job, finished, now)
        reports = {acct.TARGET: [record.line() + "\n"]}
        if self.reporting:
            reports[REPORTING] = [record_line(now, "acct", *record.line().split(":"))]
        if job.reclaimed and job.submission.preemptible == "requeue" and not job.deleting:
            queued = replace(job, state=JobState.QUEUED, placement=None, start_time=None)
            self.store.save(queued, reports, events)
            job.state, job.placement, job.start_time = queued.state, None, None
            self._settling.add(job.id)    # its old spool goes at the next poll: then it may run
            log.info("job %d requeued after its preemption", job.id)
        elif finished.failed and not job.deleting:
            host = job.placement.master[1] if job.placement else "?"
            when = time.strftime("%m/%d/%Y %H:%M:%S", time.localtime(now))
            failed = replace(job, state=JobState.ERROR, placement=None, start_time=None,
                             error=acct.one_line(f"{when} [{host}]: {finished.reason}"))
            self.store.save(failed, reports, events)
            job.state, job.placement, job.start_time, job.error = \
                failed.state, failed.placement, failed.start_time, failed.error
        else:
            self.store.remove(job.id, reports, events)
            self.jobs.pop(job.id, None)
        self.accounting.wake()

    def _record(self, job: Job, finished: Finished, now: int) -> acct.JobRecord:
        placement = job.placement
        queue, host = placement.master if placement else ("NONE", "NONE")
        started = finished.start is not None and not finished.failed
        start = int(finished.start) if started else 0
        end = int(finished.end if finished.end is not None else now) if started else 0
        usage = finished.rusage
        if job.reclaimed:
            failed = acct.PREEMPTED
        elif finished.failed:
            failed = finished.failed
        elif finished.reason == "h_rt exceeded":
            failed = 37
        elif finished.reason or finished.signal is not None:
            failed = 100
        else:
            failed = 0
        return acct.JobRecord(
            qname=queue, hostname=host, group=job.group, owner=job.owner, job_name=job.name,
            job_number=job.id, account=job.submission.account,
            submission_time=job.submit_time, start_time=start, end_time=end, failed=failed,
            exit_status=0 if finished.failed else finished.exit_code or 0,
            ru_wallclock=max(end - start, 0),
            ru_utime=usage.get("utime", 0.0), ru_stime=usage.get("stime", 0.0),
            ru_maxrss=usage.get("maxrss", 0.0), ru_minflt=int(usage.get("minflt", 0)),
            ru_majflt=int(usage.get("majflt", 0)), ru_nswap=int(usage.get("nswap", 0)),
            ru_inblock=usage.get("inblock", 0.0), ru_oublock=int(usage.get("oublock", 0)),
            ru_msgsnd=int(usage.get("msgsnd", 0)), ru_msgrcv=int(usage.get("msgrcv", 0)),
            ru_nsignals=int(usage.get("nsignals", 0)), ru_nvcsw=int(usage.get("nvcsw", 0)),
            ru_nivcsw=int(usage.get("nivcsw", 0)),
            granted_pe=placement.pe if placement and placement.pe else "NONE",
            slots=placement.slots if placement else 1,
            cpu=usage.get("utime", 0.0) + usage.get("stime", 0.0),
            category=category(job, placement.lent if placement else None),
            arid=job.ar or 0, ar_sub_time=job.submission.ar_submitted)

    # -- operations from the commands ------------------------------------------------------------

    def submit(self, who: Submitter, submission) -> dict:
        """plus_qsub: accept (or verify, -w v) a job; -now y jobs run now or not at all."""
        with self.lock:
            config, now = self.cluster.config(), self.now()
            job = make_job(config, 0, who.user, who.groups, now, submission, who.is_manager)
            if job.ar is not None:
                check_reservation(job, self.windows.get(job.ar), now, self.offset)
            mode = "e" if job.ar is not None and submission.verify == "n" else submission.verify
            reasons = verify(config, job, now, self.offset, self.windows) if mode != "n" else []
            if mode == "v":
                return {"verified": not reasons, "reasons": reasons}
            if reasons and mode == "e":
                raise SubmitError("\n".join(reasons + ["error: no suitable queues"]))
            holds = self._holds(job)
            window = self.windows.get(job.ar) if job.ar is not None else None
            job.submission = replace(job.submission, hold_jids=holds,
                                     ar_submitted=window.submitted if window else 0)
            job.state = JobState.HELD if holds or submission.hold else JobState.QUEUED
            self.store.create(job)
            self.jobs[job.id] = job
            self.last_id = job.id
            log.info("job %d (%s) submitted by %s", job.id, job.name, who.user)
        if submission.now:
            self.run_pass()
            with self.lock:
                if job.state in PENDING_STATES:
                    self.store.remove(job.id)
                    self.jobs.pop(job.id, None)
                    raise SubmitError("Your qsub request could not be scheduled; try again later.")
        else:
            self.wake()
        return {"id": job.id, "name": job.name, "warnings": reasons and
                ["warning: no suitable queues"] + reasons}

    def _holds(self, job: Job) -> tuple[str, ...]:
        """-hold_jid: ids of the existing jobs it names (by id, or by name
        among the owner's jobs, wildcards allowed); unknown ones are ignored,
        as Grid Engine does."""
        found = []
        for reference in job.submission.hold_jids:
            for other in self.jobs.values():
                if (reference == str(other.id) or (other.owner == job.owner and
                                                   wildcard_match(other.name, reference))) \
                        and str(other.id) not in found:
                    found.append(str(other.id))
        return tuple(found)

    def delete(self, who: Submitter, references: Iterable[str] = (),
               users: Iterable[str] = ()) -> list[str]:
        """plus_qdel: jobs by id or name (wildcards), or every job of users
        ('*' for all); Grid Engine's answer for each."""
        messages, kills = [], []
        with self.lock:
            targets: list[Job] = []
            for reference in references:
                matched = self._named(reference, messages)
                targets += [j for j in matched if j not in targets]
            for user in users:
                targets += [j for j in self.jobs.values()
                            if (user == "*" or j.owner == user) and j not in targets]
            for job in sorted(targets, key=lambda j: j.id):
                if job.owner != who.user and not who.is_manager:
                    messages.append(f'{who.user} - you do not have the necessary privileges to '
                                    f'delete the job "{job.id}"')
                    continue
                if job.state in PENDING_STATES:
                    self._forget(job)
                    messages.append(f"{who.user} has deleted job {job.id}")
                else:
                    job.deleting = True
                    self.store.save(job)
                    kills.append(job)
                    messages.append(f"{who.user} has registered the job {job.id} for deletion")
        self._kill(kills)
        self.wake()
        return messages

    def hold(self, who: Submitter, references: Iterable[str], hold: bool) -> list[str]:
        """plus_qhold (``hold``) and plus_qrls: set or clear pending jobs'
        user hold; Grid Engine's answer for each."""
        messages = []
        with self.lock:
            for reference in references:
                for job in sorted(self._named(reference, messages), key=lambda j: j.id):
                    if job.owner != who.user and not who.is_manager:
                        messages.append(f'{who.user} - you do not have the necessary privileges '
                                        f'to modify the job "{job.id}"')
                    elif job.state not in (JobState.QUEUED, JobState.HELD):
                        messages.append(f"job {job.id} is not pending (state {job.state_letters})"
                                        "; only pending jobs can be held or released")
                    else:
                        job.submission = replace(job.submission, hold=hold)
                        if hold:
                            job.state = JobState.HELD
                        self.store.save(job)
                        messages.append(f"modified hold of job {job.id}")
        self.wake()
        return messages

    def _named(self, reference: str, messages: list[str]) -> list[Job]:
        """The jobs a command names by id or name (wildcards allowed); none
        adds Grid Engine's denial to ``messages``."""
        matched = [job for job in self.jobs.values()
                   if reference == str(job.id) or wildcard_match(job.name, reference)]
        if not matched:
            messages.append(f'denied: job "{reference}" does not exist')
        return matched

    def _forget(self, job: Job) -> None:
        self.store.remove(job.id)
        self.jobs.pop(job.id, None)

    def _kill(self, jobs: Iterable[Job]) -> None:
        jobs = [job for job in jobs if job.placement is not None]
        if not jobs or not self.fence():
            return
        for job in jobs:
            try:
                self.hosts.kill(job.placement.master[1], str(job.id))
            except ExecutionError as error:
                log.warning("job %d: cannot ask its host to end it (retried next pass): %s",
                            job.id, error)

    # -- what the backend and the commands read ------------------------------------------------

    def ars_with_jobs(self) -> set[int]:
        """The ARs some job is still in, pending, running or being ended."""
        return {job.ar for job in self._current() if job.ar is not None}

    def running_jobs(self) -> list[Job]:
        """Copies of the jobs that hold slots now (started or being started),
        for readers outside the scheduler's lock."""
        with self.lock:    # a job the pass is starting is either in _starting or t
            current, starting = self._current(), [copy.copy(j) for j in self._starting.values()]
        return [job for job in current if job.placement
                and job.state in (JobState.RUNNING, JobState.TRANSFERRING)] + starting

    def _current(self) -> list[Job]:
        """Copies of every job: the store's until this scheduler leads (at a
        standby, where no scheduler runs)."""
        if self.view is not None:
            return self.view.read()
        with self.lock:
            return [copy.copy(job) for job in self.jobs.values()]

    def planned(self) -> list[Planned]:
        """The resource reservations (-R y) the last pass planned: start and
        placement of each job that could not start yet."""
        with self.lock:
            return list(self._planned)

    def outlook(self) -> Outlook:
        """The leader's jobs, ARs and hosts as the next pass would find them."""
        with self.lock:
            config, running = self.cluster.config(), self.running_jobs()
            waiting = [copy.copy(job) for job in self.jobs.values()
                       if job.state in (JobState.QUEUED, JobState.HELD) and not job.deleting]
            last = max([self.last_id, *self.jobs], default=0)
            return Outlook(config, self.now(), running, waiting, list(self.windows.values()),
                           self._unavailable(config), dict(self.reports),
                           last % MAX_JOB_ID + 1)

    def jobs_by_priority(self) -> list[Job]:
        """Copies of every job, highest priority first (qstat's order)."""
        return sorted(self._current(), key=lambda j: (-j.priority, j.id))

    def hosts_shown(self) -> HostsShown:
        """What plus_qstat -f shows beside the jobs: the leader's own figures,
        or at a standby what the leader last published."""
        if self.view is not None:
            self.view.read()
            published = self.view.published.get(_HOSTS)
            return HostsShown(*json.loads(published)) if published else HostsShown({}, {}, [])
        with self.lock:
            return self._hosts()

    def _hosts(self) -> HostsShown:
        return HostsShown(dict(self.reports), dict(self.unreachable),
                          [(w.start, w.end, dict(w.slots)) for w in self.windows.started()])

    def _publish_hosts(self) -> None:
        """Publish what plus_qstat -f shows beside the jobs, where it changed
        (on a shared store only: on SQLite no other daemon reads it)."""
        encoded = json.dumps(self._hosts())
        if self.store.shared and self._published.get(_HOSTS) != encoded:
            self.store.publish(_HOSTS, encoded)
            self._published[_HOSTS] = encoded

    def _publish_jobs(self) -> None:
        """Publish what the pass found of each job (priority, urgency,
        reasons) where it changed, in one write."""
        if not self.store.shared:
            return
        shown = {job.id: shown_of(job) for job in self.jobs.values()}
        changed = [self.jobs[job_id] for job_id, value in shown.items()
                   if self._published.get(job_id) != value]
        if changed:
            self.store.show(changed)
        self._published = {**shown, _HOSTS: self._published.get(_HOSTS, "")}

    # -- advance reservations ------------------------------------------------------------------

    def set_windows(self, windows: Iterable[ReservedWindow], complete: bool = False) -> None:
        """The ARs as the reservation core holds them, changed AR by AR; with
        ``complete``, the whole list: jobs of ARs no longer in it are
        deleted. A change asks for a pass while jobs wait (an AR that opened
        lets its jobs start); without waiting jobs a pass would decide nothing."""
        with self.lock:
            if complete:
                changed = self.windows.replace_all(windows)
                gone = [j for j in self.jobs.values() if j.ar is not None and j.ar not in self.windows]
            else:
                changed, gone = self.windows.put_all(windows), []
            wanted = changed and any(j.state == JobState.QUEUED for j in self.jobs.values())
            if changed:
                self._publish_hosts()
                self._windows_changed.notify_all()
        if gone:
            self._delete_jobs(gone, "its advance reservation is gone")
        if wanted:
            self.wake()

    def await_window(self, ar_id: int, seconds: float) -> None:
        """Until AR ``ar_id``'s window is held, ``seconds`` at most: a use
        case answers before the enforcer's thread has handed the AR over,
        so ``plus_qsub -ar N`` right after ``plus_reserve`` (a script's next
        line) waits for it rather than being told the AR does not exist."""
        with self._windows_changed:
            self._windows_changed.wait_for(lambda: ar_id in self.windows, timeout=seconds)

    def reservation_over(self, ar_id: int) -> None:
        """An AR ended, was cancelled or destroyed: all its jobs, pending or
        running, are deleted (seed 000, 5.2.2.3)."""
        with self.lock:
            if self.windows.remove(ar_id):
                self._publish_hosts()
            jobs = [j for j in self.jobs.values() if j.ar == ar_id]
        self._delete_jobs(jobs, f"advance reservation {ar_id} ended")

    def _delete_jobs(self, jobs: list[Job], why: str) -> None:
        kills = []
        with self.lock:
            for job in jobs:
                if job.id not in self.jobs:
                    continue
                log.info("job %d deleted: %s", job.id, why)
                if job.state in PENDING_STATES:
                    self._forget(job)
                elif not job.deleting:
                    job.deleting = True
                    self.store.save(job)
                    kills.append(job)
        self._kill(kills)

    # -- the pass ---------------------------------------------------------------------------------

    def run_pass(self) -> None:
        with self._passing:
            if not self.fence():
                return
            began, cpu = time.perf_counter(), time.thread_time()
            with self.lock:
                self._settling.clear()     # this poll removes the spools of their last runs
            result = self.hosts.poll(self.store.epoch)
            with self.lock:
                self._take(result)
                starts = self._decide()
                self._publish_jobs()
                self._publish_hosts()
            self._start(starts)
            self._last_pass = time.monotonic()
            if self._settling:
                self.wake()    # requeued jobs may run once the next poll removed their spools
            log.debug("scheduling pass: %d jobs, %d ARs, %.1f ms CPU, %.1f ms wall", len(self.jobs),
                      len(self.windows), (time.thread_time() - cpu) * 1000,
                      (time.perf_counter() - began) * 1000)

    def _decide(self) -> list[tuple[Job, Placement]]:
        config, now = self.cluster.config(), self.now()
        self.hosts.sync(config)
        self._kill([j for j in self.jobs.values() if j.deleting or j.reclaimed])    # again, if missed
        for job in self.jobs.values():
            if job.state == JobState.HELD and not job.submission.hold and \
                    not any(int(h) in self.jobs for h in job.submission.hold_jids):
                job.state = JobState.QUEUED
                self.store.save(job)
        waiting = [j for j in self.jobs.values() if j.state == JobState.QUEUED and not j.deleting
                   and j.id not in self._settling]
        for job in self.jobs.values():
            job.reasons = state_reason(job, now)
        eligible = [j for j in waiting if not j.reasons]
        self.priority = priorities(eligible, config.table, config.scheduler, now)
        for job in self.jobs.values():
            found = self.priority.get(job.id)
            job.urgency = found.urgency if found else None
            if found:
                job.priority = found.prio
        ordered = order_jobs(eligible, config.scheduler.job_order)
        resources = ClusterResources(config, now, self.offset, self.reports, self._unavailable(config),
                                     self.windows, self.baseline)
        running = [j for j in self.jobs.values()
                   if j.state in (JobState.RUNNING, JobState.TRANSFERRING) and j.placement
                   and not j.reclaimed]     # a preempted run's slots are its AR's again
        lent = [j for j in running if self._lender(j) is not None]
        resources.book_running((job, job.placement, job.start_time)
                               for job in running if job not in lent)
        resources.lend((job, job.placement, job.start_time) for job in lent)
        decisions = dispatch(ordered, resources, now, Policy(config.scheduler.max_reservation))
        self._reclaim(resources, lent, now)
        started = {job.id for job, _ in decisions.started}
        decisions.started += lend(ordered, started, resources, now)
        started = {job.id for job, _ in decisions.started}
        for job in eligible:
            if job.id not in started:    # not even tried once the cluster was full
                job.reasons = tuple(resources.reasons.get(
                    job.id, ("All queues dropped because of overload or full",)))
        for job, _ in decisions.started:
            job.reasons = ()
        self._planned = [Planned(job.id, job.owner, start, placement)
                         for job, start, placement in decisions.reserved]
        if config.scheduler.monitor:
            uses = [Utilization(j.id, "RUNNING", j.start_time, j.placement.duration,
                                resources.debits(j, j.placement)) for j in running]
            uses += [Utilization(j.id, "STARTING", now, p.duration, resources.debits(j, p))
                     for j, p in decisions.started]
            uses += [Utilization(j.id, "RESERVING", start, p.duration, resources.debits(j, p))
                     for j, start, p in decisions.reserved]
            append_pass(self.schedule_file, uses)
        self._starting = {job.id: replace(job, state=JobState.TRANSFERRING, placement=placement,
                                          start_time=now)
                          for job, placement in decisions.started}
        return list(self._starting.values())

    def _lender(self, job: Job) -> ReservedWindow | None:
        """The AR whose idle slots the running job was lent, while that AR
        still holds every one of them (after its end, a cancellation or a
        move, the job holds its slots as any other)."""
        lent = job.placement.lent if job.placement else None
        window = self.windows.get(lent) if lent is not None else None
        if window is None or window.state not in ("r", "E") or \
                any(window.slots.get(host, 0) < n for host, n in job.placement.per_host.items()):
            return None
        return window

    def _reclaim(self, resources: ClusterResources, lent: list[Job], now: int) -> None:
        """Where this pass gave an AR's own jobs slots that lent jobs hold,
        preempt lent jobs there, the latest started first (the least work
        lost), until the AR's jobs fit: each is marked as reclaimed with
        its job.preempted event in one write, and asked to end; its end
        requeues it or ends it (``_ended``)."""
        over = resources.overdrawn()
        preempted = []
        for job in sorted(lent, key=lambda j: (-(j.start_time or 0), -j.id)):
            ar_id, per_host = job.placement.lent, job.placement.per_host
            if not any(over.get((ar_id, host), 0) > 0 for host in per_host):
                continue
            for host, slots in per_host.items():
                over[(ar_id, host)] = over.get((ar_id, host), 0) - slots
            resources.give_back(ar_id, job.placement)
            reclaimed = replace(job.placement, reclaimed=True)
            self.store.save(replace(job, placement=reclaimed), events=[JobTransition(
                True, now, ar_id, job_fields(job.id, job.owner, reclaimed.hosts, job.start_time)
                | {"preemptible": job.submission.preemptible}, preempted=True)])
            job.placement = reclaimed
            log.info("job %d preempted (%s): advance reservation %d wants its slots back",
                     job.id, job.submission.preemptible, ar_id)
            preempted.append(job)
        self._kill(preempted)

    def _unavailable(self, config: ClusterConfig) -> dict[tuple[str, str], str]:
        """Instances on hosts that run no jobs or cannot be reached."""
        return {(queue.name, host): "temporarily not available"
                for queue in config.queues.values() for host in queue.hosts
                if not self.hosts.runs_jobs(host) or host in self.unreachable}

    def _start(self, starts: list[Job]) -> None:
        """Start the pass's jobs, outside the lock (a start takes a command
        on the host); a job that cannot be started goes to Eqw. Each is
        recorded as being started (t, with its placement) just before its
        start, under the jobs' epoch fence: a leader another took over from
        starts nothing (``Fenced``), and the new leader, finding a ``t`` job
        in no spool, knows it was not started and queues it again."""
        config = self.cluster.config()
        try:
            if starts and not self.fence():
                return
            for starting in starts:
                job = self._starting_recorded(starting)
                if job is None:
                    continue
                host = job.placement.master[1]
                try:
                    self.hosts.start(host, self._spec(job, job.placement, config), self.store.epoch)
                except Exception as error:    # one job's data or host: the others still start
                    self._not_started(job, host, error)
                    continue
                with self.lock:
                    if job.id in self.jobs and job.state == JobState.TRANSFERRING:
                        self._running(job)
                        log.info("job %d started on %s", job.id, host)
                    if job.deleting:
                        self._kill([job])
        finally:
            with self.lock:
                self._starting = {}

    def _starting_recorded(self, starting: Job) -> Job | None:
        """The job, recorded in the store as being started by this leader
        (raises ``Fenced`` if another took the lead); None if it was
        deleted or changed since the pass decided."""
        with self.lock:
            job = self.jobs.get(starting.id)
            self._starting.pop(starting.id, None)
            if job is None or job.state != JobState.QUEUED or job.deleting:
                return None
            self.store.save(starting)
            job.state, job.placement, job.start_time = \
                starting.state, starting.placement, starting.start_time
            return job

    def _running(self, job: Job) -> None:
        """A job being started (t) that runs on its host now; a job of an
        AR has its start's event written with it, once: only this write
        takes a job from t to r."""
        self.store.save(replace(job, state=JobState.RUNNING), events=_start_events(job))
        job.state = JobState.RUNNING

    def _not_started(self, job: Job, host: str, error: Exception) -> None:
        """A job whose start failed: Eqw with the reason, and accounted
        (failed 1); any failure but the host's refusal is logged with its
        traceback, to find where it came from."""
        with self.lock:
            log.warning("job %d cannot be started on %s: %s", job.id, host, _why(error),
                        exc_info=not isinstance(error, ExecutionError))
            self._ended(job, Finished(str(job.id), None, None, _why(error), None, None,
                                      failed=1), self.now())

    def _spec(self, job: Job, placement: Placement, config: ClusterConfig) -> JobSpec:
        spec = job.submission
        queue = config.queues[placement.master[0]]
        env = dict(spec.env)
        if placement.pe:
            env["PE"] = placement.pe
        if job.ar is not None:
            env["SGE_AR"] = str(job.ar)
        per_host = placement.per_host
        limits = self._limits(job, queue, config, per_host[placement.master[1]])
        h_rt = _lower(placement.h_rt, limits.pop("h_rt", None))
        return JobSpec(
            id=str(job.id), name=job.name, owner=job.owner, command=list(spec.command),
            script=spec.script, cwd=spec.cwd, env=env,
            shell=spec.shell or (queue.shell if spec.script is not None else None),
            stdout=spec.stdout, stderr=spec.stderr, merge=spec.merge, h_rt=h_rt,
            s_rt=limits.pop("s_rt", None), notify=queue.notify, slots=placement.slots,
            queue=queue.name, pe_hosts=list(per_host.items()) if placement.pe else [],
            limits=limits, min_uid=self.min_uid)

    @staticmethod
    def _limits(job: Job, queue: ClusterQueue, config: ClusterConfig,
                slots: int) -> dict[str, float]:
        """queue_conf(5)'s limits for the job: the lower of its request and
        its queue's, INFINITY left out; memory per slot, times the slots the
        job has on its master host."""
        limits = {}
        for name in RESOURCE_LIMITS:
            values = [job.limit(name)]
            if name in queue.limits:
                values.append(float(parse_value(config.table.find(name).type, queue.limits[name])))
            finite = [v for v in values if v is not None and not math.isinf(v)]
            if finite:
                scale = slots if name in ("s_vmem", "h_vmem", "s_data", "h_data") else 1
                limits[name] = min(finite) * scale
        return limits


def enforced_h_rt(job: Job, placement: Placement, config: ClusterConfig) -> float | None:
    """The run time limit the job's host enforces: the lower of its own
    (an AR job's, as placed) and its master queue's h_rt."""
    queue = config.queues.get(placement.master[0])
    if queue is None:
        return placement.h_rt
    limits = Scheduler._limits(job, queue, config, placement.per_host[placement.master[1]])
    return _lower(placement.h_rt, limits.get("h_rt"))


def _start_events(job: Job) -> list[JobTransition]:
    """The event of an AR's job starting (none for a job outside ARs)."""
    if job.ar is None or job.placement is None:
        return []
    return [JobTransition(False, int(job.start_time or 0), job.ar,
                          job_fields(job.id, job.owner, job.placement.hosts, job.start_time))]


def _end_events(job: Job, finished: Finished, now: int) -> list[JobTransition]:
    """The event of an AR's job ending, if it ran (one whose start failed
    never started); and its start's first if its run was never recorded
    (it ended while still t: the write as running failed, or the leader
    stopped before it)."""
    recorded = job.state == JobState.RUNNING
    if job.ar is None or job.placement is None or not (
            recorded or (finished.start is not None and not finished.failed)):
        return []
    end = int(finished.end) if finished.end is not None else now
    ended = JobTransition(True, end, job.ar,
                          job_fields(job.id, job.owner, job.placement.hosts, job.start_time)
                          | end_fields(end, finished.exit_code, _how(job, finished)))
    return [ended] if recorded else [*_start_events(job), ended]


def _how(job: Job, finished: Finished) -> str:
    """How a job ended, in a job event's words (overlay.events.jobs.HOWS)."""
    if job.deleting:
        return "deleted"
    if finished.reason in ("h_rt exceeded", "s_rt exceeded"):
        return "limit"
    if finished.reason in ("lost", "shepherd lost"):
        return "lost"
    if finished.reason == "killed" or finished.signal is not None:
        return "signalled"
    return "failed" if finished.reason or finished.failed else "exited"


def _lower(*limits: float | None) -> float | None:
    return min((v for v in limits if v is not None), default=None)


def _why(error: Exception) -> str:
    return str(error) or type(error).__name__


def _job_id(text: str) -> int:
    return int(text) if text.isdigit() else -1


def state_reason(job: Job, now: int) -> tuple[str, ...]:
    """Why a job is not even considered in this pass."""
    if job.state == JobState.ERROR:
        return ("Job is in error state",)
    if job.state == JobState.HELD:
        return ("job dropped because of user hold",) if job.submission.hold else \
            ("job dropped because of job dependencies",)
    if job.submission.start_after is not None and job.submission.start_after > now:
        return ("execution time not reached",)
    return ()


def lend(jobs: Iterable[Job], started: set[int], resources: ClusterResources,
         now: int) -> list[tuple[Job, Placement]]:
    """The preemptible jobs that did not start on free slots, in order,
    placed on open ARs' idle slots where they fit (after the ARs' own
    jobs took theirs, so none is lent only to be preempted at once)."""
    return [(job, placement) for job in jobs
            if job.submission.preemptible and job.id not in started
            for placement in [resources.lend_now(job, now)] if placement is not None]


def category(job: Job, lent: int | None = None) -> str:
    """The job's category as accounting(5) records it (NONE if it asked
    nothing); a run on AR ``lent``'s idle slots adds ``-lent AR``."""
    spec, parts = job.submission, []
    if spec.queues:
        parts.append("-q " + ",".join(spec.queues))
    if spec.master_queues:
        parts.append("-masterq " + ",".join(spec.master_queues))
    if spec.hard:
        parts.append("-l " + spec.hard)
    if spec.soft:
        parts.append("-soft -l " + spec.soft)
    if spec.pe:
        parts.append(f"-pe {spec.pe} {format_pe_range(spec.pe_range)}")
    if spec.ar is not None:
        parts.append(f"-ar {spec.ar}")
    if spec.preemptible:
        parts.append(f"-preemptible {spec.preemptible}")
    if lent is not None:
        parts.append(f"{acct.LENT} {lent}")
    return " ".join(parts) or "NONE"
