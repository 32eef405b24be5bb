"""Daemons (two, or more) on a PostgreSQL server of their own, each on an
isolated host (a network namespace) of its own, with a backend that writes down
every call: what the fault tests (tests/test_ha_faults.py) and
scripts/ha_chaos.py do their worst to."""

from __future__ import annotations

import json
import re
import signal
import tempfile
import time
from pathlib import Path

from counting_backend import calls
from daemon_harness import CLUSTER, DAEMON_SETTINGS, Daemon
from isolated_host import IsolatedHost
from overlay.wire import protocol
from private_pg import PrivatePostgres

TESTS = Path(__file__).resolve().parent
SETTINGS = DAEMON_SETTINGS + """\
backend: counting
plugins: [counting_backend]
"""
COUNTING = "cluster: cluster.yaml, local_host: false"
"""The counting (native) backend's section; a world may add to it (a spool_dir)."""
TOOK_LEAD = "taking the lead"
STOOD_DOWN = "standing by: lost the store to"


class Member:
    """One daemon and the host it runs on."""

    def __init__(self, index: int, server: PrivatePostgres, host: IsolatedHost,
                 counting_log: Path, settings: str, cluster: str) -> None:
        self.index, self.host, self.counting_log = index, host, counting_log
        self.daemon = Daemon(settings, store=server.url(host.here), base=SETTINGS,
                             cluster=cluster)

    @property
    def pid(self) -> int:
        return self.daemon.process.pid

    def start(self) -> None:
        self.daemon.start(wrapper=(*self.host.wrapper, "env", f"PYTHONPATH={TESTS}",
                                   f"PLUS_COUNTING_LOG={self.counting_log}"))

    def alive(self) -> bool:
        return self.daemon.process is not None and self.daemon.process.poll() is None

    def said(self, words: str) -> int:
        return self.daemon.log.read_text().count(words)

    def leads(self) -> bool:
        """Whether it says so (plus_scheduler --status's question, asked here)."""
        try:
            reply = protocol.call(str(self.daemon.socket), "daemons", {}, timeout=30)
        except protocol.ProtocolError:
            return False
        return bool(reply.get("ok") and reply["data"]["leading"])

    def power_off(self) -> None:
        """The link first, so that nothing the kernel says for the killed
        process reaches the server: it hears silence, as from a dead host."""
        self.host.cut()
        self.daemon.kill9()

    def power_on(self) -> None:
        self.host.mend()
        self.start()

    def stop(self) -> None:
        self.daemon.send(signal.SIGTERM)
        self.daemon.process.wait(timeout=60)


class World:
    """The server, ``count`` hosts and their daemons; ``members[0]`` started
    first (it leads). ``counting`` adds options to the backend's section
    (a spool_dir, for jobs that really run on a host of ``cluster``)."""

    def __init__(self, settings: str = "", count: int = 2, cluster: str = CLUSTER,
                 counting: str = "") -> None:
        self.hosts = [IsolatedHost(i) for i in range(count)]
        self.server = PrivatePostgres(tuple(host.here for host in self.hosts),
                                      tuple(host.there for host in self.hosts))
        self.counting_log = Path(tempfile.mkdtemp(prefix="plus-calls-")) / "calls"
        section = ", ".join(filter(None, [COUNTING, counting]))
        settings = f"counting: {{{section}}}\n{settings}"
        self.members = [Member(i, self.server, host, self.counting_log, settings, cluster)
                        for i, host in enumerate(self.hosts)]

    def start(self) -> None:
        self.server.start()
        for member in self.members:
            member.start()
        wait_for(lambda: all(m.said("standby:") for m in self.members[1:]),
                 "the other daemons to stand by")

    def leader(self, timeout: float = 120) -> Member:
        """The one member that says it leads (waits for exactly one)."""
        deadline = time.monotonic() + timeout
        while True:
            leading = [m for m in self.members if m.alive() and m.leads()]
            if len(leading) == 1:
                return leading[0]
            assert time.monotonic() < deadline, f"{len(leading)} daemons lead"
            time.sleep(0.05)

    def other(self, member: Member) -> Member:
        """The next member after ``member`` (the other one, of two)."""
        return self.members[(member.index + 1) % len(self.members)]

    def calls(self) -> list[tuple[int, str, list[int]]]:
        return calls(str(self.counting_log))

    def remove(self) -> None:
        for member in self.members:
            member.daemon.cleanup()
        self.server.remove()
        for host in self.hosts:
            host.remove()
        self.counting_log.unlink(missing_ok=True)
        self.counting_log.parent.rmdir()


def reserve(member: Member, user: str, *args: str) -> tuple[int, dict | str]:
    """plus_reserve --json at ``member``: (exit status, the AR or the message)."""
    done = member.daemon.run(user, "plus_reserve", "--json", *args)
    return done.returncode, json.loads(done.stdout) if done.returncode == 0 else done.stderr.strip()


CLEAR_REFUSAL = re.compile(r"the store .* failed \(.*\); nothing was changed|"
                           r"cannot reach plus_scheduler")
"""What a command may say while the store cannot be reached."""


def wait_for(condition, what: str, timeout: float = 120) -> float:
    """Seconds until ``condition`` held (checked every 50 ms)."""
    began = time.monotonic()
    while not condition():
        assert time.monotonic() - began < timeout, f"timed out waiting for {what}"
        time.sleep(0.05)
    return time.monotonic() - began
