"""The real Slurm test cluster (scripts/test-slurm.sh): slurmctld and the
nodes snode1..snode4 (4 cores each) on this machine, partitions debug (all,
the default) and pair (snode3, snode4), schedulers every second. Helpers to
drive it as root and as the test users, to read it, and to leave it clean."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time

import pytest

NODES = ("snode1", "snode2", "snode3", "snode4")
TEST_USERS = ("plusu1", "plusu2", "plusu3", "plusmgr")
# Slurm reads and prints times in the local time of the command: UTC here.
ENV = {**os.environ, "TZ": "UTC"}
FIELD = re.compile(r"(\w+)=(\S*)")


def sh(*argv: str, user: str | None = None, check: bool = False) -> subprocess.CompletedProcess:
    """A Slurm command, as root or as ``user``, in /tmp."""
    command = (["runuser", "-u", user, "--"] if user else []) + list(argv)
    result = subprocess.run(command, env=ENV, capture_output=True, text=True, cwd="/tmp", timeout=60)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(argv)}: {result.stdout}{result.stderr}")
    return result


def available() -> bool:
    try:
        return sh("scontrol", "ping").returncode == 0 and set(nodes()) == set(NODES)
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return False


def require() -> None:
    """Skip without the cluster on a developer's machine; fail in CI, where
    scripts/test.sh sets it up."""
    if not available():
        if os.environ.get("CI"):
            pytest.fail("the Slurm test cluster is not running (scripts/test-slurm.sh)")
        pytest.skip("no Slurm test cluster: run scripts/test-slurm.sh as root")


def sbatch(user: str, *args: str) -> str:
    """sbatch as ``user`` (output to /dev/null unless ``args`` say otherwise); the job id."""
    output = () if any(a.startswith(("-o", "--output")) for a in args) else ("-o", "/dev/null")
    return sh("sbatch", "--parsable", *output, *args, user=user, check=True).stdout.strip()


def job(job_id: str) -> dict[str, str]:
    """``scontrol show job``'s fields (JobState, Reason, NodeList, UserId, ...),
    while Slurm remembers the job (MinJobAge, 300 s after its end)."""
    return dict(FIELD.findall(sh("scontrol", "-o", "show", "job", job_id, check=True).stdout))


def nodes() -> dict[str, tuple[str, list[str], str]]:
    """Node -> (state, state flags, reason), as ``sinfo --json`` gives them:
    ("idle", ["DRAIN"], "why") for a drained node."""
    listing = json.loads(sh("sinfo", "--json", check=True).stdout)
    return {n["name"]: (n["state"], n["state_flags"], n["reason"]) for n in listing["nodes"]}


def reservation(name: str) -> dict[str, str] | None:
    """``scontrol show reservation``'s fields (StartTime, Nodes, Users, State,
    Flags, ...), or None when there is no such reservation."""
    shown = sh("scontrol", "-o", "show", "reservation", name)
    if shown.returncode != 0 and "not found" in shown.stdout + shown.stderr:
        return None
    assert shown.returncode == 0, shown.stderr
    return dict(reversed(FIELD.findall(shown.stdout)))    # the first NodeName= wins


def reservation_names() -> set[str]:
    shown = sh("scontrol", "-o", "show", "reservation", check=True).stdout
    return set(re.findall(r"^ReservationName=(\S+)", shown, re.M))


def wait_for(predicate, timeout: float = 60, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def all_idle() -> bool:
    return all(state == "idle" and not flags for state, flags, _ in nodes().values())


def clean(prefix: str = "") -> None:
    """No job of the test users, no reservation whose name starts with
    ``prefix`` (a regular expression matched at the start; every one when
    empty), no node down or drained."""
    for user in TEST_USERS:
        sh("scancel", "-u", user)
    # a reservation that a job still names (even one ending) is "in use"
    wait_for(lambda: not sh("squeue", "-h", "-u", ",".join(TEST_USERS), check=True).stdout,
             what="the test users' jobs gone")
    for name in reservation_names():
        if re.match(prefix, name):
            sh("scontrol", "delete", f"ReservationName={name}")
    for name, (state, flags, _) in nodes().items():
        if state == "down" or "DRAIN" in flags:
            sh("scontrol", "update", f"NodeName={name}", "State=RESUME", check=True)
