"""A qrsub AR's queue instances that run no jobs (seed 000, 5.2.2.1.3 and
5.2.2.2.1; Son of Grid Engine 8.1.9's qmaster): disabled, suspended and
unknown instances are reserved, and while the AR holds one it is in W
(before its start) or E, with one message per instance in the qmaster's
words, "reserved queue all.q@n02 is disabled", and qrsub -m a's mail.
A native cluster edited by hand, a manager and its lifecycle, as in
test_mail, with a clock moved by hand; and what plus_qrstat shows of it
through a real daemon."""

from __future__ import annotations

import os
import time

import pytest

from daemon_harness import Daemon
from overlay.language.model import NoCapacity, Request, State
from test_mail import ALICE, HOUR, T0, make_env, smtp  # noqa: F401 (fixtures)

CLUSTER = """\
nodes:
  - {{name: n01, slots: 2}}
  - {{name: n02, slots: 2, alive: {alive}}}
  - {{name: n03, slots: 2, alive: {alive}}}
queues:
  - {{name: all.q, hostlist: [n01, n02, n03], disabled: {disabled}, suspended: {suspended}}}
"""


class Cluster:
    """The cluster file of an Env, rewritten by an administrator: each
    version a second later than the last, so that the backend, which
    compares modification times, sees every one however quick the test."""

    def __init__(self, env) -> None:
        self.env = env

    def set(self, alive: bool = True, disabled: str = "false", suspended: str = "false") -> None:
        path = self.env.cluster_file
        later = path.stat().st_mtime_ns + 1_000_000_000
        path.write_text(CLUSTER.format(alive=str(alive).lower(), disabled=disabled,
                                       suspended=suspended))
        os.utime(path, ns=(later, later))


@pytest.fixture
def env(smtp, make_env):  # noqa: F811
    made = make_env(f"host: 127.0.0.1\nport: {smtp.port}\nsender: plus@cluster.test\n")
    made.cluster = Cluster(made)
    made.cluster.set()
    made.tick_at(T0)
    return made


def qrsub(env, *instances: str, start: int = T0 + HOUR, **extra):
    """plus_qrsub -q INSTANCES -a START -d 1:0:0 (-pe-less: one slot each)."""
    request = Request(start=start, end=start + HOUR, nodes=0, queues=instances, **extra)
    return env.manager.reserve(ALICE, request)


def ar_log(env, ar_id: int) -> list[str]:
    lines = env.cluster_file.parent.joinpath("state", "reporting").read_text().splitlines()
    return [":".join(line.split(":")[5:]) for line in lines
            if ":ar_log:" in line and line.split(":")[4] == str(ar_id)]


def test_a_disabled_instance_is_granted_in_w_with_the_qmasters_words(env):
    env.cluster.set(disabled="[n02]")
    env.manager.refresh_nodes()               # the lifecycle's pass sees it: a grant sees it then
    ar = qrsub(env, "all.q@n02")
    assert ar.state == State.WARNING
    assert ar.message == "reserved queue all.q@n02 is disabled"
    assert ar_log(env, ar.id) == ["W:RESOURCES UNSATISFIED:AR resources unsatisfied"]
    assert env.manager.ars[ar.id].state == State.WARNING


def test_an_instance_on_a_host_down_is_reserved_with_one_message_each(env):
    env.cluster.set(alive=False)
    env.manager.refresh_nodes()
    ar = qrsub(env, "all.q@n02", "all.q@n03", pe_range=((2, 2),), alloc_rule="1")
    assert sorted(a.node for a in ar.allocations) == ["n02", "n03"]
    assert ar.state == State.WARNING
    assert ar.message == ("reserved queue all.q@n02 is unknown; "
                          "reserved queue all.q@n03 is unknown")
    env.cluster.set(alive=True)
    env.tick_at(T0 + 60)
    assert (env.manager.ars[ar.id].state, env.manager.ars[ar.id].message) == (State.WAITING, "")


def test_a_healthy_instance_is_granted_in_w_and_silent(env):
    ar = qrsub(env, "all.q@n02")
    assert (ar.state, ar.message) == (State.WAITING, "")
    assert ar_log(env, ar.id) == []


def test_suspending_a_reserved_instance_puts_the_ar_in_w_and_back(env):
    ar = qrsub(env, "all.q@n02")
    env.cluster.set(suspended="[n02]")
    env.tick_at(T0 + 60)
    held = env.manager.ars[ar.id]
    assert (held.state, held.message) == (State.WARNING, "reserved queue all.q@n02 is suspended")
    env.cluster.set()
    env.tick_at(T0 + 120)
    assert (env.manager.ars[ar.id].state, env.manager.ars[ar.id].message) == (State.WAITING, "")
    assert ar_log(env, ar.id) == ["W:RESOURCES UNSATISFIED:AR resources unsatisfied",
                                  "w:RESOURCES SATISFIED:AR resources satisfied"]


def test_a_disable_after_the_start_is_e_and_mailed_with_m_a(env, smtp):  # noqa: F811
    ar = qrsub(env, "all.q@n02", mail_options="a", hard_error=True)
    env.tick_at(ar.start)
    assert env.manager.ars[ar.id].state == State.RUNNING
    env.cluster.set(disabled="true")
    env.tick_at(ar.start + 60)
    held = env.manager.ars[ar.id]
    assert (held.state, held.message) == (State.ERROR, "reserved queue all.q@n02 is disabled")
    assert env.manager.backend.scheduler.windows[ar.id].blocked      # -he y: no job starts
    [error] = smtp.mails(1)
    assert error["Subject"] == f"Advance Reservation {ar.id} (none) Error"
    assert f"AR {ar.id} is in error state: reserved queue all.q@n02 is disabled" in \
        error.get_payload()


def test_node_ars_keep_refusing_hosts_down(env):
    env.cluster.set(alive=False)
    env.tick_at(T0 + 60)
    with pytest.raises(NoCapacity):
        env.manager.reserve(ALICE, Request(start=T0 + HOUR, end=T0 + 2 * HOUR, nodes=2))



DAEMON_CLUSTER = """\
nodes:
  - {name: up1, slots: 2, queues: [all.q]}
  - {name: down1, slots: 2, queues: [all.q], alive: false}
"""


def test_plus_qrstat_explains_an_ar_granted_on_a_host_down():
    """As a user sees it, through a real daemon: qrsub -q all.q@down1 is
    granted, and qrstat -explain and -ar say why the AR is in W."""
    daemon = Daemon(cluster=DAEMON_CLUSTER).start()
    try:
        start = time.strftime("%Y%m%d%H%M", time.localtime(time.time() + 3600))
        granted = daemon.run("plusu1", "plus_qrsub", "-q", "all.q@down1", "-a", start,
                             "-d", "1:0:0")
        assert granted.returncode == 0, granted.stderr
        ar_id = granted.stdout.split()[3]
        row, why = daemon.ok("plusu1", "plus_qrstat", "-explain").splitlines()[2:4]
        assert row.split()[:3] == [ar_id, "plusu1", "W"]      # no name: an empty column
        assert why == "       reserved queue all.q@down1 is unknown"
        detail = daemon.ok("plusu1", "plus_qrstat", "-ar", ar_id)
        assert "message                        reserved queue all.q@down1 is unknown" in detail
    finally:
        daemon.cleanup()
