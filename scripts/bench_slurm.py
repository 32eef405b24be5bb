"""Timings of the Slurm backend on the test cluster (scripts/test-slurm.sh),
beside Slurm's own reservations in the same run.

Run as root: PLUS_VENV=/opt/plus-venv /opt/plus-venv/bin/python scripts/bench_slurm.py [runs]

For an AR on three nodes it prints, per run and as the worst of all runs:
  made       plus_reserve's return -> Slurm reservation R<id> exists
  job runs   start time -> a job waiting in the AR runs
  gone       end time -> the reservation deleted
and, in the same run, Slurm's own: how long `scontrol create reservation`
takes, and how long after its start a job waiting in it runs.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VENV = Path(os.environ.get("PLUS_VENV", "/opt/plus-venv"))
ENV = {**os.environ, "TZ": "UTC", "SLURM_TIME_FORMAT": "%s"}
LEAD, LENGTH, POLL = 15, 30, 0.05


def sh(*argv: str, user: str | None = None) -> str:
    command = (["runuser", "-u", user, "--"] if user else []) + list(argv)
    return subprocess.run(command, env=ENV, capture_output=True, text=True, cwd="/tmp").stdout


def reservations() -> set[str]:
    return {line.split()[0].split("=", 1)[1]
            for line in sh("scontrol", "-o", "show", "reservation").splitlines()
            if line.startswith("ReservationName=")}


def running(job: str) -> bool:
    return sh("squeue", "-h", "-j", job, "-o", "%T").strip() == "RUNNING"


def until(predicate, timeout: float) -> float:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return time.time()
        time.sleep(POLL)
    raise SystemExit(f"bench_slurm: timed out after {timeout} s")


def waiting_job(reservation: str) -> str:
    return sh("sbatch", "--parsable", "-o", "/dev/null", f"--reservation={reservation}", "-t", "1",
              "--wrap", "sleep 600", user="plusu1").strip()


def one_run(conf: Path) -> dict[str, float]:
    env = {**ENV, "PLUS_CONF": str(conf)}
    reply = subprocess.run([str(VENV / "bin" / "plus_reserve"), "--json", "-s", f"now+{LEAD}s",
                            "-D", f"{LENGTH}s", "-n", "3", "-U", "plusu1"], env=env,
                           capture_output=True, text=True)
    if reply.returncode != 0:
        raise SystemExit(f"bench_slurm: plus_reserve failed: {reply.stderr}")
    returned = time.time()
    view = json.loads(reply.stdout)
    name = f"R{view['id']}"
    made = until(lambda: name in reservations(), 30)
    job = waiting_job(name)
    runs = until(lambda: running(job), LEAD + 60)
    gone = until(lambda: name not in reservations(), LENGTH + 60)
    return {"made": made - returned, "job runs": runs - view["start"],
            "gone": gone - view["end"]}


def slurm_own() -> dict[str, float]:
    """Slurm's own reservation, made by root: the command's time, and its
    waiting job's start after the reservation's."""
    start = int(time.time()) + LEAD
    name = f"bench{os.getpid()}"
    began = time.time()
    made = subprocess.run(["scontrol", "create", "reservation", f"ReservationName={name}",
                           "StartTime=" + time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start)),
                           f"Duration={LENGTH // 60 + 1}", "NodeCnt=3", "Users=plusu1"],
                          env=ENV, capture_output=True, text=True)
    took = time.time() - began
    if made.returncode != 0:
        raise SystemExit(f"bench_slurm: scontrol create reservation failed: {made.stderr}")
    job = waiting_job(name)
    try:
        runs = until(lambda: running(job), LEAD + 60)
    finally:
        sh("scancel", job)
        until(lambda: not sh("squeue", "-h", "-j", job).strip(), 30)
        sh("scontrol", "delete", f"ReservationName={name}")
    return {"create": took, "job runs": runs - start}


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    folder = Path(tempfile.mkdtemp(prefix="plus-bench-slurm-"))
    os.chmod(folder, 0o755)
    conf = folder / "plus.yaml"
    conf.write_text("state_dir: state\nbackend: slurm\nduration_offset: 5\nreconcile_interval: 30\n")
    daemon = subprocess.Popen([str(VENV / "bin" / "plus_scheduler")],
                              env={**ENV, "PLUS_CONF": str(conf)}, stdout=subprocess.DEVNULL,
                              stderr=open(folder / "daemon.log", "w"))
    try:
        until(lambda: (folder / "state" / "plus.sock").exists(), 30)
        ours, theirs = [], []
        for _ in range(runs):                      # interleaved: both meet the same machine
            ours.append(one_run(conf))
            theirs.append(slurm_own())
        print(f"Slurm backend, AR on 3 nodes, {runs} runs (seconds; median, worst)")
        for key in ("made", "job runs", "gone"):
            values = [r[key] for r in ours]
            print(f"  {key:<9} " + "  ".join(f"{v:6.2f}" for v in values)
                  + f"   median {statistics.median(values):6.2f}   worst {max(values):6.2f}")
        create = statistics.median(r["create"] for r in theirs)
        made = statistics.median(r["made"] for r in ours)
        print(f"  Slurm's own: scontrol create reservation {create:6.3f} s "
              f"(plus_reserve's return to R<id> made: {made / create:5.1f}x that); "
              f"its waiting job runs {statistics.median(r['job runs'] for r in theirs):6.2f} s "
              f"after its start (ours {statistics.median(r['job runs'] for r in ours):6.2f} s)")
    finally:
        daemon.terminate()
        daemon.wait()


if __name__ == "__main__":
    main()
