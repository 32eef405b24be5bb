"""A real plus_scheduler in a world-readable folder, and the installed
commands run as real users (runuser), as a site would run them."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Iterator

VENV = os.environ.get("PLUS_VENV", "/opt/plus-venv")
BIN = Path(VENV) / "bin"
CLUSTER = """\
nodes:
  - {name: "n[01-04]", slots: 4, memory: 16G, ncpus: 4, arch: lx-amd64, os: linux, queues: [all.q]}
  - {name: big, slots: 16, memory: 256G, ncpus: 32, arch: lx-amd64, os: linux,
     queues: [all.q, big.q], properties: {gpu: "yes"}}
"""
DAEMON_SETTINGS = """\
state_dir: state
managers: [root, plusmgr]
arusers: ["@plusgrp", plusmgr]
duration_offset: 1
reconcile_interval: 1
http: {address: "off"}
"""
"""The daemon's settings every test daemon shares, whatever its backend (no
HTTP API: tests of it name a free port; a later http: mapping wins)."""
BASE_SETTINGS = DAEMON_SETTINGS + "native: {cluster: cluster.yaml, local_host: false}\n"


class Daemon:
    """One plus_scheduler process and its configuration."""

    def __init__(self, settings: str = "", store: str | None = None, cluster: str = CLUSTER,
                 base: str = BASE_SETTINGS, files: dict[str, str] | None = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="plus-test-", dir="/tmp"))
        os.chmod(self.dir, 0o755)
        (self.dir / "cluster.yaml").write_text(textwrap.dedent(cluster))
        for name, text in (files or {}).items():      # files the configuration names
            (self.dir / name).write_text(text)
        self.conf = self.dir / "plus.yaml"
        text = base + textwrap.dedent(settings)
        if store:
            text += f"store: {store}\n"
        self.conf.write_text(text)
        self.process: subprocess.Popen | None = None
        self.wrapped = False
        self.log = self.dir / "daemon.log"

    @property
    def env(self) -> dict:
        return {**os.environ, "PLUS_CONF": str(self.conf)}

    @property
    def socket(self) -> Path:
        return self.dir / "state" / "plus.sock"

    def start(self, *options: str, wait: bool = True, wrapper: tuple[str, ...] = ()) -> "Daemon":
        """Start plus_scheduler (under ``wrapper``, e.g. prlimit's argv, if
        given: in a process group of its own, as a wrapper such as faketime
        forks the daemon and passes no signal on)."""
        with open(self.log, "a") as log:
            self.process = subprocess.Popen([*wrapper, str(BIN / "plus_scheduler"), *options],
                                            env=self.env, start_new_session=bool(wrapper),
                                            stdout=log, stderr=subprocess.STDOUT, cwd="/")
        self.wrapped = bool(wrapper)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"plus_scheduler exited: {self.log.read_text()}")
            if self.socket.exists() and self.run("root", "plus_status").returncode == 0:
                return
            time.sleep(0.05)
        raise RuntimeError(f"plus_scheduler did not start: {self.log.read_text()}")

    def send(self, number: int) -> None:
        """``number`` to the daemon (and to its wrapper's whole group)."""
        if self.wrapped:
            os.killpg(self.process.pid, number)
        else:
            self.process.send_signal(number)

    def reread(self, text: str, expected: str) -> str:
        """Write ``text`` over plus.yaml, send SIGHUP and wait for the log
        line containing ``expected``; the log's new part. A test that needs
        a live key's new value now (a commit_timeout that lapses, an
        expiry) sets it so, rather than waiting for the clock."""
        before = len(self.log.read_text())
        self.conf.write_text(text)
        self.send(signal.SIGHUP)
        deadline = time.monotonic() + 120
        while expected not in self.log.read_text()[before:]:
            assert time.monotonic() < deadline, f"no log line {expected!r} after SIGHUP"
            time.sleep(0.05)
        assert self.process.poll() is None, self.log.read_text()
        return self.log.read_text()[before:]

    def kill9(self) -> None:
        self.send(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.send(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill9()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def run(self, user: str, command: str, *args: str, env: dict | None = None,
            cwd: str = "/", stdin: str | None = None) -> subprocess.CompletedProcess:
        """An installed command as ``user``, with PLUS_CONF naming this daemon."""
        argv = [str(BIN / command), *args]
        extra = [f"{k}={v}" for k, v in (env or {}).items()]
        if user != "root":
            argv = ["runuser", "-u", user, "--", "env", f"PLUS_CONF={self.conf}", *extra, *argv]
        elif extra:
            argv = ["env", *extra, *argv]
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, cwd=cwd,
                              timeout=60, input=stdin)

    def ok(self, user: str, command: str, *args: str) -> str:
        result = self.run(user, command, *args)
        assert result.returncode == 0, f"{command} {args}: {result.returncode} {result.stderr}"
        return result.stdout

    def status(self, *args: str) -> list[dict]:
        return json.loads(self.ok("root", "plus_status", "--json", *args) or "[]")

    def reserve(self, user: str, *args: str) -> dict:
        return json.loads(self.ok(user, "plus_reserve", "--json", *args))


@contextlib.contextmanager
def job_daemon(cluster: str, native_options: str = "", settings: str = "") -> Iterator[Daemon]:
    """A running daemon of the native backend whose jobs really run: its
    own spool folder, readable by the jobs' owners, removed with it;
    ``settings`` (YAML) add to its configuration."""
    spool = tempfile.mkdtemp(prefix="plus-spool-")
    os.chmod(spool, 0o755)
    options = ", ".join(filter(None, ["cluster: cluster.yaml, local_host: false",
                                      f"spool_dir: {spool}", native_options]))
    running = Daemon(f"native: {{{options}}}\n{settings}", cluster=cluster, base=DAEMON_SETTINGS)
    try:
        yield running.start()
    finally:
        running.cleanup()
        shutil.rmtree(spool, ignore_errors=True)


def released_when_idle(daemon: Daemon, view: dict, idle: int, timeout: float = 60) -> dict:
    """The AR of ``view``, made with --idle-release ``idle`` and given no
    job, once it is released: said so, at least ``idle`` after its start
    and before its end."""
    deadline = time.monotonic() + timeout
    while (ar := daemon.status("-ne", "5", "-r", str(view["id"]))[0])["state"] != "x":
        assert time.monotonic() < deadline, f"AR {view['id']} not released within {timeout} s"
        time.sleep(0.2)
    assert ar["message"] == f"released: no job ran in it for {idle} s (idle_release)"
    assert view["start"] + idle <= ar["released"] < view["end"]
    return ar


def used_by_the_job(daemon: Daemon, ar_id: int, job_id: str, seconds: int,
                    timeout: float = 120) -> None:
    """The job ``job_id``, run ``seconds`` in AR ``ar_id`` on a backend
    whose accounting the overlay does not read, once the leader saw it end:
    one ar_job record of it in the reporting file, from its start to the
    pass that saw it gone, and plus_account -l's used-nh of the AR its
    node-hours, not 0."""
    reporting = daemon.dir / "state" / "reporting"
    record = re.compile(rf"^(\d+):ar_job:\d+:\d+:{ar_id}:{re.escape(job_id)}:plusu1:(\d+):(\S+)$",
                        re.MULTILINE)
    deadline = time.monotonic() + timeout
    while not (found := record.findall(reporting.read_text() if reporting.exists() else "")):
        assert time.monotonic() < deadline, f"no ar_job record of job {job_id} in {timeout} s"
        time.sleep(0.5)
    [(end, start, hosts)] = found
    ran = int(end) - int(start)
    assert seconds <= ran < seconds + 60, f"job {job_id} ran {seconds} s, recorded {ran} s"
    [row] = [line for line in daemon.ok("plusu1", "plus_account", "-l").splitlines()
             if line.split()[:1] == [str(ar_id)]]
    used = row.split()[-2]
    assert used == f"{ran * len(hosts.split(',')) / 3600:.2f}" and float(used) > 0, row
