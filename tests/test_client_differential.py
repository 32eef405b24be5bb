"""The compiled client (client/plus_client.c) against the Python command it
stands for: every reservation command (and plus_qrstat, plus_qrdel,
plus_qrsub) with a wide sample of options and bad input, run both ways as
real users, must give the same stdout, stderr and exit status, byte for
byte: in a caller's time zone, on a terminal, in a locale that is not
UTF-8, into a closed pipe, interrupted, and with no daemon running."""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from daemon_harness import BIN, VENV, Daemon
from overlay.cmdserver import frames

LIBEXEC = Path(VENV) / "libexec" / "plus"
CLIENT = LIBEXEC / "plus_client"
SOURCE = Path(__file__).resolve().parents[1] / "client" / "plus_client.c"
pytestmark = pytest.mark.skipif(not CLIENT.exists(), reason="no compiled client installed "
                                "(no C compiler when scripts/install.sh ran)")
CLUSTER = """\
nodes:
  - {name: "host[1-30]", slots: 4, memory: 16G, ncpus: 4, arch: lx-amd64, os: linux, queues: [all.q]}
queues:
  - {name: all.q, slots: 4, qtype: [BATCH], pe_list: [mpi]}
pes:
  - {name: mpi, slots: 64, allocation_rule: $round_robin}
"""
SETTINGS = "max_advance_reservations: 400\nrequest_timeout: 2\nmax_connections_per_user: 3\n"


@pytest.fixture(scope="module")
def daemon():
    d = Daemon(settings=SETTINGS, cluster=CLUSTER).start()
    d.ok("plusu1", "plus_reserve", "-s", "now+1h", "-D", "2h", "-n", "1", "-N", "first")
    d.ok("plusu2", "plus_qrsub", "-d", "3600", "-a", _at(2), "-N", "second")
    yield d
    d.cleanup()


def _at(hours: float) -> str:
    return time.strftime("%Y%m%d%H%M", time.localtime(time.time() + hours * 3600))


def both(daemon: Daemon, user: str, command: str, *args: str, env: dict | None = None,
         **options) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    """The command through the client, then the Python command, as ``user``."""
    return (_run(daemon, user, BIN / command, args, env, **options),
            _run(daemon, user, LIBEXEC / command, args, env, **options))


def _run(daemon, user, path, args, env, stdin=None, stdout=subprocess.PIPE, cwd="/"):
    extra = [f"{key}={value}" for key, value in (env or {}).items()]
    argv = ["runuser", "-u", user, "--", "env", f"PLUS_CONF={daemon.conf}", *extra, str(path),
            *args]
    return subprocess.run(argv, stdin=stdin if stdin is not None else subprocess.DEVNULL,
                          stdout=stdout, stderr=subprocess.PIPE, cwd=cwd, timeout=60)


def same(pair, normal=lambda text: text) -> None:
    client, python = pair
    assert (client.returncode, normal(client.stdout), normal(client.stderr)) == \
           (python.returncode, normal(python.stdout), normal(python.stderr))


TOMORROW = time.strftime("%Y%m%d", time.localtime(time.time() + 86400))
START, END = TOMORROW + "0900", TOMORROW + "1000"
"""Fixed times where the output shows them (now moves between the two runs)."""
READ_ONLY = [
    ("plus_status",), ("plus_status", "-r", "1"), ("plus_status", "-r", "R1", "-x"),
    ("plus_status", "-r", "999"), ("plus_status", "-r", "x"), ("plus_status", "-x"),
    ("plus_status", "--json"), ("plus_status", "-n"), ("plus_status", "-o", "plusu1"),
    ("plus_status", "-s", "now", "-e", "now+1d"), ("plus_status", "-ne", "5"),
    ("plus_status", "-h"), ("plus_status", "--bogus"), ("plus_status", "-series"),
    ("plus_status", "-r", "1", "-r"), ("plus_status", "-o", "a" * 5000),
    ("plus_availnodes", "-s", START, "-e", END), ("plus_availnodes", "-s", START, "-e", END,
                                                  "-x"),
    ("plus_availnodes", "-s", "yesterday", "-e", "now"),
    ("plus_reserve", "-n", "0", "-s", "now+1h", "-D", "1h"), ("plus_reserve", "-s", "now+1h"),
    ("plus_reserve", "-h"), ("plus_reserve", "-s", START, "-D", "1h", "-e", TOMORROW + "1100",
                             "-n", "1"),  # absolute: the message prints the times, to the second
    ("plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "99"), ("plus_reserve", "-mem", "lots"),
    ("plus_modify", "-r", "999", "-D", "1h"), ("plus_modify", "-r", "x"), ("plus_modify",),
    ("plus_cancel", "-r", "999"), ("plus_destroy", "-r", "999"),
    ("plus_commit", "-r", "999"), ("plus_abort", "-r", "999"), ("plus_commit",),
    ("plus_approve", "999"), ("plus_deny", "999", "-reason", "no"), ("plus_approve",),
    ("plus_qrstat",), ("plus_qrstat", "-ar", "1"), ("plus_qrstat", "-u", "*"),
    ("plus_qrstat", "-xml"), ("plus_qrstat", "-help"), ("plus_qrstat", "-bogus"),
    ("plus_qrstat", "-ar", "999"), ("plus_qrdel", "999"), ("plus_qrdel", "-help"),
    ("plus_qrdel",), ("plus_qrsub", "-d", "banana"), ("plus_qrsub", "-help"),
    ("plus_qrsub", "-d", "3600", "-a", "13999999"), ("plus_query", "-h"),
]


@pytest.mark.parametrize("words", READ_ONLY, ids=" ".join)
@pytest.mark.parametrize("user", ["plusu1", "root"])
def test_the_client_answers_as_the_python_command(daemon, user, words):
    same(both(daemon, user, *words))


def test_what_changes_the_store_says_the_same_but_for_the_new_ids(daemon):
    def normal(text: bytes) -> bytes:
        return re.sub(rb"\d+", b"N", text)
    for words in (("plus_reserve", "-s", "now+3h", "-D", "30m", "-n", "1"),
                  ("plus_reserve", "-s", "now+3h", "-D", "30m", "-n", "1", "-p", "-x"),
                  ("plus_qrsub", "-d", "600", "-a", _at(4))):
        same(both(daemon, "plusu1", *words), normal)
    made = [daemon.reserve("plusu1", "-s", "now+5h", "-D", "30m", "-n", "1")["id"]
            for _ in range(2)]
    client = _run(daemon, "plusu1", BIN / "plus_cancel", ("-r", str(made[0])), None)
    python = _run(daemon, "plusu1", LIBEXEC / "plus_cancel", ("-r", str(made[1])), None)
    same((client, python), lambda text: text.replace(str(made[0]).encode(), b"N")
         .replace(str(made[1]).encode(), b"N"))


def test_the_ar_made_through_the_client_is_the_callers_own(daemon):
    made = _run(daemon, "plusu1", BIN / "plus_reserve",
                ("-s", "now+6h", "-D", "30m", "-n", "1", "--json"), None)
    assert made.returncode == 0, made.stderr
    ar = daemon.status("-r", re.search(rb'"id": (\d+)', made.stdout).group(1).decode())
    assert ar[0]["owner"] == "plusu1"


@pytest.mark.parametrize("zone", ["Asia/Tokyo", "America/St_Johns", "UTC"])
def test_times_are_printed_in_the_callers_zone(daemon, zone):
    for words in (("plus_status", "-r", "1"), ("plus_status",), ("plus_qrstat", "-ar", "2")):
        pair = both(daemon, "plusu1", *words, env={"TZ": zone})
        same(pair)
    assert both(daemon, "plusu1", "plus_status", env={"TZ": "Asia/Tokyo"})[0].stdout != \
        both(daemon, "plusu1", "plus_status", env={"TZ": "America/St_Johns"})[0].stdout


def test_zones_of_the_same_names_one_after_another_print_their_own_times(daemon):
    """A warm worker serves one command after another: a zone whose names
    are another's (XYZ3, XYZ5) must not be given that one's times."""
    shown = []
    for zone in ("XYZ3", "XYZ5", "XYZ3"):
        pair = both(daemon, "plusu1", "plus_status", env={"TZ": zone})
        same(pair)
        shown.append(pair[0].stdout)
    assert shown[0] != shown[1] and shown[0] == shown[2]


def test_an_entry_of_the_environment_before_is_gone_for_the_next_command(daemon):
    """A warm worker changes only what differs from the last command's
    environment: an entry that command had (TZ) must be gone for the next,
    whose times are then the machine's own, as the Python command's."""
    zoned = both(daemon, "plusu1", "plus_status", env={"TZ": "Asia/Tokyo"})
    same(zoned)
    plain = both(daemon, "plusu1", "plus_status")
    same(plain)
    assert plain[0].stdout != zoned[0].stdout


def test_a_narrow_terminal_gets_the_same_table(daemon):
    for columns in ("40", "200"):
        outputs = []
        for path in (BIN / "plus_status", LIBEXEC / "plus_status"):
            leader, follower = pty.openpty()
            process = subprocess.Popen(
                ["runuser", "-u", "plusu1", "--", "env", f"PLUS_CONF={daemon.conf}",
                 f"COLUMNS={columns}", str(path), "-n"], stdout=follower,
                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
            os.close(follower)
            outputs.append((_drain(leader), process.wait(timeout=60), process.stderr.read()))
            os.close(leader)
        assert outputs[0] == outputs[1] and outputs[0][1] == 0


def _drain(leader: int) -> bytes:
    data = b""
    while select.select([leader], [], [], 30)[0]:
        try:
            chunk = os.read(leader, 65536)
        except OSError:              # EIO: the terminal's other side closed
            break
        if not chunk:
            break
        data += chunk
    return data


@pytest.fixture(scope="module")
def latin1(tmp_path_factory):
    folder = tmp_path_factory.mktemp("locales")
    made = subprocess.run(["localedef", "-i", "en_US", "-f", "ISO-8859-1",
                           str(folder / "en_US.ISO-8859-1")], capture_output=True)
    if made.returncode not in (0, 1) or not (folder / "en_US.ISO-8859-1").exists():
        pytest.skip(f"localedef cannot make en_US.ISO-8859-1: {made.stderr!r}")
    os.chmod(folder, 0o755)
    return {"LOCPATH": str(folder), "LANG": "en_US.ISO-8859-1"}


@pytest.mark.parametrize("words", [("plus_status", "-r", "1"), ("plus_status", "-o", "caf\xe9"),
                                   ("plus_reserve", "-N", "\u00e9t\u00e9", "-s", "now+1h"),
                                   ("plus_status", "-r", "\udce9")], ids=str)
@pytest.mark.parametrize("locale", ["latin1", "C", "C.UTF-8"])
def test_a_locale_encodes_as_the_python_command_does(daemon, latin1, words, locale):
    env = latin1 if locale == "latin1" else {"LANG": locale}
    encoded = [os.fsencode(word) if "\udce9" in word else
               word.encode("latin-1" if locale == "latin1" else "utf-8") for word in words]
    pair = (_run(daemon, "plusu1", BIN / words[0], encoded[1:], env),
            _run(daemon, "plusu1", LIBEXEC / words[0], encoded[1:], env))
    same(pair)


def test_a_closed_pipe_ends_it_as_the_python_command(daemon):
    for path in (BIN / "plus_status", LIBEXEC / "plus_status"):
        read, write = os.pipe()
        os.close(read)
        result = _run(daemon, "plusu1", path, ("-n",), None, stdout=write)
        os.close(write)
        assert (result.returncode, result.stderr) == (141, b""), path


def test_an_interrupt_ends_it_with_130_as_the_python_command(daemon):
    outcomes = []
    for path in (BIN / "plus_qsub", LIBEXEC / "plus_qsub"):
        read, write = os.pipe()         # its script on stdin, which never ends
        process = subprocess.Popen(["runuser", "-u", "plusu1", "--", "env",
                                    f"PLUS_CONF={daemon.conf}", str(path)], stdin=read,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/")
        os.close(read)
        client = _client_pid(process.pid, path.name)
        _wait_for(lambda pid=client: _waiting(pid))
        os.kill(client, signal.SIGINT)
        out, err = process.communicate(timeout=60)
        os.close(write)
        outcomes.append((process.returncode, out, err))
    assert outcomes[0] == outcomes[1] and outcomes[0][0] == 130


def _client_pid(runuser: int, name: str) -> int:
    """The command's own process under runuser (env execs it)."""
    def found():
        children = Path(f"/proc/{runuser}/task/{runuser}/children").read_text().split()
        return next((int(pid) for pid in children
                     if name in Path(f"/proc/{pid}/cmdline").read_bytes().decode()), None)
    return _wait_for(found)


def _waiting(pid: int) -> bool:
    """The command sleeps: the Python command reading its script, the
    client reading its socket (a SIGINT before the worker has started is
    forwarded once it has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "S"
    except OSError:
        return False


def _wait_for(condition, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


def _connected(daemon: Daemon) -> bool:
    """A command waits at the stopped daemon's socket, unaccepted (the
    client's worker connects only after it said STARTED)."""
    shown = subprocess.run(["ss", "-xlnH", "src", str(daemon.socket)], capture_output=True,
                           text=True).stdout.split()
    return len(shown) > 2 and int(shown[2]) > 0


def _died_mid_command(daemon: Daemon, path: Path, kill) -> tuple:
    """``path`` as plusu1 while the daemon is stopped, its request waiting,
    until ``kill`` ends what serves it."""
    _wait_for(lambda: not _connected(daemon))          # nothing left from before
    daemon.send(signal.SIGSTOP)
    try:
        process = subprocess.Popen(["runuser", "-u", "plusu1", "--", "env",
                                    f"PLUS_CONF={daemon.conf}", str(path), "-n"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/")
        _wait_for(lambda: _connected(daemon))
        kill()
        out, err = process.communicate(timeout=60)
    finally:
        daemon.send(signal.SIGCONT)
    return process.returncode, out, err


def _kill_command_server(daemon: Daemon) -> None:
    """The daemon's command server, then its workers, as killing the
    daemon's whole group does (systemd's stop): no one is left to say how
    the command ended."""
    def children(pid: int | str) -> list[int]:
        return [int(child) for child in subprocess.run(["pgrep", "-P", str(pid)],
                                                       capture_output=True, text=True).stdout.split()]
    [server] = [pid for pid in children(daemon.process.pid)
                if b"overlay.cmdserver.server" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    workers = children(server)
    for pid in [server, *workers]:
        os.kill(pid, signal.SIGKILL)


def test_a_command_server_killed_mid_command_ends_it_as_a_daemon_killed_under_the_python_command():
    """Whether it took effect is unknown: exit 3 and the Python command's
    line, never 1 (refused), which would tell a script that nothing was
    done (the kill -9 loop's model counts a refusal as nothing done). A
    worker killed alone is the command killed: the server says so, and
    the client dies by the same signal."""
    daemon = Daemon(settings=SETTINGS, cluster=CLUSTER).start()
    try:
        client = _died_mid_command(daemon, BIN / "plus_status",
                                   lambda: _kill_command_server(daemon))
        python = _died_mid_command(daemon, LIBEXEC / "plus_status",
                                   lambda: daemon.send(signal.SIGKILL))
    finally:
        daemon.cleanup()
    assert client == python
    assert python[:2] == (3, b"") and b"closed the connection without an answer" in python[2]


def test_with_no_daemon_running_it_says_the_same_line(tmp_path):
    conf = tmp_path / "plus.yaml"
    conf.write_text(f"state_dir: {tmp_path}/state\n")
    for words in (("plus_status",), ("plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1"),
                  ("plus_qrstat",)):
        runs = [subprocess.run([str(path), *words[1:]], capture_output=True, cwd="/",
                               env={**os.environ, "PLUS_CONF": str(conf)})
                for path in (BIN / words[0], LIBEXEC / words[0])]
        assert runs[0].returncode == runs[1].returncode == 3
        assert runs[0].stdout == runs[1].stdout and runs[0].stderr == runs[1].stderr
    missing = {**os.environ, "PLUS_CONF": str(tmp_path / "none.yaml")}
    runs = [subprocess.run([str(path)], capture_output=True, env=missing)
            for path in (BIN / "plus_status", LIBEXEC / "plus_status")]
    assert runs[0].returncode == runs[1].returncode == 3 and runs[0].stderr == runs[1].stderr


CONFIGURATIONS = [
    "state_dir: state\n",
    "state_dir: 'st # ate'  # comment\nsocket: \"s.sock\"\n",
    "state_dir: a\r\nsocket: b.sock   \r\n",
    "state_dir: a\rsocket: ../c.sock #x\n",
    "state_dir: first\n  state_dir: nested\nsocket: x.sock\nstate_dir: second\n",
    "state_dir:\tx\nsocket: \"\"\n",
    "state_dir: v\nstate_dir: 'unclosed\nsocket: './/y//z.sock'\n",
    "state_dir: x\nsocket: z.sock extra' \n",
    "state_dir: w\nstate_dir: \x0cx\nstate_dir: \x1fx\nsocket: q.sock\n",
    "state_dir: u\nstate_dir: 'x' y\nstate-dir: z\n1state_dir: z\n",
]


@pytest.mark.parametrize("text", CONFIGURATIONS, ids=repr)
def test_the_client_finds_the_socket_as_the_python_commands_do(text):
    """A stand-in command server where overlay.wire.protocol finds the
    socket: the client reaches it (and exits with its status) only if it
    read the configuration the same way (a relative PLUS_CONF, too)."""
    import socket
    import tempfile

    from overlay.wire import protocol
    folder = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        (folder / "conf").mkdir()
        (folder / "conf" / "plus.yaml").write_text(text, newline="")
        path = protocol.client_socket_path(str(folder / "conf" / "plus.yaml")) + ".cmd"
        assert path.startswith(str(folder))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(1)
        process = subprocess.Popen([str(BIN / "plus_status")], cwd=str(folder),
                                   env={**os.environ, "PLUS_CONF": "conf//./plus.yaml"},
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        server.settimeout(30)
        conn, _ = server.accept()
        conn.sendall(frames.frame(frames.EXITED, 42))
        assert process.wait(timeout=30) == 42
        conn.close()
        server.close()
    finally:
        shutil.rmtree(folder)


@pytest.mark.parametrize("compiler", ["cc", "musl-gcc"])
def test_the_client_compiles_clean_and_shares_the_servers_bounds(tmp_path, compiler):
    if shutil.which(compiler) is None:
        pytest.fail(f"no {compiler}: the test set-up (scripts/test-services.sh) installs it")
    built = subprocess.run([compiler, "-O2", "-Wall", "-Wextra", "-Werror", "-static",
                            "-DPLUS_LIBEXEC=\"/x\"", "-o", str(tmp_path / "client"), str(SOURCE)],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    text = SOURCE.read_text()
    for name in ("MAX_WORDS", "MAX_WORDS_BYTES", "MAX_ENTRIES", "MAX_ENTRIES_BYTES"):
        value = re.search(rf"#define {name} (.+)", text).group(1)
        assert eval(value) == getattr(frames, name), name
