"""Several daemons on one PostgreSQL store under faults, round after round
(issue 30: "Tests, with real parts").

Run as root after the test set-up (it needs the test users, network
namespaces, and Debian's PostgreSQL 15 binaries, with which it starts a
server of its own: the shared one is never touched):
  PLUS_VENV=/opt/plus-venv /opt/plus-venv/bin/python scripts/ha_chaos.py [rounds] [daemons]

Each round, clients spread over the daemons reserve, modify, cancel,
destroy, commit and abort (with -T too) as the kill -9 loop test's load
does, and a few short ARs open and close; then one fault, in turn: the
leader killed (kill -9), stopped (SIGSTOP, then woken), or cut off (its
host's link down, then up), a standby cut off, PostgreSQL restarted. Once
one daemon leads again and every daemon answers, the round is checked:
every AR the commands acknowledged is in the store as their outcomes
allow (tests/test_kill_loop.py's model), no node booked twice in any
instant, and no window opened or closed twice (the daemons' reporting
files: one ar_log record per AR and state). A line per round, then a
summary; the exit status is 1 if any round failed.
"""

from __future__ import annotations

import json
import random
import signal
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from ha_world import STOOD_DOWN, TOOK_LEAD, Member, World, wait_for  # noqa: E402
from overlay.persistence.store import Store  # noqa: E402
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


def _transitions(world: World) -> Counter:
    """ar_log records per (AR, state) in every daemon's reporting file."""
    found: Counter = Counter()
    for member in world.members:
        path = member.daemon.dir / "state" / "reporting"
        if path.exists():
            for line in path.read_text().splitlines():
                fields = line.split(":")
                if len(fields) > 5 and fields[1] == "ar_log":
                    found[int(fields[4]), fields[5]] += 1
    return found


def _check(world: World, tracked: list[Tracked], short: list[int]) -> list[str]:
    store = Store(world.server.url())
    try:
        stored = store.load_all()
    finally:
        store.close()
    loaded = [ar for ar in stored if not ar.name.startswith("s")]
    problems = model_mismatches(tracked, loaded, time.time())
    problems += overbooked({ar.id: bookings_of_ar(ar) for ar in stored})
    records = _transitions(world)
    problems += [f"short AR {ar_id}: state {state} logged {records[ar_id, state]} times"
                 for ar_id in short for state in ("r", "x") if records[ar_id, state] != 1]
    return problems


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else len(FAULTS)
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    rng = random.Random()
    world = World(SETTINGS, count)
    tracked: list[Tracked] = []
    failed, failovers, counts = 0, [], Counter()
    try:
        world.start()
        print(f"ha_chaos: {rounds} rounds, {count} daemons")
        for number in range(rounds):
            name = list(FAULTS)[number % len(FAULTS)]
            load = Load([m.daemon for m in world.members], int(time.time()) + 3600 * (number + 2),
                        prefix=f"c{number}w")
            load.start()
            short = _short_ars(world, number)
            time.sleep(rng.uniform(*LOAD_SECONDS))
            began = time.monotonic()
            FAULTS[name](world)
            world.leader()
            for member in world.members:
                wait_for(lambda m=member: m.daemon.run("root", "plus_status").returncode == 0,
                         "every daemon to answer")
            recovered = time.monotonic() - began
            load.finish()
            tracked += load.tracked
            wait_for(lambda s=short: all(_ended(world, i) for i in s), "the short ARs to end")
            problems = load.complaints + _check(world, tracked, short)
            counts.update(load.counts)
            failovers.append(recovered)
            failed += bool(problems)
            print(f"round {number + 1:>3}  {name:<20} recovered in {recovered:5.2f} s  "
                  f"{load.counts}  {'ok' if not problems else 'FAILED'}")
            for problem in problems[:20]:
                print(f"    {problem}")
    finally:
        world.remove()
    print(f"summary: {rounds - failed} of {rounds} rounds held; recovery median "
          f"{statistics.median(failovers):.2f} s, worst {max(failovers):.2f} s; "
          f"commands {dict(counts)}")
    return 1 if failed else 0


def _ended(world: World, ar_id: int) -> bool:
    views = world.members[0].daemon.status("-ne", "100000")
    return any(view["id"] == ar_id and view["state"] == "x" for view in views)


if __name__ == "__main__":
    sys.exit(main())
