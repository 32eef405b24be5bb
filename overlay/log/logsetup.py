"""Where plus_scheduler's log goes (``log`` in plus.yaml): standard error
(for systemd's journal, or a supervisor that keeps it), the system's
logger, or a file of its own that rotates by size, so that the log never
grows without bound and never fills the disk the store is on. A log that
cannot be written (a full disk) drops the line: it never stops a request.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys

FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"
STDERR, SYSLOG = "stderr", "syslog"
SYSLOG_SOCKET = "/dev/log"


def configure(where: str, path: str, size: int, keep: int, level: int) -> None:
    """Send the root logger's lines to ``where`` (STDERR, SYSLOG, or a
    file at ``path`` rotated at ``size`` bytes with ``keep`` old files);
    ValueError naming the file if it cannot be written."""
    logging.raiseExceptions = False     # a line that cannot be written is dropped, silently
    if where == STDERR:
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(FORMAT))
    elif where == SYSLOG:
        handler = logging.handlers.SysLogHandler(SYSLOG_SOCKET,
                                                 logging.handlers.SysLogHandler.LOG_DAEMON)
        handler.setFormatter(logging.Formatter(
            f"plus_scheduler[{os.getpid()}]: %(name)s %(levelname)s %(message)s"))
    else:
        try:
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            handler = logging.handlers.RotatingFileHandler(
                path, maxBytes=size, backupCount=keep, encoding="utf-8",
                errors="backslashreplace")
        except OSError as exc:
            raise ValueError(f"log: cannot write {path}: {exc.strerror}") from None
        handler.setFormatter(logging.Formatter(FORMAT))
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(level)
