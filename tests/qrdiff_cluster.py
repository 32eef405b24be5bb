"""One small cluster described once and configured two ways for the qrsub
differential test (issue 28): as objects of their own on the test set-up's
real Grid Engine qmaster (configuration-only hosts dq1..dq6, as
scripts/sge_peer.py makes them) and as the native backend's cluster file.

Every Grid Engine object here has a name of its own (dq*), and ``teardown``
removes exactly those, by name, and the ARs it is given by id, so the test
cluster (all.q, node1..node3, vm) is left as the other tests expect.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

from qrdiff_outcomes import grants

ENV = {**os.environ, "SGE_ROOT": "/var/lib/gridengine", "SGE_CELL": "default"}
BIN = Path("/usr/lib/gridengine")          # the binaries, not Debian's wrappers
HOSTS_FILE = Path("/etc/hosts")
BEGIN, END = "# plus qrdiff hosts: begin", "# plus qrdiff hosts: end"
USERS = ("plusu1", "plusu2", "plusu3")

HOSTS = {f"dq{n}": {"dqlic": 4 if n <= 4 else 2} for n in range(1, 7)}
"""Host name -> its consumables (host level)."""
HOSTGROUPS = {"@dqhi": ["dq3", "dq4", "dq5", "dq6"]}
USERSETS = {"dqacl": ["plusu1", "plusu2"], "dqdeny": ["plusu3"]}
COMPLEX = "dqlic"
"""A consumable per slot (qconf -sc's consumable YES), on every dq host."""
PES = {
    "dq_slots": {"allocation_rule": "$pe_slots", "slots": 999},
    "dq_fill": {"allocation_rule": "$fill_up", "slots": 999},
    "dq_rr": {"allocation_rule": "$round_robin", "slots": 999, "xuser_lists": ["dqdeny"]},
    "dq_two": {"allocation_rule": 2, "slots": 12, "user_lists": ["dqacl"]},
}
QUEUES = {
    "dqa.q": {"hostlist": ["dq1", "dq2", "dq3", "dq4"], "slots": 4, "qtype": ["BATCH"],
              "pe_list": ["dq_slots", "dq_fill", "dq_rr", "dq_two"], "xuser_lists": ["dqdeny"]},
    "dqb.q": {"hostlist": ["@dqhi"], "slots": 2, "qtype": ["BATCH", "INTERACTIVE"],
              "pe_list": ["dq_fill", "dq_rr"], "user_lists": ["dqacl"]},
    "dqi.q": {"hostlist": ["dq6"], "slots": 1, "qtype": ["INTERACTIVE"]},
}


def hosts_of(queue: str) -> list[str]:
    """The hosts of ``queue``, its hostgroups resolved."""
    hosts: list[str] = []
    for item in QUEUES[queue]["hostlist"]:
        hosts += HOSTGROUPS.get(item, [item])
    return hosts


def native_cluster() -> str:
    """The same cluster as the native backend's cluster file (YAML)."""
    lines = ["complexes:",
             f"  - {{name: {COMPLEX}, shortcut: {COMPLEX}, type: INT, relop: \"<=\", "
             "requestable: YES, consumable: YES, default: 0}",
             "hostgroups:"]
    lines += [f"  \"{name}\": [{', '.join(hosts)}]" for name, hosts in HOSTGROUPS.items()]
    lines += ["userlists:"] + [f"  {name}: [{', '.join(users)}]"
                               for name, users in USERSETS.items()]
    lines += ["nodes:"] + [
        f"  - {{name: {name}, arch: lx-amd64, os: linux, complex_values: "
        f"{{{', '.join(f'{k}: {v}' for k, v in values.items())}}}, queues: []}}"
        for name, values in HOSTS.items()]
    lines += ["queues:"]
    for name, queue in QUEUES.items():
        keys = ", ".join(f"{key}: {_yaml(value)}" for key, value in queue.items())
        lines.append(f"  - {{name: {name}, {keys}}}")
    lines += ["pes:"]
    for name, pe in PES.items():
        keys = ", ".join(f"{key}: {_yaml(value)}" for key, value in pe.items())
        lines.append(f"  - {{name: {name}, {keys}}}")
    return "\n".join(lines) + "\n"


def _yaml(value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(f'"{item}"' for item in value) + "]"
    return f'"{value}"' if isinstance(value, str) else str(value)


def sge(*argv: str, user: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """A Grid Engine binary (qconf, qrsub ...) as ``user`` (root if None)."""
    command = [str(BIN / argv[0]), *argv[1:]]
    if user:
        command = ["runuser", "-u", user, "--", *command]
    result = subprocess.run(command, env=ENV, capture_output=True, text=True, cwd="/tmp",
                            timeout=60)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {result.stderr.strip() or result.stdout.strip()}")
    return result


def _qconf_file(option: str, text: str) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as handle:
        handle.write(text)
    try:
        sge("qconf", option, handle.name)
    finally:
        os.unlink(handle.name)


def _names(flag: str) -> set[str]:
    return set(sge("qconf", flag, check=False).stdout.split())


def _listed(values: list[str] | None) -> str:
    return " ".join(values) if values else "NONE"


def setup() -> None:
    """Add the cluster's objects to the qmaster (whatever a run that died
    left of them is removed first)."""
    teardown([])
    _add_host_names()
    complexes = sge("qconf", "-sc").stdout
    _qconf_file("-Mc", complexes.rstrip("\n") + f"\n{COMPLEX} {COMPLEX} INT <= YES YES 0 0\n")
    for name, users in USERSETS.items():
        _qconf_file("-Au", f"name {name}\ntype ACL\nfshare 0\noticket 0\n"
                           f"entries {','.join(users)}\n")
    for name, values in HOSTS.items():
        _add_exec_host(name, ",".join(f"{k}={v}" for k, v in values.items()))
    for name, hosts in HOSTGROUPS.items():
        _qconf_file("-Ahgrp", f"group_name {name}\nhostlist {' '.join(hosts)}\n")
    for name, pe in PES.items():
        _qconf_file("-Ap", f"pe_name {name}\nslots {pe['slots']}\n"
                           f"user_lists {_listed(pe.get('user_lists'))}\n"
                           f"xuser_lists {_listed(pe.get('xuser_lists'))}\n"
                           "start_proc_args NONE\nstop_proc_args NONE\n"
                           f"allocation_rule {pe['allocation_rule']}\ncontrol_slaves FALSE\n"
                           "job_is_first_task TRUE\nurgency_slots min\n"
                           "accounting_summary FALSE\nqsort_args NONE\n")
    template = sge("qconf", "-sq", "all.q").stdout.splitlines()
    for name, queue in QUEUES.items():
        values = {"qname": name, "hostlist": " ".join(queue["hostlist"]),
                  "slots": str(queue["slots"]), "qtype": " ".join(queue["qtype"]),
                  "pe_list": _listed(queue.get("pe_list")),
                  "user_lists": _listed(queue.get("user_lists")),
                  "xuser_lists": _listed(queue.get("xuser_lists"))}
        lines = [f"{line.split()[0]} {values[line.split()[0]]}"
                 if line.split() and line.split()[0] in values else line for line in template]
        _qconf_file("-Aq", "\n".join(lines) + "\n")
    missing = [u for u in USERS if u not in arusers()]
    if missing:
        raise RuntimeError(f"{', '.join(missing)} not in the qmaster's arusers: "
                           "scripts/sge-setup.sh puts the test users there")


def arusers() -> list[str]:
    """The members of the qmaster's arusers list."""
    for line in sge("qconf", "-su", "arusers").stdout.splitlines():
        if line.startswith("entries"):
            return line.split(None, 1)[1].replace(",", " ").split()
    return []


def _add_host_names() -> None:
    text = HOSTS_FILE.read_text()
    lines = [f"127.1.200.{n} {name}" for n, name in enumerate(HOSTS, start=1)]
    HOSTS_FILE.write_text(text.rstrip("\n") + "\n" + "\n".join([BEGIN, *lines, END]) + "\n")


def _add_exec_host(name: str, complex_values: str) -> None:
    """``qconf -Ae``, waiting out the qmaster's memory of a name that once
    did not resolve (a few minutes at most)."""
    deadline = time.time() + 300
    while True:
        try:
            _qconf_file("-Ae", f"hostname {name}\nload_scaling NONE\n"
                               f"complex_values {complex_values}\nuser_lists NONE\n"
                               "xuser_lists NONE\nprojects NONE\nxprojects NONE\n"
                               "usage_scaling NONE\nreport_variables NONE\n")
            return
        except RuntimeError as error:
            if "can't resolve" not in str(error) or time.time() > deadline:
                raise
            time.sleep(5)


def teardown(ar_ids: list[str]) -> None:
    """Remove the ARs ``ar_ids`` and every object ``setup`` adds, by name;
    an AR left on these queues by a run that died is found and removed too."""
    for ar_id in [*ar_ids, *_ars_on_our_queues()]:
        sge("qrdel", "-f", ar_id, check=False)
    for name in QUEUES:
        sge("qconf", "-dq", name, check=False)
    for name in PES:
        sge("qconf", "-dp", name, check=False)
    for name in HOSTGROUPS:
        sge("qconf", "-dhgrp", name, check=False)
    known_hosts = _names("-sel")
    for name in HOSTS:
        if name in known_hosts:
            sge("qconf", "-de", name, check=False)
    for name in USERSETS:
        sge("qconf", "-dul", name, check=False)
    complexes = sge("qconf", "-sc").stdout.splitlines()
    kept = [line for line in complexes if line.split()[:1] != [COMPLEX]]
    if kept != complexes:
        _qconf_file("-Mc", "\n".join(kept) + "\n")
    text = HOSTS_FILE.read_text()
    if BEGIN in text:
        head, _, rest = text.partition(BEGIN)
        HOSTS_FILE.write_text(head + rest.partition(END)[2].lstrip("\n"))


def _ars_on_our_queues() -> list[str]:
    """ARs (any owner) holding an instance of a dq queue."""
    listing = sge("qrstat", "-u", "*", check=False).stdout.splitlines()[2:]
    ids = [line.split()[0] for line in listing if line.split()]
    if not ids:
        return []
    shown = grants(sge("qrstat", "-ar", ",".join(ids), "-xml").stdout)
    return [ar_id for ar_id, grant in shown.items()
            if any(where.split("@")[0] in QUEUES for where in grant.placement)]
