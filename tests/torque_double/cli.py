"""What every command script runs: take the lock, bring the simulation up to
now, honour an injected fault or run the command, log it, write its output.

The caller is the real Unix user running the command; root, and whoever the
server's managers/operators name, may do a manager's work."""

from __future__ import annotations

import grp
import importlib
import os
import pwd
import sys

from . import simulate, store

COMMANDS = {
    "qmgr": ("cmd_qmgr", "run"),
    "pbsnodes": ("cmd_pbsnodes", "run"),
    "qstat": ("cmd_qstat", "run"),
    "qselect": ("cmd_qselect", "run"),
    "qsub": ("cmd_qsub", "run"),
    "qdel": ("cmd_jobs", "qdel"),
    "qhold": ("cmd_jobs", "qhold"),
    "qrls": ("cmd_jobs", "qrls"),
    "qrerun": ("cmd_jobs", "qrerun"),
    "qalter": ("cmd_jobs", "qalter"),
    "qrun": ("cmd_jobs", "qrun"),
}


class Context:
    """One command's view: the state (changed in place), the virtual time,
    who runs it, and its output."""

    def __init__(self, state: dict, now: float, user: str, directory: str = ""):
        self.state, self.now, self.user, self.directory = state, now, user, directory
        self.cwd = os.getcwd()
        self.env = os.environ
        self.stdout: list[str] = []
        self.stderr: list[str] = []

    @property
    def manager(self) -> bool:
        admins = self.state["server"].get("managers", "") + "," + self.state["server"].get(
            "operators", "")
        return self.user == "root" or self.user in {entry.split("@")[0]
                                                    for entry in admins.split(",")}

    @property
    def groups(self) -> list[str]:
        """The caller's primary group first, then the others."""
        entry = pwd.getpwnam(self.user)
        ids = [entry.pw_gid] + [gid for gid in os.getgrouplist(self.user, entry.pw_gid)
                                if gid != entry.pw_gid]
        return [grp.getgrgid(gid).gr_name for gid in ids]

    def job_id(self, operand: str) -> str:
        """'42' and '42.vm' both name job 42.vm."""
        return operand if "." in operand else f"{operand}.{self.state['server_name']}"

    def stdin(self) -> str:
        return sys.stdin.read()

    def write(self, text: str) -> None:
        self.stdout.append(text)

    def err(self, text: str) -> None:
        self.stderr.append(text)

    def unsupported(self, what: str) -> int:
        """A form the double does not simulate: fail loudly, never guess."""
        self.err(f"torque_double: {what}\n")
        return 2


def main(command: str, directory: str) -> int:
    """Run ``command`` (argv from sys.argv) against the double in ``directory``; its exit status."""
    args = sys.argv[1:]
    user = pwd.getpwuid(os.getuid()).pw_name
    module_name, function = COMMANDS[command]
    handler = getattr(importlib.import_module(f"{__package__}.{module_name}"), function)
    with store.locked(directory) as state:
        now = simulate.now(state)
        simulate.catch_up(state, now)
        ctx = Context(state, now, user, directory)
        fault = _take_fault(state, command, args)
        if fault is None:
            status = handler(ctx, args)
        else:
            ctx.write(fault["stdout"])
            ctx.err(fault["stderr"])
            status = fault["exit"]
        store.append_log(directory, {"argv": [command] + args, "user": user, "exit": status,
                                     "time": now, "cwd": ctx.cwd,
                                     "injected": fault is not None})
    sys.stdout.write("".join(ctx.stdout))
    sys.stderr.write("".join(ctx.stderr))
    return status


def _take_fault(state: dict, command: str, args: list[str]) -> dict | None:
    """The first injected fault for this command whose 'match' text occurs in
    its arguments; it is used up."""
    line = " ".join(args)
    for index, fault in enumerate(state["faults"]):
        if fault["command"] == command and fault["match"] in line:
            return state["faults"].pop(index)
    return None
