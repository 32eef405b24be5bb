"""The real Grid Engine test cluster (scripts/sge-setup.sh, sge-hosts.sh):
vm plus node1..node3, queue all.q with 2 slots per host, a 4 s scheduling
interval. Helpers to drive it as the tests' users do, and to leave it clean."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from overlay.kit.remote import LocalRunner
from overlay.language.model import Allocation, Request, Reservation, State
from overlay_sge import settings
from overlay_sge.backend import SgeBackend
from overlay_sge.gridengine import GridEngine
from overlay_sge.ledger import Ledger

ENV = {**os.environ, "SGE_ROOT": "/var/lib/gridengine", "SGE_CELL": "default"}
HOSTS = ("node1", "node2", "node3", "vm")
TEST_USERS = "plusu1,plusu2,plusu3,plusmgr"
LEND_QUEUE = "plus_lend"
"""The lending queue the lending tests name (after the AR queues that
subordinate it, it goes too)."""


def sh(*argv: str, user: str | None = None, check: bool = False) -> subprocess.CompletedProcess:
    command = (["runuser", "-u", user, "--"] if user else []) + list(argv)
    result = subprocess.run(command, env=ENV, capture_output=True, text=True, cwd="/tmp", timeout=60)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(argv)}: {result.stdout}{result.stderr}")
    return result


def available() -> bool:
    try:
        return sh("qstat", "-f").returncode == 0 and all(h in sh("qconf", "-sel").stdout for h in HOSTS)
    except (OSError, subprocess.TimeoutExpired):
        return False


def require() -> None:
    """Skip without the cluster on a developer's machine; fail in CI, where
    scripts/test.sh sets it up."""
    if not available():
        if os.environ.get("CI"):
            pytest.fail("the Grid Engine test cluster is not running (scripts/sge-setup.sh)")
        pytest.skip("no Grid Engine test cluster: run scripts/sge-setup.sh and sge-hosts.sh up")


def submit(user: str, *args: str) -> str:
    """qsub as ``user`` a binary command; the job id."""
    result = sh("qsub", "-b", "y", "-o", "/dev/null", "-j", "y", *args, user=user, check=True)
    return re.search(r"Your job (\d+)", result.stdout).group(1)


def job_states(user: str = "*") -> dict[str, tuple[str, str]]:
    """Job id -> (state, queue instance or '')."""
    out = sh("qstat", "-u", user, check=True).stdout.splitlines()[2:]
    jobs = {}
    for line in out:
        fields = line.split()
        queue = fields[7] if len(fields) > 7 and "@" in fields[7] else ""
        jobs[fields[0]] = (fields[4], queue)
    return jobs


def instance_states() -> dict[str, str]:
    """Queue instance -> its state letters (qstat -f), without the D of the
    calendar that switches a host's normal instances off over AR windows
    from the grant on (nodes cleared ahead, in every conflict mode): what
    the backend's own suspensions and Grid Engine's other states leave."""
    states = {}
    for line in sh("qstat", "-f", check=True).stdout.splitlines():
        fields = line.split()
        if fields and "@" in fields[0]:
            states[fields[0]] = fields[5].replace("D", "") if len(fields) > 5 else ""
    return states


def names(flag: str) -> set[str]:
    return set(sh("qconf", flag).stdout.split())


def wait_for(predicate, timeout: float = 30, what: str = "condition") -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def clean() -> None:
    """No test job, AR object, lending queue or suspended normal instance left behind."""
    sh("qdel", "-f", "-u", TEST_USERS)
    for queue in names("-sql"):
        if re.fullmatch(r"R\d+", queue):
            sh("qconf", "-dq", queue)
    for userset in names("-sul"):
        if re.fullmatch(r"R\d+_users", userset):
            sh("qconf", "-dul", userset)
    for group in names("-shgrpl"):
        if re.fullmatch(r"@R\d+_hosts", group):
            sh("qconf", "-dhgrp", group)
    for host in HOSTS:
        sh("qconf", "-purge", "queue", "calendar", f"all.q@{host}")
    if LEND_QUEUE in names("-sql"):
        sh("qconf", "-dq", LEND_QUEUE)
    for calendar in names("-scall"):
        if calendar.startswith(("plus_", "pluslend_")):
            sh("qconf", "-dcal", calendar)
    sh("qmod", "-usq", "all.q")
    sh("qmod", "-e", "all.q")


def backend(state_dir: Path, conflict: str = "requeue", runner=None) -> SgeBackend:
    chosen = settings.load({"conflict": conflict})
    return SgeBackend(GridEngine(runner or LocalRunner(chosen.environment)),
                      Ledger(str(state_dir / "sge-ledger.json")), chosen, duration_offset=60)


def reservation(ar_id: int, hosts: tuple[str, ...], state: State = State.WAITING,
                users: tuple[str, ...] = ("plusu1",), slots: int = 2, start_in: int = 3600,
                duration: int = 3600, hard_error: bool = False) -> Reservation:
    now = int(time.time())
    request = Request(start=now + start_in, end=now + start_in + duration, nodes=len(hosts),
                      users=users, hard_error=hard_error)
    return Reservation(id=ar_id, owner=users[0], group=users[0], request=request, state=state,
                       submission_time=now, allocations=[Allocation(h, slots) for h in hosts],
                       acl=users)
