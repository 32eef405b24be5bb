"""overlay.kit.remote: commands run here and over SSH arrive intact, and a
command that cannot run fails with a message naming the host and command.

The SSH cases use the test sshd on 127.0.0.1:2222 set up by
scripts/test-sshd.sh (root logs in with /etc/plus-test/ssh/id_ed25519).
Without it they are skipped, except in CI (CI set), where they fail.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from overlay.kit.remote import CommandError, LocalRunner, runner_from_options
from overlay.kit.ssh import SshRunner
from sshd import ADDRESS as SSHD
from sshd import KEY, KNOWN_HOSTS
from sshd import need_sshd as _need_sshd

SSHD_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "test-sshd.sh"
SSHD_PIDFILE = Path("/run/plus-test-sshd.pid")

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="runuser needs root; the tests run as root via scripts/test.sh")


def _ssh(**options) -> SshRunner:
    return SshRunner(*SSHD, **{"key_file": KEY, "known_hosts": KNOWN_HOSTS, **options})


@pytest.fixture(params=["local", "ssh"])
def make_runner(request):
    """Makes runners of one kind (given env), closed when the test ends."""
    if request.param == "ssh":
        _need_sshd()
    made = []

    def make(env=None):
        made.append(LocalRunner(env) if request.param == "local" else _ssh(env=env))
        return made[-1]
    yield make
    for runner in made:
        runner.close()


@pytest.fixture
def runner(make_runner):
    return make_runner()


def test_outputs_and_status_come_back_exactly(runner):
    result = runner.run(["sh", "-c", "printf 'out\\n'; printf 'err\\n' >&2; exit 7"])
    assert (result.status, result.stdout, result.stderr) == (7, "out\n", "err\n")
    assert result.argv == ("sh", "-c", "printf 'out\\n'; printf 'err\\n' >&2; exit 7")
    assert result.text == "out\nerr"


def test_arguments_arrive_literally(runner):
    words = ["a b", "it's", '"q"', "$(id)", "`id`", "a;b", "*", "~", "$HOME", "x\ny",
             "", "-n", "back\\slash", "é", "> /tmp/x"]
    result = runner.run(["printf", "%s|", *words])
    assert result.stdout == "".join(f"{word}|" for word in words)


def test_big_outputs_on_both_streams_do_not_deadlock(runner):
    script = "head -c 3000000 /dev/zero | tr '\\0' e >&2; head -c 3000000 /dev/zero | tr '\\0' o"
    result = runner.run(["sh", "-c", script])
    assert (result.stdout, result.stderr) == ("o" * 3000000, "e" * 3000000)


def test_environment_is_applied_also_as_another_user(make_runner):
    value = "x y $(id) 'q' \"d\""
    runner = make_runner({"PLUS_A": value, "PLUS_EMPTY": ""})
    assert runner.run(["printenv", "PLUS_A"]).stdout == value + "\n"
    result = runner.run(["sh", "-c", 'id -un; printenv PLUS_A; echo "[$PLUS_EMPTY]"'],
                        as_user="plusu1")
    assert result.stdout == f"plusu1\n{value}\n[]\n"


def test_as_user_runs_as_that_user(runner):
    assert runner.run(["id", "-un"], as_user="plusu2").stdout == "plusu2\n"
    assert runner.run(["id", "-un"]).stdout == "root\n"


def test_stdin_is_passed_and_closed(runner):
    text = "line 1\n 'é' $(x)\n\nno newline"
    assert runner.run(["cat"], stdin=text).stdout == text
    assert runner.run(["cat"], stdin=text, as_user="plusu1").stdout == text
    assert runner.run(["cat"], timeout=5).stdout == ""    # no stdin: EOF, not a hang


def test_upload_gives_a_file_with_the_content_then_removes_it(runner):
    content = "queue_name x\nhostlist @a 'b' $(c)\n é"
    with runner.upload(content) as path:
        assert runner.run(["cat", path]).stdout == content
    assert runner.run(["test", "-e", path]).status == 1


def test_timeout_is_a_command_error(runner):
    started = time.monotonic()
    with pytest.raises(CommandError, match=r": sleep 2: timed out after 0.3s$"):
        runner.run(["sleep", "2"], timeout=0.3)
    assert time.monotonic() - started < 1.5


@pytest.mark.parametrize("as_user", [None, "plusu1"])
def test_missing_command_is_a_command_error_naming_it(runner, as_user):
    with pytest.raises(CommandError, match=f"^{runner.where}: .*plus-no-such-command"):
        runner.run(["plus-no-such-command", "x"], as_user=as_user)


def test_concurrent_commands_from_many_threads(runner):
    # 16 > OpenSSH's default MaxSessions (10): the runner must queue them.
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda i: runner.run(["printf", "%s", f"n {i}"]), range(16)))
    assert [result.stdout for result in results] == [f"n {i}" for i in range(16)]


def test_bad_names_are_refused_before_anything_runs(runner):
    with pytest.raises(ValueError, match="as_user: '-rf' is not a valid user name"):
        runner.run(["id"], as_user="-rf")
    with pytest.raises(ValueError, match="environment variable name 'A B' is not valid"):
        LocalRunner({"A B": "x"})


def test_user_switch_is_sudo_when_not_root():
    runner = SshRunner("master", user="plusmgr", env={"SGE_ROOT": "/opt/sge"})
    assert runner.command(["qresub", "7"], as_user="plusu1") == [
        "sudo", "-n", "-u", "plusu1", "--", "env", "SGE_ROOT=/opt/sge", "qresub", "7"]
    assert SshRunner("master").command(["id"], as_user="plusu1") == [
        "runuser", "-u", "plusu1", "--", "env", "id"]
    assert runner.where == "plusmgr@master:22"


# --- SSH only -----------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_port_names_host_and_port():
    port = _free_port()
    with pytest.raises(CommandError, match=f"^root@127.0.0.1:{port}: cannot connect"):
        SshRunner("127.0.0.1", port, key_file=KEY, known_hosts=KNOWN_HOSTS).run(["true"])


def test_unknown_host_key_says_how_to_fix_it(tmp_path):
    _need_sshd()
    empty = tmp_path / "known_hosts"
    empty.touch()
    with pytest.raises(CommandError) as caught:
        _ssh(known_hosts=str(empty)).run(["true"])
    assert str(caught.value).startswith("root@127.0.0.1:2222: unknown host key (ssh-ed25519 SHA256:")
    assert f"add the host's key to {empty}" in str(caught.value)
    assert "ssh-keyscan -p 2222 127.0.0.1" in str(caught.value)
    assert "ssh.accept_unknown_host: true" in str(caught.value)
    runner = _ssh(known_hosts=str(empty), accept_unknown_host=True)
    assert runner.run(["echo", "ok"]).stdout == "ok\n"
    runner.close()


def test_bad_host_key_login_or_files_are_command_errors(tmp_path):
    _need_sshd()
    other = tmp_path / "known_hosts"
    other.write_text(f"[127.0.0.1]:2222 {Path(KEY + '.pub').read_text()}")
    with pytest.raises(CommandError, match=f"host key differs from the one in {other}"):
        _ssh(known_hosts=str(other)).run(["true"])
    with pytest.raises(CommandError, match="^plusu1@127.0.0.1:2222: authentication failed"):
        _ssh(user="plusu1").run(["true"])
    with pytest.raises(CommandError, match=f"cannot read known_hosts {tmp_path}/none"):
        _ssh(known_hosts=str(tmp_path / "none")).run(["true"])
    with pytest.raises(CommandError, match=f"cannot read key {tmp_path}/none: No such file"):
        _ssh(key_file=str(tmp_path / "none")).run(["true"])
    with pytest.raises(CommandError, match=f"key {KEY}.pub: not a private key"):
        _ssh(key_file=KEY + ".pub").run(["true"])


def _sshd_processes() -> list[int]:
    """The test sshd's listener and its connection processes, children first."""
    listener = int(SSHD_PIDFILE.read_text())
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, todo = [], [listener]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(parents.get(pid, []))
    return tree[::-1]


def test_reconnects_after_sshd_restart():
    _need_sshd()
    runner = _ssh()
    try:
        assert runner.run(["echo", "before"]).stdout == "before\n"
        for pid in _sshd_processes():
            os.kill(pid, signal.SIGTERM)
        subprocess.run(["bash", str(SSHD_SCRIPT)], check=True, timeout=30)
        assert runner.run(["echo", "after"]).stdout == "after\n"
    finally:
        runner.close()
        subprocess.run(["bash", str(SSHD_SCRIPT)], check=True, timeout=30)


def test_reopens_a_connection_that_broke_before_a_command():
    _need_sshd()
    runner = _ssh()
    try:
        for pause in (0, 0.05, 0):    # whether or not paramiko saw it break yet
            runner._transport().sock.shutdown(socket.SHUT_RDWR)
            time.sleep(pause)
            assert runner.run(["echo", "ok"]).stdout == "ok\n"
    finally:
        runner.close()


# --- configuration ------------------------------------------------------------

def test_runner_from_options_builds_the_runner_asked_for():
    local = runner_from_options({"queues": ["all.q"]}, {"SGE_ROOT": "/opt/sge"})
    assert isinstance(local, LocalRunner) and local.env == {"SGE_ROOT": "/opt/sge"}
    ssh = runner_from_options(
        {"ssh": {"host": "master", "port": 2200, "user": "plusmgr", "key": "/k",
                 "known_hosts": "/kh", "accept_unknown_host": True}}, {})
    assert isinstance(ssh, SshRunner) and ssh.where == "plusmgr@master:2200"
    assert (ssh.key_file, ssh.known_hosts, ssh.accept_unknown_host) == ("/k", "/kh", True)
    defaults = runner_from_options({"ssh": {"host": "master"}}, {})
    assert defaults.where == "root@master:22" and defaults.known_hosts is None


@pytest.mark.parametrize(("ssh", "message"), [
    ("master", "ssh: expected a mapping of host, port, user, key, known_hosts, "
               "accept_unknown_host, got 'master'"),
    (None, "ssh: expected a mapping of .*, got None"),
    ({}, "ssh.host: expected a host name, got None"),
    ({"host": "two words"}, "ssh.host: expected a host name, got 'two words'"),
    ({"host": "m", "prot": 22}, "ssh.prot: unknown key; accepted: host, port, user, key, "
                                "known_hosts, accept_unknown_host"),
    ({"host": "m", "port": "x"}, "ssh.port: expected a port number 1-65535, got 'x'"),
    ({"host": "m", "port": 0}, "ssh.port: expected a port number 1-65535, got 0"),
    ({"host": "m", "port": True}, "ssh.port: expected a port number 1-65535, got True"),
    ({"host": "m", "user": "-oProxyCommand=x"}, "ssh.user: expected a user name, got '-oP"),
    ({"host": "m", "key": "id_rsa"}, "ssh.key: expected an absolute file path, got 'id_rsa'"),
    ({"host": "m", "known_hosts": 5}, "ssh.known_hosts: expected an absolute file path, got 5"),
    ({"host": "m", "accept_unknown_host": "yes"},
     "ssh.accept_unknown_host: expected true or false, got 'yes'"),
])
def test_runner_from_options_names_the_bad_key(ssh, message):
    with pytest.raises(ValueError, match=f"^{message}"):
        runner_from_options({"ssh": ssh}, {})
