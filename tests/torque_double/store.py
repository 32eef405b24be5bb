"""The double's state on disk: one JSON file read and replaced atomically under
an exclusive flock, so commands run by any user (and the tests' API) see one
consistent server; plus the append-only log of the commands run against it.

Everything is world-readable and -writable: the state directory is a test
fixture shared by root and the unprivileged test users."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator

STATE = "state.json"
LOCK = "state.lock"
LOG = "commands.jsonl"


def create(directory: str, state: dict) -> None:
    """Write the initial state, the lock file and an empty command log."""
    for name in (LOCK, LOG):
        path = os.path.join(directory, name)
        open(path, "a").close()
        os.chmod(path, 0o666)
    _write(directory, state)


@contextlib.contextmanager
def locked(directory: str) -> Iterator[dict]:
    """The state, held under the lock; whatever the caller changed in it is
    written back when the block ends without an exception."""
    with open(os.path.join(directory, LOCK), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with open(os.path.join(directory, STATE)) as handle:
            state = json.load(handle)
        yield state
        _write(directory, state)


def append_log(directory: str, entry: dict) -> None:
    """Add one command to the log (call it while holding the lock)."""
    with open(os.path.join(directory, LOG), "a") as handle:
        handle.write(json.dumps(entry) + "\n")


def read_log(directory: str) -> list[dict]:
    with open(os.path.join(directory, LOG)) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _write(directory: str, state: dict) -> None:
    tmp = os.path.join(directory, f".state.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        with os.fdopen(fd, "w") as handle:
            os.fchmod(handle.fileno(), 0o666)
            json.dump(state, handle)
        os.replace(tmp, os.path.join(directory, STATE))
    except BaseException:
        os.unlink(tmp)
        raise
