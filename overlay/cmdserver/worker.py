"""One worker: a fork of the command server, waiting idle for a
connection, which it serves as its caller's own process and then exits.

The caller is who the kernel says (SO_PEERCRED). The worker becomes that
user wholly (the user's groups, gid, uid; root stays root) before it reads
a byte the client sent, so a command runs with exactly the rights the
Python command would have. Then, within the time and size bounds, it takes
the request: the argument words, the environment, the working directory and
the standard streams as descriptors. It answers STARTED with its pid, sets
up what Python's start sets up for that environment, runs the command's
main as the launcher does, and answers EXITED with the status. What went
wrong before the start is told to the server (one byte on the control
socket: it logs, rate-limited) and to the client (REFUSED: it runs the
Python command instead).

A worker whose command ended as commands end (not by an interrupt or a
closed pipe) stays warm for its caller: it lets go of the client's
descriptors and directory, waits until the client has closed the
connection (so that no signal the client forwarded can reach a later
command), and tells the server it is free (DONE); the server hands it
that same user's next connection, never another's. A warm worker forks
nothing and copies no pages: a command then costs what its own code costs.
"""

from __future__ import annotations

import gc
import os
import pwd
import signal
import socket
import sys
import time
from typing import Callable

from overlay.cmdserver import frames, startup
from overlay.daemon.connections import Peer, peer_of
from overlay.kit.childprocess import undumpable

REPORTS = {"privileges": b"P", "garbage": b"G", "large": b"L", "slow": b"S", "unknown": b"U",
           "encoding": b"E"}
"""What a worker tells the server went wrong, one byte each."""
DONE = b"D"
"""What a worker tells the server when it is free for its caller's next command."""
_GONE_SECONDS = 1.0
"""How long a warm worker waits for its client to close the connection."""
_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
_FORWARDED = (signal.SIGINT, *_SIGNALS)
"""What the client forwards to its worker."""


class Refused(Exception):
    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def wait_and_serve(control: socket.socket, commands: dict[str, Callable[[], int]],
                   timeout: float) -> None:
    """The worker's life: wait for a connection and serve it, again for the
    same caller while the server keeps it warm; exit (never returns)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    gc.disable()                  # collected between commands, off the client's path
    caller = None
    while True:
        try:
            conn = _take_connection(control)
        except (OSError, EOFError):
            os._exit(0)                               # the server went away, or retired us
        status, served = 1, None
        try:
            status, served = serve(conn, control, commands, timeout, caller)
        finally:
            if served is None:
                os._exit(status)
        caller = served
        gc.collect()
        _tell(control, DONE)


def _take_connection(control: socket.socket) -> socket.socket:
    _data, fds, _flags, _address = socket.recv_fds(control, 1, 1)
    if not fds:
        raise EOFError
    return socket.socket(fileno=fds[0])


def serve(conn: socket.socket, control: socket.socket, commands: dict[str, Callable[[], int]],
          timeout: float, caller: Peer | None) -> tuple[int, Peer | None]:
    """Serve one connection: the command's exit status, and the caller
    (uid, gid) this worker may serve next, or None when it must leave.
    ``caller``: whom a warm worker served before (None: a fresh worker)."""
    try:
        peer = peer_of(conn)
        deadline = time.monotonic() + timeout
        if caller is not None and (peer.uid, peer.gid) != (caller.uid, caller.gid):
            raise Refused("privileges")      # the server hands a warm worker its own user only
        _become(peer)
        try:
            request = frames.receive(conn, deadline)
        except frames.BadRequest as exc:
            raise Refused(exc.kind) from None
        command = commands.get(os.path.basename(request.words[0]).decode("ascii", "replace"))
        if command is None:
            raise Refused("unknown")
        text = startup.apply_environment(_entries(request))
        if text.encoding != "utf-8" and not all(map(bytes.isascii, request.words
                                                    + request.entries)):
            raise Refused("encoding")     # this process decodes file names as UTF-8
        conn.settimeout(None)
        conn.sendall(frames.frame(frames.STARTED, os.getpid()))
    except Refused as refusal:
        _report(control, refusal.kind)
        _send(conn, frames.REFUSED, 0)
        return 1, None
    except (OSError, KeyboardInterrupt):
        return 1, None
    status, ended_well = _run(request, text, command)
    if not ended_well:
        _send(conn, frames.EXITED, status)
        return status, None
    _let_go()
    sent = _send(conn, frames.EXITED, status)
    return status, (peer if sent and _client_gone(conn) else None)


def _become(peer: Peer) -> None:
    """This process as the caller: groups, gid, uid, in that order, and
    out of other processes' reach. Refused if it cannot."""
    try:
        if os.getuid() != peer.uid:
            try:
                os.initgroups(pwd.getpwuid(peer.uid).pw_name, peer.gid)
            except KeyError:
                os.setgroups([peer.gid])
            os.setresgid(peer.gid, peer.gid, peer.gid)
            os.setresuid(peer.uid, peer.uid, peer.uid)
        undumpable("plus_scheduler (commands)")
    except OSError:
        raise Refused("privileges") from None


def _run(request: frames.Request, text: startup.Text,
         command: Callable[[], int]) -> tuple[int, bool]:
    """The command, as the launcher runs it (overlay.cli.common.launch),
    in the caller's setting; its exit status, and whether it ended as
    commands end (a worker stays warm only then)."""
    try:
        _set_up(request, text)
        try:
            status = command()
        except SystemExit as stop:
            status = stop.code
        if status is not None and not isinstance(status, int):
            print(status, file=sys.stderr)
            status = 1
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
        return (status or 0) & 0xFF, True
    except KeyboardInterrupt:
        return 128 + signal.SIGINT, False
    except BrokenPipeError:
        return 128 + signal.SIGPIPE, False


def _set_up(request: frames.Request, text: startup.Text) -> None:
    """The caller's umask, directory, streams, argument words and signal
    handling, as the Python command starts with (the environment is set)."""
    os.umask(request.umask)
    os.fchdir(request.cwd)
    os.close(request.cwd)
    for number in range(3):
        if number in request.streams:
            os.dup2(request.streams[number], number)
            os.close(request.streams[number])
        else:
            os.close(number)
    startup.rebuild_streams(text, set(request.streams))
    sys.argv = [word.decode(text.encoding, "surrogateescape") for word in request.words]
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for number in _SIGNALS:
        signal.signal(number, signal.SIG_DFL)


def _let_go() -> None:
    """Hold nothing of the client's once its command ended: its standard
    streams (a reader of its pipe sees the end when the client leaves) and
    its directory. The signals it may forward are held back from here on."""
    signal.pthread_sigmask(signal.SIG_BLOCK, _FORWARDED)
    null = os.open(os.devnull, os.O_RDWR)      # 0 to 2 itself if the command had closed one
    for number in range(3):
        if number != null:
            os.dup2(null, number)
    if null > 2:
        os.close(null)
    os.chdir("/")


def _client_gone(conn: socket.socket) -> bool:
    """Whether the client closed the connection soon after EXITED, having
    sent no signal meanwhile: only then may this worker serve again."""
    try:
        conn.settimeout(_GONE_SECONDS)
        gone = conn.recv(1) == b""
    except OSError:
        gone = False
    conn.close()
    if not gone or signal.sigpending() & set(_FORWARDED):
        return False
    for number in _FORWARDED:
        signal.signal(number, signal.SIG_DFL)       # a stray one ends an idle worker
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _FORWARDED)
    return True


def _entries(request: frames.Request) -> dict[str, str]:
    entries = {}
    for entry in request.entries:
        name, equals, value = entry.partition(b"=")
        if equals and name:     # the first of a name wins, as in os.environ
            entries.setdefault(name.decode("utf-8", "surrogateescape"),
                               value.decode("utf-8", "surrogateescape"))
    return entries


def _report(control: socket.socket, kind: str) -> None:
    _tell(control, REPORTS[kind])


def _tell(control: socket.socket, what: bytes) -> None:
    try:
        control.send(what)
    except OSError:
        pass


def _send(conn: socket.socket, kind: int, value: int) -> bool:
    try:
        conn.settimeout(1.0)
        conn.sendall(frames.frame(kind, value))
    except OSError:
        return False
    return True
