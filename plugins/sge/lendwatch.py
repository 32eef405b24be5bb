"""The leader's watch over lent jobs: a thread that looks every
``lend_watch`` seconds while lending instances exist, and sleeps on an
event, costing nothing, while none do.

Grid Engine suspends a lent job the moment an AR job starts on its host
(slot-wise subordination); the look that follows ends it as it asked and
gives the lending instance the slots the AR's jobs left idle. So the
bound on a reclaim is Grid Engine's own dispatch of the AR job (the
suspension comes with it), and the lent job's end follows within one
``lend_watch`` interval plus its commands."""

from __future__ import annotations

import logging
import threading
from typing import Callable

log = logging.getLogger("plus.sge")


class LendWatch:
    """Calls ``look`` every ``interval`` seconds while watching is wanted."""

    def __init__(self, look: Callable[[], None], interval: float) -> None:
        self._look = look
        self._interval = interval
        self._wanted = threading.Event()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()

    def want(self, watching: bool) -> None:
        """Watch (lending instances exist) or sleep (none do)."""
        if not watching:
            self._wanted.clear()
            return
        with self._start:
            if self._closed.is_set():
                return
            self._wanted.set()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="plus-sge-lendwatch",
                                                daemon=True)
                self._thread.start()

    @property
    def watching(self) -> bool:
        return self._wanted.is_set()

    def close(self) -> None:
        with self._start:
            self._closed.set()
            self._wanted.set()          # wakes the thread to see it closed
            thread = self._thread
        if thread is not None:
            thread.join(timeout=10)

    def _run(self) -> None:
        failed: str | None = None
        while True:
            self._wanted.wait()
            if self._closed.is_set():
                return
            try:
                self._look()
                failed = None
            except Exception as exc:        # the next look tries again; said once
                if str(exc) != failed:
                    log.warning("lending watch: %s", exc)
                failed = str(exc)
            if self._closed.wait(self._interval):
                return
