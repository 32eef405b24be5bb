"""The native batch system's shepherd: runs one job on its execution host.

Like Grid Engine's sge_shepherd it runs the job as its owner, enforces the
wall-clock limits, obeys kill requests, and reports how the job ended. It is
shipped as source to hosts that do not have this project installed, so it
uses the standard library only and runs on the host's python3 (3.6 or later,
Linux). The executor (overlay_native.execution.runners) runs it as root:

    python3 -I -c SOURCE start SPOOL_DIR    (the job spec as JSON on stdin)

That makes SPOOL_DIR/jobs/ID/ (spec.json and a copy of this file, so the
running shepherd's command line names its job instead of holding the
source), starts the shepherd proper in a session of its own (stdio to
shepherd.log, so it outlives the caller and an SSH session), and returns
once it has written ID/status. A kill request is the file ID/kill, or
SIGTERM to the shepherd. ID/status is replaced atomically, once the job
runs and once it has ended with everything it started.

Nobody but root and a job's owner reads its files: the directories are
0711 (nobody lists the jobs), the files 0600 (the script 0700), and the
job's script and PE hostfile, which the job reads as its owner, belong to
the owner.
"""

import contextlib
import ctypes
import fcntl
import json
import os
import pwd
import re
import resource
import select
import shutil
import signal
import socket
import sys
import time
import traceback
from typing import Dict, Iterator, List, Optional, Tuple

# Also checked by the executor; again here as it names a directory root writes.
JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
PR_SET_CHILD_SUBREAPER = 36
TICK = 0.25    # seconds between looks for the kill file
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
CANNOT_EXEC = 127    # the job's exit status when it could not be started
# queue_conf(5)'s limits the shepherd sets with setrlimit(2): (resource, hard?);
# h_rt and s_rt it enforces itself, and Linux ignores RLIMIT_RSS.
RLIMITS = {"s_cpu": ("RLIMIT_CPU", False), "h_cpu": ("RLIMIT_CPU", True),
           "s_fsize": ("RLIMIT_FSIZE", False), "h_fsize": ("RLIMIT_FSIZE", True),
           "s_data": ("RLIMIT_DATA", False), "h_data": ("RLIMIT_DATA", True),
           "s_stack": ("RLIMIT_STACK", False), "h_stack": ("RLIMIT_STACK", True),
           "s_core": ("RLIMIT_CORE", False), "h_core": ("RLIMIT_CORE", True),
           "s_vmem": ("RLIMIT_AS", False), "h_vmem": ("RLIMIT_AS", True)}
# sge_status(5)'s failed codes for the steps of starting a job
BEFORE_JOB, OPENING_OUTPUT, SEARCHING_SHELL, CHANGING_DIRECTORY = 11, 26, 27, 28


class Refused(Exception):
    """A job that cannot be started here; the message is for the caller."""


NOBODY = 65534
"""The overflow uid: an account of the system whatever min_uid says."""


def main(argv: List[str]) -> None:
    if len(argv) == 2 and argv[0] == "start":
        try:
            start(argv[1], json.load(sys.stdin))
        except Refused as error:
            sys.exit("plus shepherd: %s" % error)
    elif len(argv) == 3 and argv[0] == "run":
        Shepherd(argv[1], int(argv[2])).run()
    else:
        sys.exit("usage: python3 -c SOURCE start SPOOL_DIR <spec.json")


# --- start: make the job's spool entries and detach the shepherd ---------------

def start(spool: str, spec: dict) -> None:
    """Create jobs/ID in ``spool`` and start its shepherd, detached; return
    when the shepherd has written the job's first status."""
    if os.geteuid() != 0:
        raise Refused("must run as root, to run jobs as their owners")
    job_id, owner = str(spec.get("id")), str(spec.get("owner"))
    if not JOB_ID.match(job_id):
        raise Refused("invalid job id %r" % job_id)
    try:
        uid = pwd.getpwnam(owner).pw_uid
    except KeyError:
        raise Refused("job %s: unknown user %r on %s" % (job_id, owner, socket.gethostname())) from None
    least = spec.get("min_uid")
    if uid in (0, NOBODY) or not isinstance(least, int) or uid < least:    # users.system_account
        raise Refused("job %s: %s (uid %d) is root or a system account (below min_uid %s): no "
                      "job runs as one" % (job_id, owner, uid, least))
    os.umask(0o022)
    jobs = os.path.join(spool, "jobs")
    for path in (spool, jobs):    # what is here is run as root, and is the owners' alone
        os.makedirs(path, 0o711, exist_ok=True)
        info = os.stat(path)
        if info.st_uid != 0 or info.st_mode & 0o022:
            raise Refused("%s must be owned by root and writable by root only" % path)
        os.chmod(path, 0o711)    # owners reach their job's files, nobody lists the jobs
    job_dir = os.path.join(jobs, job_id)
    with epoch_fence(spool, spec.get("epoch")):
        try:
            os.mkdir(job_dir, 0o711)    # the owner may read its script and PE hostfile, not list
        except FileExistsError:
            raise Refused("job %s already exists in %s" % (job_id, jobs)) from None
    try:
        write_file(os.path.join(job_dir, "spec.json"), json.dumps(spec).encode(), 0o600)
        write_file(os.path.join(job_dir, "shepherd.py"), own_source(), 0o600)
        if spec.get("script") is not None:    # the spooled job script, the owner's alone
            write_file(os.path.join(job_dir, "script"),
                       spec["script"].encode("utf-8", "surrogateescape"), 0o700,
                       pwd.getpwnam(owner))
        detach(job_dir)
    except BaseException:
        shutil.rmtree(job_dir, ignore_errors=True)
        raise


@contextlib.contextmanager
def epoch_fence(spool: str, epoch: Optional[int]) -> Iterator[None]:
    """Hold the spool's epoch lock, having recorded ``epoch`` (the leader's,
    from the store) if it is the highest seen; an older one is refused: its
    leader was taken over from, and the new one has looked here already.
    Starts make their job's directory, and polls remove and list the jobs, inside it,
    so a start of the old leader is seen by the new one's poll, or refused.
    Shared with the poll's script (runners._POLL): standard library only."""
    with open(os.path.join(spool, "epoch"), "a+") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        file.seek(0)
        seen = int(file.read() or 0)
        if epoch is not None and epoch < seen:
            raise Refused("fenced: a later leader (epoch %d) looked at this host; this one "
                          "(epoch %d) touches nothing" % (seen, epoch))
        if epoch is not None and epoch > seen:
            file.truncate(0)
            file.write(str(epoch))
            file.flush()
        yield


def own_source() -> bytes:
    """This file's text, which arrived as the argument of python3 -c."""
    with open("/proc/self/cmdline", "rb") as file:
        args = file.read().split(b"\0")
    return args[args.index(b"-c") + 1]


def detach(job_dir: str) -> None:
    """Run the shepherd in a new session, wait until it wrote its status."""
    ready_r, ready_w = os.pipe()
    if os.fork() == 0:
        try:
            os.setsid()
            os.chdir(job_dir)
            null = os.open(os.devnull, os.O_RDONLY)
            log = os.open("shepherd.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            for fd, target in ((null, 0), (log, 1), (log, 2)):
                os.dup2(fd, target)
            os.set_inheritable(ready_w, True)
            os.execv(sys.executable, [sys.executable, "-I", os.path.join(job_dir, "shepherd.py"),
                                      "run", job_dir, str(ready_w)])
        except BaseException as error:
            os.write(2, ("cannot start the shepherd: %s\n" % error).encode())
        os._exit(CANNOT_EXEC)
    os.close(ready_w)
    while os.read(ready_r, 512):    # EOF: the shepherd closed it or died
        pass
    if not os.path.exists(os.path.join(job_dir, "status")):
        with open(os.path.join(job_dir, "shepherd.log"), errors="replace") as file:
            lines = file.read().strip().splitlines() or ["no message"]
        raise Refused("the shepherd did not start: %s" % lines[-1])


def write_file(path: str, data: bytes, mode: int,
               owner: Optional[pwd.struct_passwd] = None) -> None:
    """Write ``path`` whole, atomically: a reader sees the old or new file;
    with ``owner``, the file is that user's (and still nobody else's)."""
    temporary = path + ".tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        if owner is not None:
            os.fchown(fd, owner.pw_uid, owner.pw_gid)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)


# --- run: the shepherd proper -----------------------------------------------

class Shepherd:
    """Runs one job and watches it until it and all it started are gone."""

    def __init__(self, job_dir: str, ready_fd: int) -> None:
        self.dir = job_dir
        self.ready = ready_fd    # closed after the first status is written
        os.set_inheritable(ready_fd, False)    # else the job would hold it open
        with open(os.path.join(job_dir, "spec.json")) as file:
            self.spec = json.load(file)
        self.kill_file = os.path.join(job_dir, "kill")
        self.terminate = False    # SIGTERM or SIGINT came: a kill request
        with open("/proc/self/stat") as file:
            started = file.read().rsplit(")", 1)[1].split()[19]
        # The pid and its start time tell the executor whether we still live.
        self.status = {"state": "running", "shepherd": os.getpid(), "shepherd_start": started,
                       "host": socket.gethostname(), "pid": None, "start": None}

    def run(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        # Orphans of the job (double forks, setsid daemons) become our children,
        # so the job's whole tree stays below us and can be killed and reaped.
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
        self.wake_r, wake_w = os.pipe()
        for fd in (self.wake_r, wake_w):
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(wake_w)
        for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            # A handler (not SIG_IGN, which the job would inherit) wakes select.
            signal.signal(number, lambda *_: None)
        wait_status, reason = None, ""
        try:
            wait_status, reason = self.run_job()
        except Exception as error:    # the job must still be cleaned up and reported
            traceback.print_exc()
            reason = "shepherd failed: %s" % error
        finally:
            self.sweep()
        self.status.update(state="ended", end=time.time(), reason=reason, exit_status=None,
                           signal=None, rusage=tree_usage())
        if wait_status is not None and os.WIFEXITED(wait_status):
            self.status["exit_status"] = os.WEXITSTATUS(wait_status)
        elif wait_status is not None:
            self.status["signal"] = os.WTERMSIG(wait_status)
        self.write_status()

    def run_job(self) -> Tuple[int, str]:
        """Start the job and supervise it: its wait status and why it ended."""
        pid, error = self.spawn()
        self.status.update(pid=pid, start=time.time())
        self.write_status()
        if error:
            code, _, text = error.partition(" ")
            self.status["failed"] = int(code)
            return os.waitpid(pid, 0)[1], "cannot start job: " + text
        return self.supervise(pid)

    def spawn(self) -> Tuple[int, str]:
        """Fork the job; its pid, and why it could not be executed if so."""
        owner = pwd.getpwnam(self.spec["owner"])
        hostfile = self.write_hostfile(owner)
        error_r, error_w = os.pipe()    # close-on-exec: EOF once exec worked
        pid = os.fork()
        if pid == 0:
            try:
                os.close(error_r)
                script = os.path.join(self.dir, "script") if self.spec.get("script") is not None \
                    else None
                exec_job(self.spec, owner, hostfile, script)
            except BaseException as error:
                stage = error.stage if isinstance(error, StartFailure) else BEFORE_JOB
                os.write(error_w, ("%d %s" % (stage, describe(error.__cause__ or error))).encode())
            os._exit(CANNOT_EXEC)
        os.close(error_w)
        with os.fdopen(error_r, "rb") as pipe:
            return pid, pipe.read().decode(errors="replace")

    def write_hostfile(self, owner: pwd.struct_passwd) -> Optional[str]:
        """Grid Engine's PE_HOSTFILE (host slots queue processors) if given,
        for the job's owner alone."""
        hosts = self.spec["pe_hosts"]
        if not hosts:
            return None
        path = os.path.join(self.dir, "pe_hostfile")
        lines = "".join("%s %d %s@%s UNDEFINED\n" % (host, slots, self.spec["queue"], host)
                        for host, slots in hosts)
        write_file(path, lines.encode(), 0o600, owner)
        return path

    def supervise(self, pid: int) -> Tuple[int, str]:
        """Wait for the job leader, applying s_rt, h_rt and kill requests."""
        spec, began, reason = self.spec, time.monotonic(), ""
        warn_at = spec["s_rt"]    # SIGUSR1, then SIGKILL after notify
        kill_at = []    # (seconds after the start, reason) when SIGKILL is due
        if spec["h_rt"] is not None:
            kill_at.append((spec["h_rt"], "h_rt exceeded"))
        if warn_at is not None:
            kill_at.append((warn_at + spec["notify"], "s_rt exceeded"))
        while True:
            wait_status = self.reap(pid)
            if wait_status is not None:
                return wait_status, reason
            now = time.monotonic() - began
            if not reason and (self.terminate or os.path.exists(self.kill_file)):
                reason = "killed"
                self.signal_tree(signal.SIGTERM)
                kill_at.append((now + spec["grace"], reason))
            if warn_at is not None and now >= warn_at:
                signal_group(pid, signal.SIGUSR1)    # as Grid Engine: the job's group
                warn_at = None
            for at, why in kill_at:
                if now >= at:
                    reason = reason or why
                    self.signal_tree(signal.SIGKILL)
                    break
            due = [at - now for at, _ in kill_at if at > now]
            if warn_at is not None:
                due.append(warn_at - now)
            self.wait(min(due + [TICK]))

    def reap(self, pid: int) -> Optional[int]:
        """Reap every exited child; the wait status of ``pid`` if among them."""
        found = None
        while True:
            try:
                child, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return found
            if child == 0:
                return found
            if child == pid:
                found = wait_status

    def wait(self, timeout: float) -> None:
        """Sleep until a signal (a child ended, a kill request) or ``timeout``."""
        select.select([self.wake_r], [], [], max(timeout, 0))
        try:
            while True:
                numbers = os.read(self.wake_r, 512)
                if not numbers:
                    return
                if signal.SIGTERM in numbers or signal.SIGINT in numbers:
                    self.terminate = True
        except BlockingIOError:
            pass

    def signal_tree(self, number: int) -> None:
        for pid in descendants(os.getpid()):
            try:
                os.kill(pid, number)
            except ProcessLookupError:
                pass

    def sweep(self) -> None:
        """Kill and reap all that is left below us: every process the job
        started, also ones that called setsid or were orphaned."""
        while True:
            self.signal_tree(signal.SIGKILL)
            try:
                os.waitpid(-1, 0)
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass
            except ChildProcessError:
                return

    def write_status(self) -> None:
        write_file(os.path.join(self.dir, "status"), json.dumps(self.status).encode(), 0o600)
        if self.ready is not None:
            os.close(self.ready)
            self.ready = None


def exec_job(spec: dict, owner: pwd.struct_passwd, hostfile: Optional[str],
             script: Optional[str]) -> None:
    """In the forked child: become the job's owner in a session of its own
    and execute the job (Grid Engine's output files and environment)."""
    os.setsid()
    set_limits(spec.get("limits") or {})
    os.initgroups(owner.pw_name, owner.pw_gid)
    os.setgid(owner.pw_gid)
    os.setuid(owner.pw_uid)
    os.umask(0o022)
    with stage(CHANGING_DIRECTORY):
        os.chdir(spec["cwd"] or owner.pw_dir)    # as the owner: its permissions apply
    host = socket.gethostname()
    with stage(OPENING_OUTPUT):
        stdout = output_path(spec["stdout"], "o", spec, owner, host)
        stderr = stdout if spec["merge"] else output_path(spec["stderr"], "e", spec, owner, host)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND    # appended to, as Grid Engine does
        out = os.open(stdout, flags, 0o644)
        err = out if spec["merge"] else os.open(stderr, flags, 0o644)
    for fd, target in ((os.open(os.devnull, os.O_RDONLY), 0), (out, 1), (err, 2)):
        os.dup2(fd, target)
    for number in (signal.SIGPIPE, signal.SIGXFSZ):    # Python ignores these
        signal.signal(number, signal.SIG_DFL)
    env = job_environment(spec, owner, host, hostfile)
    env.update(SGE_STDOUT_PATH=stdout, SGE_STDERR_PATH=stderr, SGE_CWD_PATH=os.getcwd())
    if script is not None:    # Grid Engine's posix_compliant start: shell script args
        argv = [spec["shell"] or "/bin/sh", script] + spec["command"]
    else:
        argv = ([spec["shell"]] if spec["shell"] else []) + spec["command"]
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as error:
        failure = StartFailure(SEARCHING_SHELL if script is not None or spec["shell"] else BEFORE_JOB)
        raise failure from OSError(error.errno, error.strerror, argv[0])


class StartFailure(Exception):
    """The job could not be started; ``stage`` is Grid Engine's failed code
    for the step that failed (sge_status(5))."""

    def __init__(self, stage: int) -> None:
        super().__init__(stage)
        self.stage = stage


class stage:
    """Turns an OSError in a step of starting the job into StartFailure."""

    def __init__(self, code: int) -> None:
        self.code = code

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, error, trace) -> bool:
        if isinstance(error, OSError):
            raise StartFailure(self.code) from error
        return False


def set_limits(limits: Dict[str, float]) -> None:
    """The job's limits as rlimits, hard and soft, before dropping root."""
    wanted = {}    # type: Dict[str, List[int]]
    for name, amount in limits.items():
        resource_name, hard = RLIMITS[name]
        pair = wanted.setdefault(resource_name, list(resource.getrlimit(
            getattr(resource, resource_name))))
        pair[1 if hard else 0] = int(amount)
    for resource_name, (soft, hard) in wanted.items():
        if hard != resource.RLIM_INFINITY and (soft == resource.RLIM_INFINITY or soft > hard):
            soft = hard
        resource.setrlimit(getattr(resource, resource_name), (soft, hard))


def output_path(path: Optional[str], kind: str, spec: dict, owner: pwd.struct_passwd,
                host: str) -> str:
    """Grid Engine's -o/-e path: NAME.oID in the cwd by default, pseudo
    variables replaced, and a directory meaning the default name in it."""
    name = "%s.%s%s" % (spec["name"], kind, spec["id"])
    if not path:
        return os.path.join(os.getcwd(), name)
    for variable, value in (("$HOME", owner.pw_dir), ("$USER", owner.pw_name),
                            ("$JOB_ID", spec["id"]), ("$JOB_NAME", spec["name"]),
                            ("$HOSTNAME", host), ("$TASK_ID", "undefined")):
        path = path.replace(variable, value)
    path = os.path.abspath(path)
    return os.path.join(path, name) if os.path.isdir(path) else path


def job_environment(spec: dict, owner: pwd.struct_passwd, host: str,
                    hostfile: Optional[str]) -> Dict[str, str]:
    """The caller's variables under the ones Grid Engine sets for every job."""
    env = {"PATH": DEFAULT_PATH}
    env.update(spec["env"])
    hosts = str(max(len(spec["pe_hosts"]), 1))
    env.update(
        HOME=owner.pw_dir, USER=owner.pw_name, LOGNAME=owner.pw_name,
        SHELL=owner.pw_shell or "/bin/sh", ENVIRONMENT="BATCH", JOB_ID=spec["id"],
        JOB_NAME=spec["name"], REQUEST=spec["name"], SGE_TASK_ID="undefined",
        SGE_TASK_FIRST="undefined", SGE_TASK_LAST="undefined", SGE_TASK_STEPSIZE="undefined",
        NSLOTS=str(spec["slots"]), NHOSTS=hosts, NQUEUES=hosts, QUEUE=spec["queue"],
        HOSTNAME=host, RESTARTED="0")
    if hostfile:
        env["PE_HOSTFILE"] = hostfile
    return env


def tree_usage() -> Dict[str, float]:
    """getrusage(2) of everything the job started: as a subreaper that reaped
    the whole tree, the shepherd's children are all of it."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {name: float(getattr(usage, "ru_" + name))
            for name in ("utime", "stime", "maxrss", "ixrss", "idrss", "isrss", "minflt",
                         "majflt", "nswap", "inblock", "oublock", "msgsnd", "msgrcv", "nsignals",
                         "nvcsw", "nivcsw")}


def describe(error: BaseException) -> str:
    if isinstance(error, OSError) and error.filename:
        return "%s: %s" % (error.filename, error.strerror)
    return str(error) or type(error).__name__


def descendants(root: int) -> List[int]:
    """Every process below ``root``, from the parent pids in /proc."""
    children = {}    # type: Dict[int, List[int]]
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name) as file:
                    parent = int(file.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue    # gone meanwhile
            children.setdefault(parent, []).append(int(name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def signal_group(pid: int, number: int) -> None:
    try:
        os.killpg(pid, number)
    except ProcessLookupError:
        pass


if __name__ == "__main__":
    main(sys.argv[1:])
