"""Run a batch system's commands here or on its master host over SSH
(``overlay.kit.ssh``).

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
import shlex
import subprocess
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

# Strict enough that a name can never be taken for an option or a path.
USER_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The exit status of a shell, env, runuser or sudo that found no command to
# run (127) or could not execute it (126): the command did not run at all.
_NOT_RUN = (126, 127)


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

    def runner(self, env: Mapping[str, str] | None = None) -> Runner:
        """An SshRunner (paramiko, and the cryptography it loads, are
        imported only when a host is reached over SSH: 30 MiB a daemon
        without SSH hosts does not carry)."""
        from overlay.kit.ssh import SshRunner
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
