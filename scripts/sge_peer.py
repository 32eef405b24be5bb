"""Grid Engine beside our benchmarks: 1,000 configuration-only execution
hosts on the test set-up's qmaster, ARs made with its own qrsub, and its
commands and qmaster measured the way ours are.

The hosts need no execd: each name resolves to an address of its own in
127.1.0.0/16 (lines between markers in /etc/hosts), and a hostgroup @bench
with a one-slot queue bench.q holds them. The ARs are named plusbench.
A qmaster may be a site's: ``setup`` refuses a queue or group of these
names that it did not make, and ``teardown`` removes by name exactly what
``setup`` added (the ARs named plusbench of this user, by id, then the
queue, group, hosts and /etc/hosts lines), nothing else. Run as root
(scripts/sge-setup.sh has run).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ENV = {**os.environ, "SGE_ROOT": "/var/lib/gridengine", "SGE_CELL": "default"}
BIN = Path("/usr/lib/gridengine")          # the binaries, not Debian's wrappers (about 55 ms more)
HOSTS_FILE = Path("/etc/hosts")
BEGIN, END = "# plus bench hosts: begin", "# plus bench hosts: end"
QUEUE, GROUP = "bench.q", "@bench"
AR_NAME = "plusbench"
"""qrsub -N of every AR the benchmarks make: teardown deletes these only."""


@dataclass
class Added:
    """What setup added, filled as it goes: teardown removes exactly this."""

    hosts: list[str] = field(default_factory=list)
    group: bool = False
    queue: bool = False
    hosts_file: bool = False


def available() -> bool:
    """A qmaster answers and we may configure it."""
    if os.geteuid() != 0 or shutil.which("qconf") is None or not (BIN / "qrsub").exists():
        return False
    return run("qconf", "-sh", check=False).returncode == 0


def run(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(list(argv), env=ENV, capture_output=True, text=True, cwd="/tmp")
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:3])} failed: {result.stderr.strip() or result.stdout.strip()}")
    return result


def host_names(count: int) -> list[str]:
    return [f"bh{n:04d}" for n in range(1, count + 1)]


def _qconf_file(option: str, text: str) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as handle:
        handle.write(text)
    try:
        run("qconf", option, handle.name)
    finally:
        os.unlink(handle.name)


def setup(count: int, added: Added) -> None:
    """``count`` hosts, their group and the one-slot queue on them, each
    recorded in ``added`` once made (call teardown(added) even if this fails)."""
    for exists, what in ((["-shgrp", GROUP], f"host group {GROUP}"), (["-sq", QUEUE], f"queue {QUEUE}")):
        if run("qconf", *exists, check=False).returncode == 0:
            raise RuntimeError(f"the qmaster already has a {what}, which this run did not make; "
                               "if an interrupted benchmark left it, delete it with qconf")
    names = host_names(count)
    text = HOSTS_FILE.read_text()
    if BEGIN not in text:
        lines = [f"127.1.{n // 250}.{n % 250 + 1} {name}" for n, name in enumerate(names)]
        HOSTS_FILE.write_text(text.rstrip("\n") + "\n" + "\n".join([BEGIN, *lines, END]) + "\n")
        added.hosts_file = True
    known = set(run("qconf", "-sel", check=False).stdout.split())
    deadline = time.time() + 300
    for name in names:
        while name not in known:
            try:
                _qconf_file("-Ae", f"hostname {name}\nload_scaling NONE\ncomplex_values NONE\n"
                                   "user_lists NONE\nxuser_lists NONE\nprojects NONE\nxprojects NONE\n"
                                   "usage_scaling NONE\nreport_variables NONE\n")
                known.add(name)
                added.hosts.append(name)
            except RuntimeError as error:
                # the qmaster remembers for a few minutes a name that did not resolve
                if "can't resolve" not in str(error) or time.time() > deadline:
                    raise
                time.sleep(10)
    _qconf_file("-Ahgrp", f"group_name {GROUP}\nhostlist {' '.join(names)}\n")
    added.group = True
    queue = run("qconf", "-sq", "all.q").stdout
    lines = []
    for line in queue.splitlines():
        key = line.split(" ", 1)[0]
        if key == "qname":
            line = f"qname {QUEUE}"
        elif key == "hostlist":
            line = f"hostlist {GROUP}"
        elif key == "slots":
            line = "slots 1"
        lines.append(line)
    _qconf_file("-Aq", "\n".join(lines) + "\n")
    added.queue = True


def own_ar_ids() -> list[int]:
    """The ARs named AR_NAME that this user owns (qrstat's table: ar-id,
    name, owner, ...), never another user's."""
    me = pwd.getpwuid(os.geteuid()).pw_name
    table = run(str(BIN / "qrstat"), "-u", me, check=False).stdout
    return [int(fields[0]) for fields in (line.split() for line in table.splitlines()[2:])
            if len(fields) > 2 and fields[0].isdigit() and fields[1:3] == [AR_NAME, me]]


def teardown(added: Added) -> None:
    """Remove what setup added: the ARs named AR_NAME of this user (by id),
    then the queue, the group, the hosts and their names."""
    ids = [str(ar_id) for ar_id in own_ar_ids()]
    for first in range(0, len(ids), 500):
        run("qrdel", "-f", ",".join(ids[first:first + 500]), check=False)
    if added.queue:
        run("qconf", "-dq", QUEUE, check=False)
    if added.group:
        run("qconf", "-dhgrp", GROUP, check=False)
    for first in range(0, len(added.hosts), 200):
        run("qconf", "-de", ",".join(added.hosts[first:first + 200]), check=False)
    text = HOSTS_FILE.read_text()
    if added.hosts_file and BEGIN in text:
        head, _, rest = text.partition(BEGIN)
        HOSTS_FILE.write_text(head + rest.partition(END)[2].lstrip("\n"))


def qrsub_argv(start: int, duration: int) -> list[str]:
    """qrsub -N plusbench for one slot of bench.q over [start, start + duration)."""
    stamp = time.strftime("%Y%m%d%H%M.%S", time.localtime(start))
    hours, rest = divmod(duration, 3600)
    return [str(BIN / "qrsub"), "-N", AR_NAME, "-q", QUEUE, "-a", stamp,
            "-d", f"{hours}:{rest // 60:02d}:{rest % 60:02d}"]


def qrstat_argv(*args: str) -> list[str]:
    return [str(BIN / "qrstat"), *args]


def qmaster_pid() -> int:
    return int(run("pgrep", "-o", "-x", "sge_qmaster").stdout.split()[0])
