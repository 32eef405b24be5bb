"""Timings of the Grid Engine backend on the test cluster (scripts/sge-setup.sh,
scripts/sge-hosts.sh up), against Grid Engine's own advance reservations.

Run as root: PLUS_VENV=/opt/plus-venv /opt/plus-venv/bin/python scripts/bench_sge.py [runs]

For an AR on three hosts it prints, per run and as the worst of all runs:
  prepared   plus_reserve's return -> queue R<id> exists with every instance suspended
  resumed    start time -> the AR queue is unsuspended
  job runs   start time -> a job waiting in the AR runs
  torn down  end time -> queue, userset and hostgroup deleted
and, for comparison, how long after the start a job runs in a qrsub AR.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VENV = Path(os.environ.get("PLUS_VENV", "/opt/plus-venv"))
ENV = {**os.environ, "SGE_ROOT": "/var/lib/gridengine", "SGE_CELL": "default"}
LEAD, LENGTH, POLL = 20, 40, 0.05


def sh(*argv: str, user: str | None = None) -> str:
    command = (["runuser", "-u", user, "--"] if user else []) + list(argv)
    return subprocess.run(command, env=ENV, capture_output=True, text=True, cwd="/tmp").stdout


def states() -> dict[str, str]:
    found = {}
    for line in sh("qstat", "-f").splitlines():
        fields = line.split()
        if fields and "@" in fields[0]:
            found[fields[0]] = fields[5] if len(fields) > 5 else ""
    return found


def job_running(job: str) -> bool:
    return any(line.split()[:1] == [job] and line.split()[4] == "r"
               for line in sh("qstat", "-u", "*").splitlines()[2:])


def until(predicate, timeout: float) -> float:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return time.time()
        time.sleep(POLL)
    raise SystemExit(f"bench_sge: timed out after {timeout} s")


def one_run(conf: Path) -> dict[str, float]:
    env = {**ENV, "PLUS_CONF": str(conf)}
    reply = subprocess.run([str(VENV / "bin" / "plus_reserve"), "--json", "-s", f"now+{LEAD}s",
                            "-D", f"{LENGTH}s", "-n", "3", "-U", "plusu1"],
                           env=env, capture_output=True, text=True, check=True)
    returned = time.time()
    view = json.loads(reply.stdout)
    queue = f"R{view['id']}"
    hosts = [a["node"] for a in view["allocations"]]
    prepared = until(lambda: all(states().get(f"{queue}@{h}") == "s" for h in hosts), 30)
    job = re.search(r"Your job (\d+)", sh("qsub", "-b", "y", "-o", "/dev/null", "-j", "y", "-q",
                                          queue, "-l", f"plus_rsv={queue}", "sleep", "600",
                                          user="plusu1")).group(1)
    resumed = until(lambda: all(states().get(f"{queue}@{h}") == "" for h in hosts), LEAD + 30)
    runs = until(lambda: job_running(job), LEAD + 60)
    gone = until(lambda: queue not in sh("qconf", "-sql").split(), LENGTH + 60)
    return {"prepared": prepared - returned, "resumed": resumed - view["start"],
            "job runs": runs - view["start"], "torn down": gone - view["end"]}


def qrsub_job_start() -> float:
    """Grid Engine's own AR: seconds from its start until its waiting job runs."""
    start = int(time.time()) + LEAD
    stamp = time.strftime("%Y%m%d%H%M.%S", time.localtime(start))
    answer = sh("qrsub", "-a", stamp, "-d", str(LENGTH), "-u", "plusu1")
    ar = re.search(r"reservation (\d+)", answer)
    if not ar:
        raise SystemExit(f"bench_sge: qrsub failed: {answer}")
    job = re.search(r"Your job (\d+)", sh("qsub", "-b", "y", "-o", "/dev/null", "-j", "y", "-ar",
                                          ar.group(1), "sleep", "600", user="plusu1")).group(1)
    runs = until(lambda: job_running(job), LEAD + 60)
    sh("qrdel", ar.group(1))
    return runs - start


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    folder = Path(tempfile.mkdtemp(prefix="plus-bench-sge-"))
    conf = folder / "plus.yaml"
    conf.write_text("state_dir: state\nbackend: sge\nduration_offset: 5\nreconcile_interval: 30\n")
    daemon = subprocess.Popen([str(VENV / "bin" / "plus_scheduler")], env={**ENV, "PLUS_CONF": str(conf)},
                              stdout=subprocess.DEVNULL, stderr=open(folder / "daemon.log", "w"))
    try:
        until(lambda: (folder / "state" / "plus.sock").exists(), 30)
        results = [one_run(conf) for _ in range(runs)]
        print(f"Grid Engine backend, AR on 3 hosts, {runs} runs (seconds; worst last)")
        for key, target in (("prepared", 2), ("resumed", 2), ("job runs", 20), ("torn down", 5)):
            values = [r[key] for r in results]
            print(f"  {key:<10} " + "  ".join(f"{v:6.2f}" for v in values)
                  + f"   worst {max(values):6.2f}   target {target}")
        print(f"  qrsub AR   job runs {qrsub_job_start():6.2f} s after its start "
              f"(Grid Engine's own, for comparison)")
        print(f"  scheduler  {sh('qconf', '-ssconf').splitlines()[1].strip()}")
    finally:
        daemon.terminate()
        daemon.wait()


if __name__ == "__main__":
    main()
