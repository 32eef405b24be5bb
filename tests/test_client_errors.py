"""How the commands fail (issue 11): an option error is one line naming the
option and the accepted form, never an internal function; a closed pipe,
an interrupt, a binary file or anything unexpected is at most one line,
never a traceback. The commands run from this tree against a stand-in for
plus_scheduler on a Unix socket."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading

import pytest

import commands_from_source as commands

PARSED = sorted(set(commands.ENTRY_POINTS) - commands.OWN_GRAMMAR)


def typed_options(command: str) -> list[str]:
    """The options (or positional names) whose values a type function parses."""
    return [action.option_strings[0] if action.option_strings else action.metavar
            for action in commands.parser(command).options() if action.type is not None]


SEED_WORDS = ("plus_query", "plus_resquery", "plus_setres", "plus_resqandset")


@pytest.mark.parametrize("command", PARSED)
def test_an_option_error_names_the_option_never_a_function(command, capsys):
    options = typed_options(command)
    assert options or command in ("plus_schedkill", "plus_web",  # no options with values
                                  *SEED_WORDS)              # the seed's words, checked by position
    for option in options:
        with pytest.raises(SystemExit) as stop:
            commands.parser(command).parse_args([option, "\x00bad"] if option.startswith("-")
                                                else ["\x00bad"])
        err = capsys.readouterr().err
        assert stop.value.code == commands.USAGE_STATUS.get(command, 2)
        assert err.count("\n") == 1 and err.startswith(f"{command}: {option}: "), err
        assert not re.search(r"invalid \w+ value", err), err


class FakeDaemon:
    """Answers every request on the socket with ``reply`` (None: never)."""

    def __init__(self, folder) -> None:
        self.conf = folder / "plus.yaml"
        self.conf.write_text("state_dir: .\nsocket: plus.sock\n")
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(folder / "plus.sock"))
        self.server.listen()
        self.reply: dict | None = {"ok": True, "data": []}
        self.asked = threading.Event()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            with connection, connection.makefile("rb") as stream:
                stream.readline()
                self.asked.set()
                if self.reply is None:
                    connection.recv(1)          # until the client is gone
                else:
                    connection.sendall(json.dumps(self.reply).encode() + b"\n")


@pytest.fixture
def daemon(tmp_path):
    fake = FakeDaemon(tmp_path)
    yield fake
    fake.server.close()


def start(command: str, *args: str, conf, **options) -> subprocess.Popen:
    return subprocess.Popen(commands.argv(command, *args), cwd=commands.REPO, text=True,
                            env={**os.environ, "PLUS_CONF": str(conf)}, stderr=subprocess.PIPE,
                            **options)


def summary_rows(count: int) -> list[list]:
    return [[n, f"ar{n}", "alice", "w", 1_800_000_000, 1_800_003_600, "node1"]
            for n in range(1, count + 1)]


def test_a_reader_that_leaves_ends_the_command_quietly(daemon):
    """plus_status | head -1: no traceback, the status of a command SIGPIPE ended."""
    daemon.reply = {"ok": True, "data": summary_rows(20000)}
    process = start("plus_status", conf=daemon.conf, stdout=subprocess.PIPE)
    assert process.stdout.readline().startswith("AR-ID")
    process.stdout.close()
    assert process.wait(timeout=120) == 128 + signal.SIGPIPE
    assert process.stderr.read() == ""


def test_a_closed_pipe_at_exit_is_quiet_too(daemon):
    """Output small enough to wait in the buffer meets the closed pipe only
    when the interpreter flushes it at exit ("Exception ignored ...")."""
    daemon.reply = {"ok": True, "data": summary_rows(1)}
    reader, writer = os.pipe()
    os.close(reader)
    process = start("plus_status", conf=daemon.conf, stdout=writer)
    os.close(writer)
    assert process.wait(timeout=120) == 128 + signal.SIGPIPE
    assert process.stderr.read() == ""


def _as_at_a_terminal() -> None:
    """Ctrl-C as a user's shell delivers it: a suite started in the
    background of a script inherits SIGINT ignored, and so would the command."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_an_interrupt_exits_130_without_a_traceback(daemon):
    daemon.reply = None
    process = start("plus_status", conf=daemon.conf, stdout=subprocess.PIPE,
                    preexec_fn=_as_at_a_terminal)
    assert daemon.asked.wait(120)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=120) == 130
    assert process.stderr.read() == ""


def test_an_unexpected_error_is_one_line(daemon):
    daemon.reply = {"ok": True, "data": {"id": 7}}        # no "pending": a client bug's stand-in
    process = start("plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1", conf=daemon.conf,
                    stdout=subprocess.PIPE)
    assert process.wait(timeout=120) == 1
    assert process.stderr.read() == "plus_reserve: unexpected error (KeyError: 'pending')\n"


@pytest.mark.parametrize("command,args,conf,status,message", [
    ("plus_account", ["-f", "/bin/ls"], None, 1, "plus_account: cannot read /bin/ls: not a text "
                                                  "file (UTF-8)"),
    ("plus_account", ["-f", "/"], None, 1, "plus_account: cannot read /: Is a directory"),
    ("plus_status", [], "/bin/ls", 3, "plus_status: cannot read the configuration /bin/ls (not "
                                      "a text file (UTF-8)); set PLUS_CONF to plus_scheduler's "
                                      "configuration file"),
    ("plus_account", [], "/nonexistent/plus.yaml", 1, "plus_account: cannot read the "
                                                      "configuration /nonexistent/plus.yaml (No "
                                                      "such file or directory); give -f logfile, "
                                                      "or set PLUS_CONF to plus_scheduler's "
                                                      "configuration file"),
    ("plus_qacct", ["-f", "/bin/ls"], None, 1, None),        # the first line's complaint
])
def test_an_unreadable_or_binary_file_is_one_line_naming_it(daemon, command, args, conf, status,
                                                             message):
    process = start(command, *args, conf=conf or daemon.conf, stdout=subprocess.PIPE)
    assert process.wait(timeout=120) == status
    err = process.stderr.read()
    if message is None:
        assert err.count("\n") == 1 and "/bin/ls" in err, err
    else:
        assert err == message + "\n"
