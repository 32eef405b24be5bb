"""Installing a double and driving it from tests: a directory with bin/ (the
TORQUE client commands), lib/ (a copy of this package, so the commands work
wherever the repository lives) and the state; TorqueDouble reads the state,
moves virtual time, kills and revives moms, injects faults and returns the log
of the commands run against it."""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import sys
import time
from pathlib import Path

from . import initial, jobs, nodes, nodespec, queues, simulate, store

COMMANDS = ("qmgr", "pbsnodes", "qstat", "qselect", "qalter", "qhold", "qrls", "qrerun",
            "qrun", "qdel", "qsub")
SCRIPT = """#!{python} -IS
import sys
sys.path.insert(0, {lib!r})
from torque_double.cli import main
sys.exit(main({command!r}, {directory!r}))
"""


class TorqueDouble:
    """A TORQUE 6.1 server, mom and pbs_sched simulated in virtual time; its
    commands are in ``path``."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = str(directory)
        self.path = os.path.join(self.directory, "bin")

    def environ(self, base: dict | None = None) -> dict[str, str]:
        """``base`` (default os.environ) with the double's commands first on PATH."""
        env = dict(os.environ if base is None else base)
        env["PATH"] = self.path + os.pathsep + env.get("PATH", "")
        return env

    def now(self) -> float:
        """The double's virtual clock."""
        with store.locked(self.directory) as state:
            return simulate.now(state)

    def state(self) -> dict:
        """A snapshot as of now: server settings, queues (with their counts),
        nodes (state, properties, note, running job ids) and jobs (exec_host
        only while R, the node properties their spec asks for)."""
        with store.locked(self.directory) as state:
            now = simulate.now(state)
            simulate.catch_up(state, now)
            return _snapshot(state, now)

    def advance(self, seconds: float) -> None:
        """Move virtual time on: jobs end, kept jobs are purged, moms report
        in and periodic scheduling cycles run, in order."""
        with store.locked(self.directory) as state:
            simulate.catch_up(state, simulate.now(state))
            state["offset"] += seconds
            if state.get("frozen_at") is not None:
                state["frozen_at"] += seconds
            simulate.catch_up(state, simulate.now(state))

    def thaw(self) -> None:
        """Virtual time runs with real time again, from where it stood."""
        with store.locked(self.directory) as state:
            if state.get("frozen_at") is not None:
                state["offset"] = state["frozen_at"] - time.time()
                state["frozen_at"] = None

    def freeze(self) -> None:
        """From now on virtual time moves only by ``advance``: for what
        happens within milliseconds (a rerun's steps), however slow the
        machine runs the commands."""
        with store.locked(self.directory) as state:
            state["frozen_at"] = simulate.now(state)

    def set_node_state(self, node: str, mom: str) -> None:
        """'down': the node's mom dies (the node turns down; its running jobs
        stay R); 'free': it reports in again."""
        if mom not in ("down", "free"):
            raise ValueError(f"mom state must be 'down' or 'free', not {mom!r}")
        with store.locked(self.directory) as state:
            now = simulate.now(state)
            simulate.catch_up(state, now)
            record = state["nodes"][node]
            if mom == "down":
                record["mom_up"] = False
                record["report_at"] = None
            else:
                nodes.mom_report(state, node, now)

    def set_submit_filter(self, command: list[str]) -> None:
        """qsub runs ``command`` as its submit filter (torque.cfg's
        SUBMITFILTER, here a script running it before qsub's arguments)."""
        script = os.path.join(self.directory, "submit_filter")
        with open(script, "w") as handle:
            handle.write("#!/bin/sh\nexec " + " ".join(shlex.quote(word) for word in command)
                         + ' "$@"\n')
        os.chmod(script, 0o755)
        with open(os.path.join(self.directory, "torque.cfg"), "w") as handle:
            handle.write(f"SUBMITFILTER {script}\n")

    def set_epilogue(self, seconds: float) -> None:
        """From now on a killed job's epilogue runs ``seconds`` (virtual)."""
        with store.locked(self.directory) as state:
            simulate.catch_up(state, simulate.now(state))
            state["settings"]["epilogue"] = seconds

    def fail_next(self, command: str, stderr: str, exit: int, stdout: str = "",
                  match: str = "") -> None:
        """The next run of ``command`` whose arguments contain ``match`` does
        nothing but print ``stdout``/``stderr`` and exit ``exit``."""
        if command not in COMMANDS:
            raise ValueError(f"no such command: {command}")
        with store.locked(self.directory) as state:
            state["faults"].append({"command": command, "match": match, "stdout": stdout,
                                    "stderr": stderr, "exit": exit})

    def command_log(self) -> list[dict]:
        """Every command run against the double, in order: argv (argv[0] is the
        command's name), user, exit, virtual time, cwd, injected (a fault)."""
        with store.locked(self.directory):
            return store.read_log(self.directory)


def install(directory: str | os.PathLike, nodes: tuple[tuple[str, int], ...] = (("vm", 4),),
            server: str = "vm", *, next_job_number: int = 0, next_queue_rank: int = 1,
            mom_report_delay: float = 2.0, purge_delay: float = 0.1, epilogue: float = 0.0,
            first_cycle_after: float | None = None, python: str | None = None) -> TorqueDouble:
    """Create a double in ``directory`` (made world-writable, as are its state
    files: commands run as root and as test users; its parents must be
    traversable by them). ``mom_report_delay``: virtual seconds a node made by
    'create node' stays down before its mom reports in. ``purge_delay``: how
    long a job lingers in C beyond keep_completed (TORQUE's ~0.1 s, which makes
    an immediate 'delete queue' after qdel fail as busy). ``epilogue``: virtual
    seconds the moms' epilogue runs after a job is killed (qdel, qrerun), the
    job R meanwhile. ``first_cycle_after``:
    virtual seconds until pbs_sched's first periodic cycle (default
    scheduler_iteration, 30); ``python``: the interpreter of the commands
    (default: this one if every user may run it, else /usr/bin/python3)."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o777)
    lib = root / "lib"
    package = lib / "torque_double"
    package.mkdir(parents=True, exist_ok=True)
    for source in Path(__file__).parent.glob("*.py"):
        shutil.copy(source, package / source.name)
    for folder in (lib, package):
        os.chmod(folder, 0o777)
    bin_dir = root / "bin"
    bin_dir.mkdir(exist_ok=True)
    os.chmod(bin_dir, 0o755)
    interpreter = python or _python()
    for command in COMMANDS:
        script = bin_dir / command
        script.write_text(SCRIPT.format(python=interpreter, lib=str(lib), command=command,
                                        directory=str(root)))
        os.chmod(script, 0o755)
    state = initial.state(server, tuple(nodes), time.time(),
                          next_job_number=next_job_number, next_queue_rank=next_queue_rank,
                          mom_report_delay=mom_report_delay, purge_delay=purge_delay,
                          first_cycle_after=first_cycle_after, epilogue=epilogue)
    store.create(str(root), state)
    return TorqueDouble(root)


def _python() -> str:
    """This Python if every user may run it (the project's venv, Debian's
    python3), else Debian's python3."""
    for candidate in (sys.executable, "/usr/bin/python3"):
        if candidate and all(_world_reachable(path) for path in
                             (os.path.abspath(candidate), os.path.realpath(candidate))):
            return os.path.abspath(candidate)
    return "/usr/bin/python3"


def _world_reachable(path: str) -> bool:
    """Executable by others, as is every directory above it."""
    current = path
    while True:
        try:
            if not os.stat(current).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
        parent = os.path.dirname(current)
        if parent == current:
            return True
        current = parent


def _snapshot(state: dict, now: float) -> dict:
    running = jobs.occupancy(state)
    return {
        "time": now,
        "server": dict(state["server"]),
        "queues": {name: dict(queues.attributes(state, name)) for name in state["queues"]},
        "nodes": {
            name: {"state": nodes.display_state(state, name, now), "np": node["np"],
                   "properties": list(node["properties"]), "note": node["note"],
                   "jobs": sorted(set(running.get(name, {}).values())),
                   "bugged": node["bugged"]}
            for name, node in state["nodes"].items()},
        "jobs": {
            job_id: {"id": job_id, "name": job["name"], "owner": job["owner"],
                     "output_path": job["output_path"], "error_path": job["error_path"],
                     "join_path": job.get("join_path", "n"),
                     "init_work_dir": job.get("init_work_dir"),
                     "queue": job["queue"], "state": job["state"],
                     "exec_host": job["exec_host"] if job["state"] in jobs.ON_NODE else None,
                     "hold": jobs.holds(job), "nodes": jobs.node_spec(job),
                     "properties": nodespec.properties(jobs.node_spec(job)),
                     "comment": job["comment"], "exit_status": job["exit_status"],
                     "rerunable": job["rerunable"], "start_count": job["start_count"],
                     "qtime": job["qtime"], "start_time": job["start_time"],
                     "resources": dict(job["resources"])}
            for job_id, job in state["jobs"].items()},
    }
