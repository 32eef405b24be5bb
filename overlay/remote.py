"""Run a batch system's commands here or on its master host over SSH.

Backends (Grid Engine's qconf/qmod/qresub, TORQUE's qmgr/pbsnodes) speak to
their batch system only through a Runner, so the daemon may live on another
host than the batch system's master. A command that ran is a Result whatever
its exit status (qconf exits 1 for "already exists" and the caller decides);
only a command that could not run at all raises CommandError.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shlex
import subprocess
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import paramiko

# Strict enough that a name can never be taken for an option or a path.
USER_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The exit status of a shell, env, runuser or sudo that found no command to
# run (127) or could not execute it (126): the command did not run at all.
_NOT_RUN = (126, 127)
# OpenSSH allows 10 sessions per connection by default (MaxSessions), and a
# command past that limit is refused; stay under it with room to spare.
_MAX_CHANNELS = 8


class CommandError(Exception):
    """A command could not be run at all: missing, unreachable host, timeout."""


@dataclass(frozen=True)
class Result:
    """What a command that ran printed and how it exited."""

    argv: tuple[str, ...]
    status: int
    stdout: str
    stderr: str

    @property
    def text(self) -> str:
        """Both outputs, stripped: for messages and one-line answers."""
        return (self.stdout + self.stderr).strip()


class Runner(ABC):
    """Runs argv lists on one host, with one environment for every command."""

    where: str    # "local" or user@host:port, for messages

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = dict(env or {})
        for name in self.env:
            if not _ENV_NAME.match(name):
                raise ValueError(f"environment variable name {name!r} is not valid")

    @property
    @abstractmethod
    def privileged(self) -> bool:
        """Whether commands run as root, and so switch users with runuser."""

    def command(self, argv: Sequence[str], as_user: str | None = None) -> list[str]:
        """The argv that is run for ``argv``: the user switch, then ``env``
        (after the switch, which would otherwise drop the variables)."""
        argv = list(argv)
        if not argv:
            raise ValueError("empty command")
        if self.env or as_user is not None:
            # env also makes a missing command exit 127 after runuser, which
            # itself exits 1 for it.
            argv = ["env", *(f"{k}={v}" for k, v in self.env.items()), *argv]
        if as_user is not None:
            if not USER_PATTERN.match(as_user):
                raise ValueError(f"as_user: {as_user!r} is not a valid user name")
            switch = ["runuser", "-u"] if self.privileged else ["sudo", "-n", "-u"]
            argv = [*switch, as_user, "--", *argv]
        return argv

    @abstractmethod
    def run(self, argv: Sequence[str], *, as_user: str | None = None,
            stdin: str | None = None, timeout: float = 60) -> Result:
        """Run ``argv`` (as ``as_user`` if given) and wait for it."""

    @abstractmethod
    def upload(self, content: str) -> AbstractContextManager[str]:
        """A temporary file holding ``content`` on the target host, readable
        by the runner's own user, for commands that read files (qconf -Aq);
        removed on leaving the context."""

    def close(self) -> None:
        """Release connections."""

    def _checked(self, argv: Sequence[str], status: int, stdout: str, stderr: str) -> Result:
        if status in _NOT_RUN:
            detail = stderr.strip().splitlines()[-1:] or [f"exit status {status}"]
            raise CommandError(f"{self.where}: cannot run {argv[0]}: {detail[0]}")
        return Result(tuple(argv), status, stdout, stderr)


class LocalRunner(Runner):
    """Commands on this host, as the daemon's user or through runuser/sudo."""

    where = "local"

    @property
    def privileged(self) -> bool:
        return os.geteuid() == 0

    def run(self, argv: Sequence[str], *, as_user: str | None = None,
            stdin: str | None = None, timeout: float = 60) -> Result:
        full = self.command(argv, as_user)
        try:
            done = subprocess.run(
                full, input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                capture_output=True, encoding="utf-8", errors="replace", timeout=timeout,
                env={**os.environ, **self.env})
        except FileNotFoundError:
            raise CommandError(f"local: command not found: {full[0]}") from None
        except PermissionError:
            raise CommandError(f"local: cannot execute {full[0]}: permission denied") from None
        except subprocess.TimeoutExpired:
            raise CommandError(f"local: {shlex.join(argv)}: timed out after {timeout:g}s") from None
        return self._checked(argv, done.returncode, done.stdout, done.stderr)

    @contextlib.contextmanager
    def upload(self, content: str) -> Iterator[str]:
        fd, path = tempfile.mkstemp(prefix="plus-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(content)
            yield path
        finally:
            os.unlink(path)


class _UnknownHostKey(paramiko.SSHException):
    """Raised by _RejectUnknown so that it can be told from other failures."""


class _RejectUnknown(paramiko.MissingHostKeyPolicy):
    def missing_host_key(self, client, hostname, key):
        raise _UnknownHostKey(f"{key.get_name()} {key.fingerprint}")


class SshRunner(Runner):
    """Commands on another host over one SSH connection, shared by threads
    (each command is a channel of its own) and reopened if it died."""

    def __init__(self, host: str, port: int = 22, user: str = "root", *,
                 key_file: str | None = None, known_hosts: str | None = None,
                 accept_unknown_host: bool = False, env: Mapping[str, str] | None = None,
                 connect_timeout: float = 10) -> None:
        super().__init__(env)
        self.host, self.port, self.user = host, port, user
        self.key_file, self.known_hosts = key_file, known_hosts
        self.accept_unknown_host = accept_unknown_host
        self.connect_timeout = connect_timeout
        self.where = f"{user}@{host}:{port}"
        self._client: paramiko.SSHClient | None = None
        self._lock = threading.Lock()
        self._channels = threading.BoundedSemaphore(_MAX_CHANNELS)

    @property
    def privileged(self) -> bool:
        return self.user == "root"

    def _connect(self) -> paramiko.SSHClient:
        client = paramiko.SSHClient()
        if self.known_hosts:
            files = [self.known_hosts]
        else:
            files = [path for path in ("/etc/ssh/ssh_known_hosts",
                                       os.path.expanduser("~/.ssh/known_hosts"))
                     if os.path.exists(path)]
        try:
            for path in files:
                client.load_system_host_keys(path)
        except OSError as error:
            raise CommandError(f"{self.where}: cannot read known_hosts {error.filename}: "
                               f"{error.strerror}") from None
        client.set_missing_host_key_policy(
            paramiko.AutoAddPolicy() if self.accept_unknown_host else _RejectUnknown())
        try:    # read here, as paramiko's own errors for a bad key do not name it
            key = paramiko.PKey.from_path(self.key_file) if self.key_file else None
        except OSError as error:
            raise CommandError(f"{self.where}: cannot read key {self.key_file}: "
                               f"{error.strerror}") from None
        except (paramiko.SSHException, paramiko.pkey.UnknownKeyType, ValueError, TypeError):
            raise CommandError(f"{self.where}: key {self.key_file}: not a private key without "
                               "passphrase (RSA, ECDSA or Ed25519)") from None
        try:
            client.connect(
                self.host, self.port, username=self.user, pkey=key,
                look_for_keys=key is None, allow_agent=key is None,
                timeout=self.connect_timeout, banner_timeout=self.connect_timeout,
                auth_timeout=self.connect_timeout, channel_timeout=self.connect_timeout)
        except Exception as error:
            client.close()    # a failed authentication leaves the transport open
            raise CommandError(f"{self.where}: {self._failure(error)}") from None
        return client

    def _failure(self, error: Exception) -> str:
        """Why connecting failed, and for the host key what to do about it."""
        known = self.known_hosts or "~/.ssh/known_hosts"
        if isinstance(error, _UnknownHostKey):
            return (f"unknown host key ({error}): add the host's key to {known} (e.g. "
                    f"ssh-keyscan -p {self.port} {self.host} >>{known}, after checking the "
                    "fingerprint), or set ssh.accept_unknown_host: true")
        if isinstance(error, paramiko.BadHostKeyException):
            return (f"host key differs from the one in {known} "
                    "(host reinstalled, or someone in between?)")
        if isinstance(error, paramiko.AuthenticationException):
            return f"authentication failed (key {self.key_file or 'default'}): {error}"
        return f"cannot connect: {error}"

    def _transport(self, dead: paramiko.Transport | None = None) -> paramiko.Transport:
        """The live connection, opened or reopened under the lock; ``dead``
        is one a caller saw fail, so it is replaced once, not once a thread."""
        with self._lock:
            transport = self._client.get_transport() if self._client else None
            if transport is None or transport is dead or not transport.is_active():
                if self._client:
                    self._client.close()
                    self._client = None
                self._client = self._connect()
                transport = self._client.get_transport()
            return transport

    def _session(self) -> paramiko.Channel:
        """A new channel; a connection found dead (sshd restarted) is reopened
        once. Nothing ran on it yet, so retrying is always safe."""
        transport = self._transport()
        try:
            return transport.open_session(timeout=self.connect_timeout)
        except paramiko.ChannelException as error:    # refused this once, by a live sshd
            raise CommandError(f"{self.where}: cannot open a session: {error}") from None
        except (paramiko.SSHException, OSError, EOFError):
            pass    # a broken connection, which is_active() may not know yet
        try:
            return self._transport(dead=transport).open_session(timeout=self.connect_timeout)
        except (paramiko.SSHException, OSError, EOFError) as error:
            raise CommandError(f"{self.where}: cannot open a session: {error}") from None

    def run(self, argv: Sequence[str], *, as_user: str | None = None,
            stdin: str | None = None, timeout: float = 60) -> Result:
        # The remote side always hands the line to the user's shell, so each
        # word is quoted on its own: the one way argv arrives there intact.
        line = shlex.join(self.command(argv, as_user))
        deadline = time.monotonic() + timeout
        with self._channels:
            channel = self._session()
            try:
                return self._checked(argv, *self._exchange(channel, line, stdin, deadline))
            except TimeoutError:    # before OSError, which it is a kind of; the remote
                # command is not killed: without a terminal sshd cannot hang it up
                raise CommandError(f"{self.where}: {shlex.join(argv)}: "
                                   f"timed out after {timeout:g}s") from None
            except (paramiko.SSHException, OSError, EOFError) as error:
                raise CommandError(f"{self.where}: {shlex.join(argv)}: {error}") from None
            finally:
                channel.close()

    @staticmethod
    def _exchange(channel: paramiko.Channel, line: str, stdin: str | None,
                  deadline: float) -> tuple[int, str, str]:
        """Run ``line`` on ``channel`` and read stdout and stderr as they
        come (reading one to its end first could block on the other)."""
        channel.settimeout(max(deadline - time.monotonic(), 0.001))
        channel.exec_command(line)
        if stdin is not None:
            channel.sendall(stdin.encode())
        channel.shutdown_write()
        out, err = [], []
        while True:
            # EOF comes after all the data: once seen, one more drain gets it all.
            ended = channel.eof_received or channel.closed
            while channel.recv_ready():
                out.append(channel.recv(65536))
            while channel.recv_stderr_ready():
                err.append(channel.recv_stderr(65536))
            if ended:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            select.select([channel], [], [], remaining)    # wakes on stdout and stderr
        if not channel.eof_received:
            raise paramiko.SSHException("connection lost while the command ran")
        if not channel.status_event.wait(max(deadline - time.monotonic(), 0)):
            raise TimeoutError
        return (channel.recv_exit_status(), b"".join(out).decode(errors="replace"),
                b"".join(err).decode(errors="replace"))

    @contextlib.contextmanager
    def upload(self, content: str) -> Iterator[str]:
        made = self.run(["mktemp", "/tmp/plus-XXXXXXXXXX"], timeout=self.connect_timeout)
        if made.status != 0:
            raise CommandError(f"{self.where}: mktemp failed: {made.text}")
        path = made.stdout.strip()
        try:
            with self._channels:
                try:
                    with self._transport().open_sftp_client() as sftp:
                        with sftp.open(path, "w") as file:
                            file.write(content.encode())
                except (paramiko.SSHException, OSError, EOFError) as error:
                    raise CommandError(f"{self.where}: cannot write {path}: {error}") from None
            yield path
        finally:
            self.run(["rm", "-f", "--", path], timeout=self.connect_timeout)

    def close(self) -> None:
        with self._lock:
            if self._client:
                self._client.close()
                self._client = None


_SSH_KEYS = ("host", "port", "user", "key", "known_hosts", "accept_unknown_host")


@dataclass(frozen=True)
class SshSettings:
    """Where and how to reach a host over SSH, checked (parse_ssh)."""

    host: str
    port: int = 22
    user: str = "root"
    key: str | None = None
    known_hosts: str | None = None
    accept_unknown_host: bool = False

    def runner(self, env: Mapping[str, str] | None = None) -> SshRunner:
        return SshRunner(self.host, self.port, self.user, key_file=self.key,
                         known_hosts=self.known_hosts,
                         accept_unknown_host=self.accept_unknown_host, env=env)


def parse_ssh(ssh: Any, defaults: Mapping[str, Any] | None = None,
              where: str = "ssh") -> SshSettings:
    """SSH settings from a configuration mapping of host, port, user, key,
    known_hosts and accept_unknown_host (``defaults`` fill what it leaves
    out); ValueError names the key as ``where.key``."""
    if not isinstance(ssh, Mapping):
        raise ValueError(f"{where}: expected a mapping of {', '.join(_SSH_KEYS)}, got {ssh!r}")
    unknown = sorted(str(key) for key in ssh if key not in _SSH_KEYS)
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown key; accepted: {', '.join(_SSH_KEYS)}")
    ssh = {**(defaults or {}), **ssh}
    host = ssh.get("host")
    if not isinstance(host, str) or not host or host.split() != [host]:
        raise ValueError(f"{where}.host: expected a host name, got {host!r}")
    port = ssh.get("port", 22)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"{where}.port: expected a port number 1-65535, got {port!r}")
    user = ssh.get("user", "root")
    if not isinstance(user, str) or not USER_PATTERN.match(user):
        raise ValueError(f"{where}.user: expected a user name, got {user!r}")
    paths = {}
    for key in ("key", "known_hosts"):
        value = ssh.get(key)
        if value is not None and (not isinstance(value, str) or not os.path.isabs(value)):
            raise ValueError(f"{where}.{key}: expected an absolute file path, got {value!r}")
        paths[key] = value
    accept = ssh.get("accept_unknown_host", False)
    if not isinstance(accept, bool):
        raise ValueError(f"{where}.accept_unknown_host: expected true or false, got {accept!r}")
    return SshSettings(host, port, user, paths["key"], paths["known_hosts"], accept)


def runner_from_options(options: Mapping[str, Any], env: Mapping[str, str]) -> Runner:
    """The runner a backend's configuration section asks for: local unless
    it has ``ssh: {host: ..., port, user, key, known_hosts, accept_unknown_host}``."""
    if "ssh" not in options:
        return LocalRunner(env)
    return parse_ssh(options["ssh"]).runner(env)
