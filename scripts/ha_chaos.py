"""Several daemons on one PostgreSQL store under faults, round after round
(issue 30: "Tests, with real parts").

Run as root after the test set-up (it needs the test users, network
namespaces, and Debian's PostgreSQL 15 binaries, with which it starts a
server of its own: the shared one is never touched):
  PLUS_VENV=/opt/plus-venv /opt/plus-venv/bin/python scripts/ha_chaos.py [rounds] [daemons]

Each round, clients spread over the daemons reserve, modify, cancel,
destroy, commit and abort (with -T too) as the kill -9 loop test's load
does, others submit short native jobs (plus_qsub -b y, at any daemon: a
standby relays them) to a host that really runs them, and a few short ARs
open and close; then one fault, in turn: the leader killed (kill -9),
stopped (SIGSTOP, then woken), or cut off (its host's link down, then
up), a standby cut off, PostgreSQL restarted. Once one daemon leads again
and every daemon answers, and the round's jobs and windows have ended
and the outbox is drained, the round is checked: every AR the commands
acknowledged is in the store as their outcomes allow
(tests/test_kill_loop.py's model), no node booked twice in any instant;
in the one reporting file the daemons share, no line twice, one new_ar
per stored AR, no window opened or closed twice (one ar_log record per
short AR and state), and one acct record per job, which ran once to its
end with exit 0, the jobs running when the fault came among them
(scripts/chaos_jobs.py); and one record per job in the native backend's
accounting file, which the daemons share too. A line per round, then a summary; the exit
status is 1 if any round failed.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from chaos_jobs import (  # noqa: E402
    HOST,
    JobFolder,
    JobLoad,
    accounting_records,
    acct_records,
    all_accounted,
    job_problems,
)
from chaos_jobs import running as running_jobs  # noqa: E402
from daemon_harness import CLUSTER  # noqa: E402
from ha_world import STOOD_DOWN, TOOK_LEAD, Member, World, wait_for  # noqa: E402
from overlay.persistence.outbox import Outbox  # noqa: E402
from overlay.persistence.store import REPORTING, Store  # noqa: E402
from overlay_native import acct  # noqa: E402
from test_kill_loop import (  # noqa: E402
    SETTINGS,
    Load,
    Tracked,
    bookings_of_ar,
    model_mismatches,
    overbooked,
)

LOAD_SECONDS = (2.0, 4.0)
"""How long the clients run before the fault."""
SHORT = 4
"""Seconds the short ARs of a round last, opening and closing during it."""
SETTLE = 180
"""Seconds a round's jobs, windows and records may take to end and be written."""
JOB_CLUSTER = CLUSTER + f"  - {HOST}\nscheduler: {{schedule_interval: 1}}\n"


def _kill_leader(world: World) -> Member:
    leader = world.leader()
    took = _took(world, leader)
    leader.daemon.kill9()
    _new_leader(world, leader, took)
    leader.start()
    return leader


def _stop_leader(world: World) -> Member:
    leader = world.leader()
    took, stood = _took(world, leader), leader.said(STOOD_DOWN)
    leader.daemon.send(signal.SIGSTOP)
    _new_leader(world, leader, took)
    leader.daemon.send(signal.SIGCONT)
    wait_for(lambda: leader.said(STOOD_DOWN) > stood, "the woken leader to stand by")
    return leader


def _cut_leader(world: World) -> Member:
    leader = world.leader()
    took, stood = _took(world, leader), leader.said(STOOD_DOWN)
    leader.host.cut()
    _new_leader(world, leader, took)
    leader.host.mend()
    wait_for(lambda: leader.said(STOOD_DOWN) > stood, "the cut leader to stand by")
    return leader


def _cut_standby(world: World) -> Member:
    standby = world.other(world.leader())
    heard = standby.said("change feed:")
    standby.host.cut()
    wait_for(lambda: standby.said("change feed:") > heard, "the standby to miss the store")
    standby.host.mend()
    return standby


def _restart_postgresql(world: World) -> None:
    world.server.stop()
    world.server.start()


FAULTS = {"kill -9 leader": _kill_leader, "SIGSTOP leader": _stop_leader,
          "cut leader": _cut_leader, "cut standby": _cut_standby,
          "restart PostgreSQL": _restart_postgresql}


def _took(world: World, leader: Member) -> dict[int, int]:
    return {m.index: m.said(TOOK_LEAD) for m in world.members if m is not leader}


def _new_leader(world: World, old: Member, took: dict[int, int]) -> None:
    """Until another member than ``old`` logs that it took the lead."""
    wait_for(lambda: any(world.members[i].said(TOOK_LEAD) > n for i, n in took.items()),
             "another daemon to lead")


def _short_ars(world: World, round_number: int) -> list[int]:
    """An AR at each daemon, opening in 2 s and closing SHORT s later."""
    ids = []
    for member in world.members:
        done = member.daemon.run("plusu1", "plus_reserve", "--json", "-N",
                                 f"s{round_number}x{member.index}", "-s", "now+2s", "-D",
                                 f"{SHORT}s", "-n", "1")
        if done.returncode == 0:
            ids.append(json.loads(done.stdout)["id"])
    return ids


def _records(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _transitions(lines: list[str]) -> Counter:
    """ar_log records per (AR, state)."""
    found: Counter = Counter()
    for fields in (line.split(":") for line in lines):
        if len(fields) > 5 and fields[1] == "ar_log":
            found[int(fields[4]), fields[5]] += 1
    return found


def _new_ars(lines: list[str]) -> Counter:
    """new_ar records per AR."""
    return Counter(int(fields[3]) for fields in (line.split(":") for line in lines)
                   if len(fields) > 3 and fields[1] == "new_ar")


def _per_ar(lines: list[str], kind: str, event: str | None = None) -> Counter:
    """Records of ``kind`` (ar_log: of ``event``) per AR."""
    return Counter(int(fields[4]) for fields in (line.split(":") for line in lines)
                   if len(fields) > 6 and fields[1] == kind and event in (None, fields[6]))


REPEATABLE = (":ar_attribute:", ":MODIFIED:")
"""Records two modifies of an AR in one second write alike: counted
against the commands instead."""


def _modifies(tracked: Tracked) -> int:
    """The modifies (and commits) of an AR that may have been carried out."""
    return sum(entry.startswith(("modify ", "commit")) and "-> refused" not in entry
               and not entry.startswith("modify -T") for entry in tracked.history)


def _stored(world: World) -> list:
    store = Store(world.server.url())
    try:
        return store.load_all()
    finally:
        store.close()


def _outbox_empty(world: World) -> bool:
    """Whether no record waits for either file."""
    store = Store(world.server.url())
    try:
        looks = [Outbox(store.engine, store.url, target).look()
                 for target in (REPORTING, acct.TARGET)]
    finally:
        store.close()
    return all(mark is None and not waiting for mark, waiting in looks)


def _settled(world: World, reporting: Path, accounting: Path, jobs: list) -> bool:
    """Whether the drains have written everything: the outbox is empty,
    every stored AR has its new_ar and every acknowledged job its acct and
    its accounting record."""
    if not _outbox_empty(world):
        return False
    lines = _records(reporting)
    made = _new_ars(lines)
    return (all(made[ar.id] for ar in _stored(world))
            and all_accounted(jobs, acct_records(lines))
            and all_accounted(jobs, accounting_records(_records(accounting))))


def _check(world: World, tracked: list[Tracked], short: list[int], files: tuple[Path, Path],
           jobs: list, folder: JobFolder, running_at_fault: set[int]) -> list[str]:
    """The round's problems; ``files``: the reporting file and the accounting file."""
    reporting, accounting = files
    stored = _stored(world)
    loaded = [ar for ar in stored if not ar.name.startswith("s")]
    problems = model_mismatches(tracked, loaded, time.time())
    problems += overbooked({ar.id: bookings_of_ar(ar) for ar in stored})
    lines = _records(reporting)
    problems += [f"written {count} times: {line}" for line, count in Counter(lines).items()
                 if count > 1 and not any(kind in line for kind in REPEATABLE)]
    modified, described = _per_ar(lines, "ar_log", "MODIFIED"), _per_ar(lines, "ar_attribute")
    problems += [f"AR {t.id}: {modified[t.id]} MODIFIED and {described[t.id]} ar_attribute "
                 f"records, {_modifies(t)} modifies" for t in tracked if t.id is not None
                 and (modified[t.id] > _modifies(t) or described[t.id] > 1 + _modifies(t))]
    made = _new_ars(lines)
    stored_ids = {ar.id for ar in stored}
    problems += [f"AR {ar_id}: {count} new_ar records" for ar_id, count in made.items()
                 if count > 1 or (ar_id in stored_ids and count != 1)]
    problems += [f"AR {ar_id}: no new_ar record" for ar_id in stored_ids - set(made)]
    records = _transitions(lines)
    problems += [f"short AR {ar_id}: state {state} logged {records[ar_id, state]} times"
                 for ar_id in short for state in ("r", "x") if records[ar_id, state] != 1]
    problems += job_problems(jobs, acct_records(lines), folder, running_at_fault)
    problems += [f"accounting file: {problem}" for problem in job_problems(
        jobs, accounting_records(_records(accounting)), folder, running_at_fault)]
    return problems


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else len(FAULTS)
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    rng = random.Random()
    work = Path(tempfile.mkdtemp(prefix="plus-chaos-"))
    os.chmod(work, 0o755)
    reporting, accounting, spool = work / "reporting", work / "accounting", work / "spool"
    spool.mkdir(mode=0o755)
    folder = JobFolder(work / "jobs")
    world = World(f"{SETTINGS}accounting_file: {reporting}\nsge_queues: [all.q]\n", count,
                  cluster=JOB_CLUSTER,
                  counting=f"spool_dir: {spool}, accounting_file: {accounting}")
    tracked: list[Tracked] = []
    jobs: list = []
    failed, failovers, counts = 0, {}, Counter()
    try:
        world.start()
        print(f"ha_chaos: {rounds} rounds, {count} daemons")
        for number in range(rounds):
            name = list(FAULTS)[number % len(FAULTS)]
            daemons = [m.daemon for m in world.members]
            load = Load(daemons, int(time.time()) + 3600 * (number + 2), prefix=f"c{number}w")
            job_load = JobLoad(daemons, folder, prefix=f"j{number}u")
            load.start()
            job_load.start()
            short = _short_ars(world, number)
            time.sleep(rng.uniform(*LOAD_SECONDS))
            running_at_fault = running_jobs(world.leader().daemon)
            began = time.monotonic()
            FAULTS[name](world)
            world.leader()
            for member in world.members:
                wait_for(lambda m=member: m.daemon.run("root", "plus_status").returncode == 0,
                         "every daemon to answer")
            recovered = time.monotonic() - began
            load.finish()
            job_load.finish()
            tracked += load.tracked
            jobs += job_load.jobs
            wait_for(lambda s=short: all(_ended(world, i) for i in s), "the short ARs to end")
            problems = list(load.complaints)
            try:
                wait_for(lambda j=job_load: _settled(world, reporting, accounting, j.jobs),
                         "the records", SETTLE)
            except AssertionError:
                problems.append(f"not settled after {SETTLE} s: the outbox not drained, or an "
                                f"AR's new_ar or a job's acct missing")
            problems += _check(world, tracked, short, (reporting, accounting), jobs, folder,
                               running_at_fault)
            counts.update(load.counts)
            counts.update(job_load.counts)
            failovers.setdefault(name, []).append(recovered)
            failed += bool(problems)
            print(f"round {number + 1:>3}  {name:<20} recovered in {recovered:5.2f} s  "
                  f"{load.counts} {job_load.counts}, {len(running_at_fault)} running at the "
                  f"fault  {'ok' if not problems else 'FAILED'}", flush=True)
            for problem in problems[:20]:
                print(f"    {problem}")
    finally:
        world.remove()
        shutil.rmtree(work, ignore_errors=True)
    every = [value for values in failovers.values() for value in values]
    print(f"summary: {rounds - failed} of {rounds} rounds held; recovery median "
          f"{statistics.median(every):.2f} s, worst {max(every):.2f} s; commands {dict(counts)}")
    for name, values in failovers.items():
        print(f"  {name:<20} " + ", ".join(f"{value:.2f}" for value in values) + " s")
    unknown = Counter(job.message[:100] for job in jobs if job.id is None)
    for message, times in unknown.most_common():
        print(f"  plus_qsub without a job id, {times}x: {message}")
    return 1 if failed else 0


def _ended(world: World, ar_id: int) -> bool:
    views = world.members[0].daemon.status("-ne", "100000")
    return any(view["id"] == ar_id and view["state"] == "x" for view in views)


if __name__ == "__main__":
    sys.exit(main())
