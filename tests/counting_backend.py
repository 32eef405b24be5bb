"""A backend whose every per-AR call and whole-picture reconcile is
written down, for tests that count them across daemons (the backend
reconciled once, not twice, across a failover): the native backend
(``backend: counting``, its settings under ``counting:``), each call
appended as one line "pid method ids" to the file $PLUS_COUNTING_LOG.
The daemon imports it as a plugin (``plugins: [counting_backend]``, with
this folder on its PYTHONPATH)."""

from __future__ import annotations

import os

from overlay.api.plugin import hookimpl
from overlay_native.backend import NativeBackend


def _note(method: str, *ids: int) -> None:
    line = f"{os.getpid()} {method} {','.join(map(str, ids))}\n".encode()
    fd = os.open(os.environ["PLUS_COUNTING_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)               # one write with O_APPEND: lines never interleave
    finally:
        os.close(fd)


class CountingBackend(NativeBackend):
    def prepare(self, reservation):
        _note("prepare", reservation.id)
        super().prepare(reservation)

    def activate(self, reservation):
        _note("activate", reservation.id)
        super().activate(reservation)

    def teardown(self, reservation):
        _note("teardown", reservation.id)
        super().teardown(reservation)

    def release(self, reservation):
        _note("release", reservation.id)
        super().release(reservation)

    def modify(self, before, after):
        _note("modify", after.id)
        super().modify(before, after)

    def reconcile(self, reservations):
        _note("reconcile", *(ar.id for ar in reservations))
        super().reconcile(reservations)


def calls(path: str) -> list[tuple[int, str, list[int]]]:
    """The calls written so far: (pid, method, AR ids)."""
    try:
        with open(path) as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        return []
    return [(int(pid), method, [int(i) for i in ids.split(",") if i])
            for pid, method, ids in (line.split(" ", 2) for line in lines)]


@hookimpl
def plus_backends():
    return {"counting": CountingBackend.from_config}
