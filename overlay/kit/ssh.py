"""Commands on another host over SSH (paramiko): the Runner that
``overlay.kit.remote`` hands out for a host reached over SSH, in a module of its
own so that a daemon without such hosts never imports paramiko."""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import threading
import time
from collections.abc import Iterator, Mapping, Sequence

import paramiko

from overlay.kit.remote import CommandError, Result, Runner

# OpenSSH allows 10 sessions per connection by default (MaxSessions), and a
# command past that limit is refused; stay under it with room to spare.
_MAX_CHANNELS = 8


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
