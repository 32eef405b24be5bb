"""The reclaim bound of lending on the real Grid Engine (the test cluster of
scripts/sge-setup.sh and sge-hosts.sh up): plus_scheduler with the sge
backend and ``lend_queue: plus_lend``, an AR of plusu1's on one host (2
slots), both slots lent to rerunnable jobs of plusu2's.

Run as root: PLUS_VENV=/opt/plus-venv /opt/plus-venv/bin/python scripts/bench_sge_lend.py [trials]

Each trial the AR's owner submits a job into the AR, and the script
measures (qstat polled every 50 ms, so each figure is up to 50 ms late):
  reclaim    its submission -> the AR's job runs, a lent job holding the slot
             (Grid Engine's dispatch; the lent job is suspended in it)
  suspended  the AR's job runs -> a lent job no longer runs (suspended by
             Grid Engine's slot-wise subordination, or already requeued)
  requeued   the AR's job runs -> the suspended lent job is requeued, out of
             the lending queue (the lending watch, every lend_watch seconds,
             and qmod -rj)
  lent again the AR's job deleted -> the requeued job runs again
and prints each with its median and worst. It takes the Grid Engine test
cluster's lock while it runs, as the test files of that group do, and
leaves the cluster as the tests expect.
"""

from __future__ import annotations

import fcntl
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_sge import ENV, POLL, VENV, until

LOCK = "/run/lock/plus-tests-grid-engine.lock"
LEND, WATCH = "plus_lend", 1.0


def sh(*argv: str, user: str | None = None) -> str:
    command = (["runuser", "-u", user, "--"] if user else []) + list(argv)
    result = subprocess.run(command, env=ENV, capture_output=True, text=True, cwd="/tmp")
    return result.stdout + result.stderr


def submit(user: str, *args: str) -> str:
    answer = sh("qsub", "-b", "y", "-o", "/dev/null", "-j", "y", *args, user=user)
    match = re.search(r"Your job (\d+)", answer)
    if not match:
        raise SystemExit(f"bench_sge_lend: qsub refused: {answer}")
    return match.group(1)


def jobs() -> dict[str, tuple[str, str]]:
    found = {}
    for line in sh("qstat", "-u", "*").splitlines()[2:]:
        fields = line.split()
        found[fields[0]] = (fields[4], fields[7] if len(fields) > 7 and "@" in fields[7] else "")
    return found


def lent_running(job: str, host: str) -> bool:
    """Running in the lending queue on ``host`` (Rr: again, after a requeue)."""
    state, instance = jobs().get(job, ("", ""))
    return state in ("r", "Rr") and instance == f"{LEND}@{host}"


def trial(queue: str, host: str, lent: list[str]) -> dict[str, float]:
    submitted = time.time()
    owner = submit("plusu1", "-q", queue, "-l", f"plus_rsv={queue}", "sleep", "600")
    runs = until(lambda: jobs().get(owner, ("",))[0] == "r", 60)
    suspended = until(lambda: not all(lent_running(j, host) for j in lent), 30)
    requeued = until(lambda: any(jobs().get(j, ("", "x"))[1] == "" for j in lent), 30)
    sh("qdel", owner)
    deleted = time.time()
    again = until(lambda: all(lent_running(j, host) for j in lent), 120)
    return {"reclaim": runs - submitted, "suspended": suspended - runs,
            "requeued": requeued - runs, "lent again": again - deleted}


def clean() -> None:
    sh("qdel", "-f", "-u", "plusu1,plusu2")
    for queue in sh("qconf", "-sql").split():
        if re.fullmatch(r"R\d+", queue):
            sh("qconf", "-dq", queue)
    for kind, pattern in (("-sul", r"R\d+_users"), ("-shgrpl", r"@R\d+_hosts")):
        for name in sh("qconf", kind).split():
            if re.fullmatch(pattern, name):
                sh("qconf", "-dul" if kind == "-sul" else "-dhgrp", name)
    sh("qconf", "-dq", LEND)
    for host in ("node1", "node2", "node3", "vm"):
        sh("qconf", "-purge", "queue", "calendar", f"all.q@{host}")
    for calendar in sh("qconf", "-scall").split():
        if calendar.startswith(("plus_", "pluslend_")):
            sh("qconf", "-dcal", calendar)
    sh("qmod", "-usq", "all.q")


def main() -> None:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    folder = Path(tempfile.mkdtemp(prefix="plus-bench-sge-lend-"))
    conf = folder / "plus.yaml"
    conf.write_text("state_dir: state\nbackend: sge\nduration_offset: 5\nreconcile_interval: 30\n"
                    f"sge: {{lend_queue: {LEND}, lend_watch: {WATCH}}}\n")
    env = {**ENV, "PLUS_CONF": str(conf)}
    with open(LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        clean()
        daemon = subprocess.Popen([str(VENV / "bin" / "plus_scheduler")], env=env,
                                  stdout=subprocess.DEVNULL, stderr=open(folder / "daemon.log", "w"))
        try:
            until(lambda: (folder / "state" / "plus.sock").exists(), 60)
            reply = subprocess.run([str(VENV / "bin" / "plus_reserve"), "--json", "-s", "now+5s",
                                    "-D", "2h", "-n", "1", "-U", "plusu1"], env=env,
                                   capture_output=True, text=True, check=True)
            view = json.loads(reply.stdout)
            queue, host = f"R{view['id']}", view["allocations"][0]["node"]
            until(lambda: host in sh("qconf", "-sq", LEND).split(), 60)
            lent = [submit("plusu2", "-r", "y", "-l", f"plus_rsv={LEND},h_rt=3600", "sleep", "7200")
                    for _ in range(2)]
            until(lambda: all(lent_running(j, host) for j in lent), 60)
            results = [trial(queue, host, lent) for _ in range(trials)]
        finally:
            daemon.terminate()
            daemon.wait()
            clean()
    print(f"Grid Engine lending, an AR on {host} (2 slots) lent to 2 rerunnable jobs, "
          f"{trials} trials (seconds; lend_watch {WATCH} s, qstat polled every {POLL} s)")
    for key in ("reclaim", "suspended", "requeued", "lent again"):
        values = [r[key] for r in results]
        print(f"  {key:<11}" + " ".join(f"{v:5.2f}" for v in values)
              + f"   median {statistics.median(values):5.2f}   worst {max(values):5.2f}")
    print(f"  scheduler  {sh('qconf', '-ssconf').splitlines()[1].strip()}")


if __name__ == "__main__":
    main()
