"""The leader's drain: reporting records from the store's outbox
(overlay.persistence.outbox) into the reporting file, in order, each
exactly once across crashes and failovers; and the same for a plugin's
own file (the native backend's accounting file), by the outbox's target.

A batch at a time: the drain notes in the store where the batch goes (the
file's identity, device:inode, and its length, which is where an append
lands), the batch's length, digest and last record; appends it and
fsyncs; then takes the batch's records and the note out of the outbox in
one transaction. A leader that finds a note (this one after an error, or
the next after a crash) reads the file back at the noted offset, the
batch's bytes and no more: the batch there means the crash came between
append and delete (only the records go); the file still ending at the
offset means it came before the append (the note goes, and the batch is
written as any other); a part of it there (a crash inside the write) is
completed. Chosen because the file is the one witness of what reached it,
and reading back the noted batch costs what the batch costs, not what the
file holds; a record of written batches kept beside the file could be
made wrong by the very crash it is to survive.

A file at the path that is not the noted one (rotated, replaced) or is
shorter than the offset (truncated) cannot tell: the batch is written to
it again, with a warning (a record twice rather than none).

Fencing: a batch is noted and appended only while ``fence()`` (the lease's
``holds``) says this daemon leads, checked before the note and again
between note and append. What no check can close is a leader stopped
inside that last step and woken after the next leader wrote the batch:
the file system takes no lease, so that one system call's window stays.

Every daemon that may lead appends to the file at its own path (the
core's ``accounting_path``, the native backend's ``accounting_file``), so
the file must be on storage they all write (shared, as the spool of Grid
Engine's shadowd is), or each leader's records land in its own file.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from typing import BinaryIO, Callable

from overlay.persistence.outbox import BATCH, Mark, Outbox
from overlay.persistence.store import StoreUnavailable
from overlay.reporting import filemark
from overlay.reporting.accounting import ReportingWriter

log = logging.getLogger("plus.reporting")

POLL = 2.0
"""Seconds between two looks at the outbox when nothing wakes the drain:
records of other daemons (when the change feed is slow) and of plugins."""
GATHER = 0.05
"""After a wake, how long the records of a burst of changes gather, so
that they are appended (and fsynced) as one batch rather than one each."""


class _Fenced(Exception):
    """This daemon no longer leads: it writes nothing."""


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ReportingDrain:
    """Appends the outbox's records for its target to the file at ``path``
    (a new one starts with ``header``); ``start`` runs it on a thread of
    its own (the leader's), ``drain`` once, here and now."""

    def __init__(self, outbox: Outbox, path: str, fence: Callable[[], bool] = lambda: True,
                 header: bytes = b"") -> None:
        self.outbox, self.fence = outbox, fence
        self.writer = ReportingWriter(path, header)
        self.shown = f"the {outbox.target} file {path}"
        self._lock = threading.Lock()            # one drain at a time
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    def start(self) -> None:
        """Drain on a thread of its own from now on (once: a daemon that
        leads again keeps the thread it had; the fence idles it meanwhile)."""
        self._wake.set()
        if self._thread is not None:
            return
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="plus-reporting", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread, after a last drain (what is committed reaches
        the file before the daemon stops)."""
        if self._thread is None:
            return
        self._stopping.set()
        self._wake.set()
        self._thread.join(timeout=30)
        self._thread = None
        self.drain()

    def wake(self) -> None:
        """Records were committed: drain soon (if the thread runs)."""
        self._wake.set()

    def _run(self) -> None:
        while not self._stopping.is_set():
            if self._wake.wait(POLL):
                self._stopping.wait(GATHER)
            self._wake.clear()
            if not self._stopping.is_set():
                self.drain()

    def drain(self) -> int:
        """Append what waits in the outbox, if this daemon leads; how many
        records. A file or store that cannot be written is logged, once
        until it can again: the records wait in the outbox."""
        with self._lock:
            try:
                written = self._drain()
            except _Fenced:
                return 0
            except (OSError, StoreUnavailable) as exc:
                if not self._failing:
                    reason = exc.strerror if isinstance(exc, OSError) else str(exc)
                    log.error("cannot write %s (%s); its records wait in "
                              "the store", self.shown, reason)
                self._failing = True
                return 0
            if self._failing:
                log.info("%s is written again", self.shown)
                self._failing = False
            return written

    def _drain(self) -> int:
        written = 0
        while True:
            mark, rows = self.outbox.look()
            if mark is None and not rows:
                return written
            if not self.fence():
                raise _Fenced
            if mark is not None:
                self._settle(mark)
                continue
            self._append("".join(line for _, line in rows).encode("utf-8"), rows[-1][0])
            written += len(rows)
            if len(rows) < BATCH:
                return written

    def _append(self, data: bytes, last: int) -> None:
        noted: list[Mark] = []

        def note(handle: BinaryIO) -> None:
            mark = Mark(filemark.identity(handle), os.fstat(handle.fileno()).st_size, len(data),
                        last, _digest(data))
            self.outbox.note(mark)
            if not self.fence():
                raise _Fenced
            noted.append(mark)

        self.writer.append(data, before=note)
        self.outbox.done(noted[0])

    def _settle(self, mark: Mark) -> None:
        """A noted batch: find out whether the file has it, and finish it."""
        data = "".join(self.outbox.through(mark.last)).encode("utf-8")
        if _digest(data) != mark.digest:
            log.error("the outbox no longer holds the batch noted for %s "
                      "(records up to %d): writing what it holds", self.shown, mark.last)
            self.outbox.forget()
            return
        try:
            with open(self.writer.path, "rb") as handle:
                same = (filemark.identity(handle) == mark.file and
                        os.fstat(handle.fileno()).st_size >= mark.offset)
                there = os.pread(handle.fileno(), mark.length, mark.offset) if same else b""
        except FileNotFoundError:
            same, there = False, b""
        if not same:
            log.warning("%s was replaced or truncated while %d bytes of "
                        "records were appended to it: writing them again (some may be there "
                        "twice)", self.shown, mark.length)
            self.outbox.forget()
        elif there == data:
            log.info("%s has the batch appended before a failure (records "
                     "up to %d): taking it out of the outbox", self.shown, mark.last)
            self.outbox.done(mark)
        elif not there:
            self.outbox.forget()                   # never appended: written as any batch
        elif data.startswith(there) and len(there) < len(data):
            log.warning("%s ends in part of a batch (a failure inside the "
                        "write): completing it", self.shown)
            self.writer.append(data[len(there):])
            self.outbox.done(mark)
        else:
            log.warning("%s has other bytes where a batch of records was "
                        "appended: writing them again", self.shown)
            self.outbox.forget()
