"""The Grid Engine backend against the real Grid Engine test cluster: every
step of PluS's queue-based mode (seed 004, 3.1), the conflict policies,
health, and convergence after a crash between any two commands."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from crashing_runner import CrashingRunner
from overlay.contract.backend import Inventory
from overlay.kit.remote import CommandError
from overlay.kit.ssh import SshRunner
from overlay.language.model import Request, State
from overlay.language.request import RequestError
from overlay_sge import objects
from sge_cluster import (
    backend,
    clean,
    instance_states,
    job_states,
    names,
    require,
    reservation,
    sh,
    submit,
    wait_for,
)

SCHEDULE = 15
"""Long enough for the 4 s scheduling interval to have passed several times."""


@pytest.fixture(autouse=True)
def cluster():
    require()
    clean()
    yield
    clean()


def queue_config(ar_id: int) -> dict[str, str]:
    return objects.parse_config(sh("qconf", "-sq", f"R{ar_id}", check=True).stdout)


def ar_submit(user: str, ar_id: int, *args: str) -> str:
    return submit(user, "-w", "e", "-q", f"R{ar_id}", "-l", f"plus_rsv=R{ar_id}", *args)


def test_grant_creates_the_objects_with_every_instance_suspended(tmp_path):
    sge = backend(tmp_path)
    ar = reservation(101, ("node1", "node2"), users=("plusu1", "@plusgrp"))
    sge.prepare(ar)
    assert sh("qconf", "-shgrp_resolved", "@R101_hosts", check=True).stdout.split() == ["node1", "node2"]
    userset = objects.parse_config(sh("qconf", "-su", "R101_users", check=True).stdout)
    assert userset["type"] == "ACL"
    assert userset["entries"] == "plusu1,@plusgrp,plusu2"      # supplementary members by name
    queue = queue_config(101)
    assert queue["hostlist"] == "@R101_hosts" and queue["user_lists"] == "R101_users"
    assert queue["complex_values"] == "plus_rsv=R101" and queue["initial_state"] == "default"
    states = instance_states()
    assert states["R101@node1"] == "s" and states["R101@node2"] == "s"
    job = ar_submit("plusu2", 101, "sleep", "60")        # plusu2 is in @plusgrp
    time.sleep(SCHEDULE)
    assert job_states()[job][0] == "qw"
    assert sge.submit_hint(ar) == "qsub -w e -q R101 -l plus_rsv=R101 job.sh"
    assert sge.health([ar]) == {}


def test_prepare_is_idempotent_and_corrects_drift(tmp_path):
    sge = backend(tmp_path)
    ar = reservation(102, ("node1",))
    sge.prepare(ar)
    sge.prepare(ar)
    sh("qmod", "-usq", "R102", check=True)                  # someone resumes it by hand
    sh("qconf", "-rattr", "queue", "user_lists", "NONE", "R102", check=True)
    assert sge.health([ar]) == {}                            # noticed, not an error
    sge.prepare(ar)
    assert instance_states()["R102@node1"] == "s"
    assert queue_config(102)["user_lists"] == "R102_users"
    fresh = backend(tmp_path)                                # as after a restart
    fresh.prepare(ar)
    assert names("-sql") == {"all.q", "R102"}


def test_only_listed_users_with_the_forced_request_enter_the_ar_queue(tmp_path):
    sge = backend(tmp_path)
    ar = reservation(103, ("node1",), state=State.RUNNING, start_in=-5)
    sge.prepare(ar)
    sge.activate(ar)
    refused = sh("qsub", "-w", "e", "-q", "R103", "-l", "plus_rsv=R103", "-b", "y", "true", user="plusu3")
    assert refused.returncode != 0 and "no suitable queues" in refused.stdout + refused.stderr
    member = ar_submit("plusu1", 103, "sleep", "60")
    normal = submit("plusu1", "-l", "h=node1", "sleep", "60")
    wait_for(lambda: job_states()[member] == ("r", "R103@node1"), SCHEDULE, "the AR job to run")
    time.sleep(5)
    assert job_states()[normal] == ("qw", "")               # never in R103, all.q@node1 suspended


def test_a_claimed_job_is_submitted_as_the_owner_into_the_ar_queue(tmp_path):
    sge = backend(tmp_path)
    ar = reservation(104, ("node1",), state=State.RUNNING, start_in=-5, users=("plusu2",))
    sge.prepare(ar)
    sge.activate(ar)
    answer = sge.submit_claimed(ar, {"script": "sleep 60\n", "name": "claimed", "cwd": "/tmp",
                                     "stdout": "/dev/null", "merge": True})
    assert answer["message"] == f'Your job {answer["id"]} ("claimed") has been submitted'
    wait_for(lambda: job_states()[answer["id"]] == ("r", "R104@node1"), SCHEDULE,
             "the claimed job to run in the AR's queue")
    owner = sh("qstat", "-j", answer["id"], check=True).stdout
    assert "owner:                      plusu2" in owner
    with pytest.raises(RequestError, match="^job: field 'binary' is not taken by Grid Engine"):
        sge.submit_claimed(ar, {"script": "true", "binary": True})


def test_activate_suspends_normal_instances_on_the_hosts_and_teardown_resumes_them(tmp_path):
    sge = backend(tmp_path)
    sh("qmod", "-sq", "all.q@node2", check=True)             # an administrator's suspension
    ar = reservation(104, ("node1", "node2"), state=State.RUNNING, start_in=-5)
    sge.prepare(ar)
    sge.activate(ar)
    states = instance_states()
    assert states["all.q@node1"] == "s" and states["all.q@node2"] == "s"
    assert states["all.q@node3"] == "" and states["R104@node1"] == ""
    sge.teardown(ar)
    states = instance_states()
    assert states["all.q@node1"] == "" and states["all.q@node2"] == "s"   # the admin's stays
    assert not any(name.startswith("R104") for name in states)
    assert "R104" not in names("-sql") and "R104_users" not in names("-sul")
    assert "@R104_hosts" not in names("-shgrpl")


def test_a_host_held_by_two_open_ars_resumes_after_the_last(tmp_path):
    sge = backend(tmp_path)
    first = reservation(105, ("node1",), state=State.RUNNING, start_in=-5, slots=1)
    second = reservation(106, ("node1",), state=State.RUNNING, start_in=-5, slots=1)
    for ar in (first, second):
        sge.prepare(ar)
        sge.activate(ar)
    sge.teardown(first)
    assert instance_states()["all.q@node1"] == "s"
    sge.teardown(second)
    assert instance_states()["all.q@node1"] == ""


def test_modify_applies_hosts_users_and_window_to_the_live_objects(tmp_path):
    sge = backend(tmp_path)
    before = reservation(107, ("node1",))
    sge.prepare(before)
    after = reservation(107, ("node1", "node3"), users=("plusu1", "plusu2"), duration=7200)
    sge.modify(before, after)
    assert sh("qconf", "-shgrp_resolved", "@R107_hosts", check=True).stdout.split() == ["node1", "node3"]
    assert objects.parse_config(sh("qconf", "-su", "R107_users").stdout)["entries"] == "plusu1,plusu2"
    states = instance_states()
    assert states["R107@node1"] == "s" and states["R107@node3"] == "s"   # the new host too
    assert queue_config(107)["h_rt"] in ("01:59:00", "7140")
    assert queue_config(107)["initial_state"] == "default"


def test_cancel_releases_the_hosts_and_keeps_the_queue(tmp_path):
    sge = backend(tmp_path)
    ar = reservation(108, ("node1",), state=State.RUNNING, start_in=-5)
    sge.prepare(ar)
    sge.activate(ar)
    job = ar_submit("plusu1", 108, "sleep", "300")
    wait_for(lambda: job_states().get(job, ("",))[0] == "r", SCHEDULE, "the AR job to run")
    ar.state = State.DELETED
    sge.release(ar)
    assert queue_config(108)["hostlist"] == "NONE"
    assert job not in job_states()
    assert instance_states()["all.q@node1"] == ""
    sge.teardown(ar)                                          # plus_destroy
    assert "R108" not in names("-sql")


def test_requeue_moves_a_foreign_job_off_the_hosts_as_its_owner(tmp_path):
    sge = backend(tmp_path)
    foreign = submit("plusu2", "-l", "h=node1", "-N", "longrun", "sleep", "600")
    wait_for(lambda: job_states().get(foreign, ("",))[0] == "r", SCHEDULE, "the foreign job to run")
    ar = reservation(109, ("node1",), state=State.RUNNING, start_in=-5)
    sge.prepare(ar)
    sge.activate(ar)
    jobs = job_states("plusu2")
    assert foreign not in jobs
    [copy] = [j for j, (state, _) in jobs.items() if state == "qw"]
    assert int(copy) > int(foreign)
    assert sh("qstat", "-j", copy, check=True).stdout.count("longrun") >= 1
    sge.teardown(ar)
    wait_for(lambda: job_states("plusu2").get(copy, ("",))[0] == "r", SCHEDULE, "the copy to run")
    assert job_states("plusu2")[copy][1] == "all.q@node1"


def test_a_requeue_interrupted_after_qresub_makes_no_second_copy(tmp_path):
    sge = backend(tmp_path)
    foreign = submit("plusu2", "-l", "h=node1", "-N", "longrun", "sleep", "600")
    wait_for(lambda: job_states().get(foreign, ("",))[0] == "r", SCHEDULE, "the foreign job to run")
    ar = reservation(110, ("node1",), state=State.RUNNING, start_in=-5)
    sge.prepare(ar)
    sge.ledger.claim(110)
    from overlay_sge.ledger import Requeue
    sge.ledger.note_requeue(Requeue(foreign, "plusu2", int(time.time()) - 1))
    sh("qmod", "-sj", foreign, check=True)
    sh("qresub", foreign, user="plusu2", check=True)         # the daemon died right here
    backend(tmp_path).activate(ar)
    jobs = job_states("plusu2")
    assert foreign not in jobs and len(jobs) == 1


def test_kill_deletes_foreign_jobs(tmp_path):
    sge = backend(tmp_path, conflict="kill")
    foreign = submit("plusu2", "-l", "h=node1", "sleep", "600")
    wait_for(lambda: job_states().get(foreign, ("",))[0] == "r", SCHEDULE, "the foreign job to run")
    ar = reservation(111, ("node1",), state=State.RUNNING, start_in=-5)
    sge.prepare(ar)
    sge.activate(ar)
    assert job_states("plusu2") == {}


def test_avoid_blocks_hosts_whose_jobs_outlast_the_start(tmp_path):
    sge = backend(tmp_path, conflict="avoid")
    endless = submit("plusu2", "-l", "h=node1", "sleep", "600")
    short = submit("plusu2", "-l", "h=node2,h_rt=120", "sleep", "100")
    wait_for(lambda: all(job_states().get(j, ("",))[0] == "r" for j in (endless, short)),
             SCHEDULE, "both jobs to run")
    def starting_in(seconds: int) -> Request:
        return Request(start=int(time.time()) + seconds, end=int(time.time()) + seconds + 60, nodes=1)
    seen = Inventory(tuple(sge.running_jobs()), int(time.time()))
    later = sge.blocked_nodes(starting_in(3600), seen)
    assert set(later) == {"node1"} and "has no h_rt" in later["node1"]
    soon = sge.blocked_nodes(starting_in(30), seen)
    assert set(soon) == {"node1", "node2"} and "runs past the start" in soon["node2"]
    assert backend(tmp_path).blocked_nodes(starting_in(30), seen) == {}   # requeue: nothing blocked


@pytest.mark.parametrize("conflict", ["avoid", "requeue"])
def test_jobs_that_would_overrun_the_window_are_kept_off_its_hosts_from_the_grant(tmp_path,
                                                                                  conflict):
    """Nodes cleared ahead (issue 33): in every conflict mode, not only avoid."""
    sge = backend(tmp_path, conflict=conflict)
    ar = reservation(124, ("node2",), start_in=300, duration=300)
    sge.prepare(ar)
    assert objects.parse_config(sh("qconf", "-sq", "all.q@node2").stdout)["calendar"] == "plus_node2"
    assert "=off" in objects.parse_config(sh("qconf", "-scal", "plus_node2", check=True).stdout)["year"]
    endless = submit("plusu2", "-l", "h=node2", "sleep", "600")
    fits = submit("plusu2", "-l", "h=node2,h_rt=60", "sleep", "4")
    overruns = submit("plusu2", "-l", "h=node2,h_rt=600", "sleep", "60")
    wait_for(lambda: job_states().get(fits, ("ran",))[0] in ("r", "ran"), SCHEDULE,
             "the job that ends in time to run")
    time.sleep(5)
    assert job_states()[endless][0] == "qw" and job_states()[overruns][0] == "qw"
    sge.teardown(ar)
    assert "plus_node2" not in names("-scall")
    assert objects.parse_config(sh("qconf", "-sq", "all.q@node2").stdout)["calendar"] == "NONE"
    wait_for(lambda: all(job_states()[j][0] == "r" for j in (endless, overruns)), SCHEDULE,
             "the held-off jobs to run once the AR is gone")


def test_hard_error_keeps_the_ar_queue_suspended_soft_does_not(tmp_path):
    sge = backend(tmp_path)
    hard = reservation(112, ("node1",), state=State.ERROR, start_in=-5, hard_error=True)
    soft = reservation(113, ("node2",), state=State.ERROR, start_in=-5)
    for ar in (hard, soft):
        sge.prepare(ar)
        sge.activate(ar)
    states = instance_states()
    assert states["R112@node1"] == "s" and states["R113@node2"] == ""
    hard.state = State.RUNNING
    sge.activate(hard)
    assert instance_states()["R112@node1"] == ""


def test_health_reports_instances_in_error_or_disabled(tmp_path):
    sge = backend(tmp_path)
    ar = reservation(114, ("node1", "node2"))
    sge.prepare(ar)
    assert sge.health([ar]) == {}
    sh("qmod", "-d", "R114@node2", check=True)
    assert sge.health([ar]) == {114: "R114@node2 disabled"}
    sh("qmod", "-e", "R114@node2", check=True)
    assert sge.health([ar]) == {}


def test_a_reserved_host_going_down_is_an_error_until_it_comes_back(tmp_path):
    sge = backend(tmp_path)
    ar = reservation(122, ("node3",))
    sge.prepare(ar)
    sh("qconf", "-ke", "node3", check=True)                   # its execd stops
    try:
        wait_for(lambda: "u" in instance_states().get("R122@node3", ""), 20, "node3 to be unknown")
        assert sge.health([ar]) == {122: "R122@node3 unknown (host down or execd unreachable)"}
        assert not {n.name: n for n in sge.nodes()}["node3"].alive
    finally:
        subprocess.run(["bash", str(Path(__file__).parents[1] / "scripts" / "sge-hosts.sh"), "up"],
                       capture_output=True, check=True)
    wait_for(lambda: sge.health([ar]) == {}, 60, "node3 to come back")
    assert instance_states()["R122@node3"] == "s"


def test_nodes_come_from_qhost(tmp_path):
    sge = backend(tmp_path)
    sge.prepare(reservation(115, ("node1",)))
    nodes = {n.name: n for n in sge.nodes()}
    assert set(nodes) == {"vm", "node1", "node2", "node3"}
    node1 = nodes["node1"]
    assert node1.slots == 2 and node1.queues == ("all.q",)       # R115 is not a normal queue
    assert node1.alive and node1.arch == "lx-amd64" and node1.os == "linux"
    assert node1.ncpus >= 1 and node1.memory_mb > 100 and node1.properties["arch"] == "lx-amd64"


def test_reconcile_removes_what_ars_the_store_forgot_left_behind(tmp_path):
    sge = backend(tmp_path)
    kept = reservation(116, ("node1",), state=State.RUNNING, start_in=-5)
    gone = reservation(117, ("node2",), state=State.RUNNING, start_in=-5)
    for ar in (kept, gone):
        sge.prepare(ar)
        sge.activate(ar)
    backend(tmp_path).reconcile([kept])                      # a restart after 117 was destroyed
    assert names("-sql") == {"all.q", "R116"}
    states = instance_states()
    assert states["all.q@node2"] == "" and states["all.q@node1"] == "s"
    ledger = json.loads((tmp_path / "sge-ledger.json").read_text())
    assert ledger["ars"] == [116] and ledger["suspended"] == ["all.q@node1"]


def test_a_crash_between_any_two_commands_converges(tmp_path):
    """Grant, open, close one AR with a crash after k commands, for every k;
    a new backend on the same ledger then brings Grid Engine to the state
    the store says: objects as they should be, nothing orphaned."""
    env = backend(tmp_path).settings.environment
    k = 0
    while True:
        state_dir = tmp_path / str(k)
        state_dir.mkdir()
        crashing = backend(state_dir, runner=CrashingRunner(env, k))
        ar = reservation(120, ("node1", "node2"), start_in=-5)
        crashed_in = None
        for step, state in (("prepare", State.WAITING), ("activate", State.RUNNING),
                            ("teardown", State.EXITED)):
            ar.state = state
            try:
                if step == "activate":
                    crashing.prepare(ar)
                getattr(crashing, step)(ar)
            except Exception:
                crashed_in = step
                break
        if crashed_in is None:
            break
        recovered = backend(state_dir)
        if ar.state == State.EXITED:
            recovered.teardown(ar)
            recovered.reconcile([ar])
            assert names("-sql") == {"all.q"}, f"crash after {k} commands"
            assert "R120_users" not in names("-sul") and "@R120_hosts" not in names("-shgrpl")
            assert instance_states()["all.q@node1"] == "", f"crash after {k} commands"
        else:
            recovered.prepare(ar)
            if ar.state == State.RUNNING:
                recovered.activate(ar)
            recovered.reconcile([ar])
            states = instance_states()
            expected = "" if ar.state == State.RUNNING else "s"
            assert states["R120@node1"] == expected and states["R120@node2"] == expected, \
                f"crash after {k} commands in {crashed_in}: {states}"
            assert queue_config(120)["initial_state"] == "default"
            normal = "s" if ar.state == State.RUNNING else ""
            assert states["all.q@node1"] == normal, f"crash after {k} commands"
            recovered.teardown(ar)
        assert names("-sql") == {"all.q"} and instance_states()["all.q@node1"] == ""
        k += 1
    assert k > 10                                             # the cycle really has many commands


def test_the_ssh_runner_drives_grid_engine_on_the_master(tmp_path):
    runner = SshRunner("127.0.0.1", 2222, "root", key_file="/etc/plus-test/ssh/id_ed25519",
                       known_hosts="/etc/plus-test/ssh/known_hosts",
                       env={"SGE_ROOT": "/var/lib/gridengine", "SGE_CELL": "default"})
    try:
        runner.run(["true"], timeout=10)
    except CommandError as exc:
        pytest.fail(f"the test sshd (scripts/test-sshd.sh) is not reachable: {exc}")
    sge = backend(tmp_path, runner=runner)
    ar = reservation(121, ("node2",), state=State.RUNNING, start_in=-5)
    sge.prepare(ar)
    sge.activate(ar)
    assert instance_states()["all.q@node2"] == "s" and instance_states()["R121@node2"] == ""
    sge.teardown(ar)
    assert names("-sql") == {"all.q"} and instance_states()["all.q@node2"] == ""
    runner.close()
