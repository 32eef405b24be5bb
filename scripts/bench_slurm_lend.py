"""The reclaim bound of lending on the real Slurm (scripts/test-slurm.sh):
an AR's reservation R<id> and its lending twin L<id> on one node, made
with the fields and flags the backend gives them (overlay_slurm.
reservations), a lent job (partition lend) holding all the node's cores;
the wall time from the submission of the AR's owner's job (sbatch
--reservation=R<id>) to squeue showing it RUNNING, which needs the lent job
preempted first (Slurm's preempt/partition_prio does it; the overlay is not
on that path). Median and worst over the trials; the lent job is cancelled
and a new one lent between trials. Takes the Slurm test lock, as the tests
do, so it waits its turn.

Run as root: PLUS_VENV=/opt/plus-venv /opt/plus-venv/bin/python scripts/bench_slurm_lend.py [trials]
"""

from __future__ import annotations

import fcntl
import os
import statistics
import subprocess
import sys
import time

from overlay_slurm.reservations import Wanted

ENV = {**os.environ, "TZ": "UTC"}
LOCK, NODE, AR_ID, POLL = "/run/lock/plus-tests-slurm.lock", "snode4", 990, 0.02


def sh(*argv: str, user: str | None = None) -> str:
    command = (["runuser", "-u", user, "--"] if user else []) + list(argv)
    done = subprocess.run(command, env=ENV, capture_output=True, text=True, cwd="/tmp")
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: {done.stdout}{done.stderr}")
    return done.stdout.strip()


def job_state(job_id: str) -> str:
    return sh("squeue", "-h", "-j", job_id, "-o", "%T")


def wait(job_id: str, state: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while job_state(job_id) != state:
        if time.monotonic() > deadline:
            raise SystemExit(f"job {job_id} not {state} after {timeout} s")
        time.sleep(POLL)


def gone(*job_ids: str) -> None:
    sh("scancel", *job_ids)
    while sh("squeue", "-h", "-j", ",".join(job_ids), "-o", "%i"):
        time.sleep(0.1)


def make(wanted: Wanted, now: int) -> None:
    fields = wanted.fields(now, started=False) | {"Flags": wanted.flags}
    sh("scontrol", "create", "reservation", *(f"{k}={v}" for k, v in fields.items()))


def trial(ar: Wanted) -> float:
    lent = sh("sbatch", "--parsable", "-o", "/dev/null", "-p", "lend",
              f"--reservation={ar.lending().name}", "-n", "4", "-t", "10",
              "--wrap", "sleep 600", user="plusu2")
    wait(lent, "RUNNING")
    submitted = time.monotonic()
    owners = sh("sbatch", "--parsable", "-o", "/dev/null", f"--reservation={ar.name}",
                "-n", "4", "-t", "1", "--wrap", "sleep 600", user="plusu1")
    wait(owners, "RUNNING")
    took = time.monotonic() - submitted
    assert job_state(lent) in ("PENDING", "COMPLETING"), job_state(lent)
    gone(owners, lent)
    return took


def main() -> None:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    with open(LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        now = int(time.time())
        ar = Wanted(f"R{AR_ID}", now, now + 3600, (NODE,), ("plusu1",), (), "", lend="lend")
        make(ar, now)
        make(ar.lending(), now)
        try:
            times = [trial(ar) for _ in range(trials)]
        finally:
            for name in (ar.name, ar.lending().name):
                subprocess.run(["scontrol", "delete", f"ReservationName={name}"], env=ENV,
                               capture_output=True)
    print(f"Slurm lending reclaim on {NODE}, {trials} trials: the AR's job ran a median "
          f"{statistics.median(times) * 1000:.0f} ms after its submission, worst "
          f"{max(times) * 1000:.0f} ms (best {min(times) * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
