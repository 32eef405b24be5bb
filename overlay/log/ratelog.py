"""Log lines a client can cause, rate-limited per client.

A hostile client must not be able to fill the disk, or bury what an
administrator looks for, by repeating a request that logs: each key (a
client, and what it did) gets at most ``burst`` lines per ``interval``;
the next line let through says how many were held back. The keys kept are
bounded too, so a client inventing keys costs no memory: the oldest key
goes, and what it held back is told with the next line of any key.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict

KEYS_KEPT = 4096


class RateLimitedLog:
    def __init__(self, logger: logging.Logger, interval: float = 60.0, burst: int = 1,
                 keys: int = KEYS_KEPT, clock=time.monotonic) -> None:
        self.logger, self.interval, self.burst, self.keys = logger, interval, burst, keys
        self.clock = clock
        self._windows: OrderedDict[object, list] = OrderedDict()   # key -> [start, lines, held]
        self._forgotten = 0          # held back under keys no longer kept
        self._lock = threading.Lock()

    def admit(self, key: object) -> int | None:
        """None if ``key`` has had its lines for this interval (the line is
        counted as held back); else how many were held back before it."""
        now = self.clock()
        with self._lock:
            window = self._windows.get(key)
            if window is None or now - window[0] >= self.interval:
                held = window[2] if window else 0
                window = [now, 0, 0]
                self._windows[key] = window
                self._windows.move_to_end(key)
                while len(self._windows) > self.keys:
                    self._forgotten += self._windows.popitem(last=False)[1][2]
            else:
                held = 0
            if window[1] >= self.burst:
                window[2] += 1
                return None
            window[1] += 1
            held, self._forgotten = held + self._forgotten, 0
            return held

    def log(self, level: int, key: object, message: str, *args: object,
            exc_info: bool = False) -> bool:
        """Log ``message % args`` unless ``key`` has had its lines for this
        interval; whether it was logged."""
        if not self.logger.isEnabledFor(level):
            return False
        held = self.admit(key)
        if held is None:
            return False
        self.logger.log(level, message + held_back(held), *args, exc_info=exc_info)
        return True

    def warning(self, key: object, message: str, *args: object) -> bool:
        return self.log(logging.WARNING, key, message, *args)

    def info(self, key: object, message: str, *args: object) -> bool:
        return self.log(logging.INFO, key, message, *args)


def held_back(count: int) -> str:
    return f" ({count} more such messages held back)" if count else ""


class RateLimitFilter(logging.Filter):
    """The same limit for a process's every line, keyed by logger and
    message template (for a library's own lines, such as uvicorn's)."""

    def __init__(self, interval: float = 60.0, burst: int = 10) -> None:
        super().__init__()
        self.limit = RateLimitedLog(logging.getLogger(), interval, burst)

    def filter(self, record: logging.LogRecord) -> bool:
        held = self.limit.admit((record.name, str(record.msg)[:200]))
        if held is None:
            return False
        if held:
            record.msg = f"{record.msg}{held_back(held)}"
        return True
