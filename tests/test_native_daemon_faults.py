"""Issue 11 on the native batch system, end to end: a real plus_scheduler and
the installed commands run as real users. A job with a NUL byte sent by a
hand-made client is refused and the batch system goes on; an unusable
cluster file stops the start with one line, and edited live keeps the last
good cluster; a reserved node removed from the file puts its AR in W saying
so; plus_qsub -ar on an AR awaiting plus_commit says so."""

from __future__ import annotations

import json
import os
import re
import time

import pytest

from daemon_harness import DAEMON_SETTINGS, Daemon, job_daemon

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="jobs run as their owners: root only")

CLUSTER = """\
nodes:
  - {name: local1, ncpus: 2, exec: local}
  - {name: r1, ncpus: 2}
  - {name: r2, ncpus: 2, properties: {pick: "yes"}}
scheduler: {schedule_interval: 1}
"""
WITHOUT_R2 = CLUSTER.replace('  - {name: r2, ncpus: 2, properties: {pick: "yes"}}\n', "")
BASE = DAEMON_SETTINGS
HAND_CLIENT = ("import json, sys\nfrom overlay.wire import protocol\n"
               "print(json.dumps(protocol.call(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))))")


@pytest.fixture(scope="module")
def daemon():
    with job_daemon(CLUSTER) as running:
        yield running


def wait_for(condition, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def edit_cluster(daemon: Daemon, content: bytes, stamp: int) -> None:
    """Rewrite cluster.yaml with a modification time of its own, so that the
    daemon sees each edit even within one clock tick."""
    path = daemon.dir / "cluster.yaml"
    path.write_bytes(content)
    os.utime(path, (stamp, stamp))


def ran(daemon: Daemon, job: str) -> bool:
    result = daemon.run("plusu1", "plus_qacct", "-j", job)
    return result.returncode == 0 and re.search(r"^failed\s+0\s*$", result.stdout, re.M) is not None


def submitted(output: str) -> str:
    match = re.match(r'Your job (\d+) \(".*"\) has been submitted', output)
    assert match, output
    return match.group(1)


def test_a_nul_byte_sent_over_the_socket_is_refused_and_jobs_still_run(daemon, work):
    for job in ({"command": ["true"], "binary": True, "cwd": str(work), "env": {"A": "x\0y"}},
                {"command": ["echo", "a\0b"], "binary": True, "cwd": str(work)}):
        result = daemon.run("plusu1", "python", "-c", HAND_CLIENT, str(daemon.socket),
                            "job_submit", json.dumps(job))
        assert result.returncode == 0, result.stderr
        reply = json.loads(result.stdout)
        assert not reply["ok"] and "without NUL bytes" in reply["error"], reply
    assert "plusu1" not in daemon.ok("root", "plus_qstat", "-u", "*")
    job = submitted(daemon.ok("plusu1", "plus_qsub", "-b", "y", "-wd", str(work), "true"))
    wait_for(lambda: ran(daemon, job), "an ordinary job to run")


def test_plus_qsub_on_an_ar_awaiting_commit_says_so(daemon, work):
    ar = daemon.reserve("plusu1", "-T", "-s", "now+1h", "-D", "1:0:0", "-n", "1")["id"]
    result = daemon.run("plusu1", "plus_qsub", "-ar", str(ar), "-b", "y", "true", cwd=str(work))
    assert (result.returncode, result.stderr) == (1, (
        f"Unable to run job: AR {ar} is pending: it takes jobs once plus_commit -r {ar} "
        "commits it\nExiting.\n"))
    daemon.ok("plusu1", "plus_commit", "-r", str(ar))
    submitted(daemon.ok("plusu1", "plus_qsub", "-ar", str(ar), "-b", "y", "true"))
    daemon.ok("plusu1", "plus_destroy", "-r", str(ar))


def test_a_reserved_node_removed_from_the_cluster_file_puts_its_ar_in_w(daemon):
    ar = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1:0:0", "-n", "1", "-l", "pick=yes",
                        "-repair", "none")["id"]                # W, as before self-repair
    assert [a["node"] for a in daemon.status("-r", str(ar))[0]["allocations"]] == ["r2"]
    try:
        edit_cluster(daemon, WITHOUT_R2.encode(), 1_000_000)
        wait_for(lambda: daemon.status("-r", str(ar))[0]["state"] == "W", "the AR to go to W")
        assert daemon.status("-r", str(ar))[0]["message"] == \
            "node r2 is no longer in the cluster file"
        assert "node r2 is no longer in the cluster file" in \
            daemon.ok("plusu1", "plus_status", "-r", str(ar))
    finally:
        edit_cluster(daemon, CLUSTER.encode(), 2_000_000)
    wait_for(lambda: daemon.status("-r", str(ar))[0]["state"] == "w", "the AR to be back in w")
    daemon.ok("plusu1", "plus_destroy", "-r", str(ar))


def test_an_emptied_cluster_file_keeps_every_node_with_one_warning(daemon, work):
    log = daemon.log
    before = log.read_text().count("keeping the last good cluster")
    try:
        edit_cluster(daemon, b"", 3_000_000)
        wait_for(lambda: log.read_text().count("keeping the last good cluster") > before,
                 "the warning")
        job = submitted(daemon.ok("plusu1", "plus_qsub", "-b", "y", "-wd", str(work), "true"))
        wait_for(lambda: ran(daemon, job), "a job to run on the last good cluster")
        instances = re.findall(r"^all\.q@(\S+)", daemon.ok("plusu1", "plus_qstat", "-f"), re.M)
        assert instances == ["local1", "r1", "r2"]
        text = log.read_text()
        assert text.count("keeping the last good cluster") == before + 1
        warning = next(line for line in reversed(text.splitlines())
                       if "keeping the last good cluster" in line)
        assert f"{daemon.dir / 'cluster.yaml'}: the file is empty" in warning
    finally:
        edit_cluster(daemon, CLUSTER.encode(), 4_000_000)


@pytest.mark.parametrize("content, problem", [
    (b"", "the file is empty"), (b"nodes:\n  - {name: caf\xe9}\n", "not UTF-8 text"),
    (b"[a, b]\n", "expected a mapping"), (b"nodes: []\n", "no nodes")],
    ids=["empty", "not UTF-8", "not a mapping", "no nodes"])
def test_an_unusable_cluster_file_stops_the_start_with_one_line(content, problem):
    stopped = Daemon(cluster="", base=BASE + "native: {cluster: cluster.yaml, local_host: false}\n")
    try:
        (stopped.dir / "cluster.yaml").write_bytes(content)
        stopped.start(wait=False)
        assert stopped.process.wait(timeout=60) == 1
        (line,) = stopped.log.read_text().splitlines()
        assert line.startswith(f"plus_scheduler: cannot start: {stopped.dir / 'cluster.yaml'}: ")
        assert problem in line
    finally:
        stopped.cleanup()
