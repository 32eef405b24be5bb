"""What a re-read plus.yaml (SIGHUP) changes in a running plus_scheduler.

Keys read at each request or pass change at once, as a qconf change does
in Grid Engine (seed 000: max_advance_reservations takes effect at once);
keys the daemon built its parts from at the start (socket, store, backend,
HTTP port, log, ...) keep their running values until the next restart,
and the log names them. Plugin sections other than the backend's are
checked and configured anew, on a fresh plugin manager.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, fields, replace

from overlay.daemon.config import Config
from overlay.network.http.settings import HttpSettings

LIVE = ("managers", "arusers", "act_for", "max_advance_reservations", "commit_timeout",
        "approval_timeout", "expiry", "max_expired", "timezone", "ending_soon", "notice",
        "idle_release", "clear_notice", "repeat")
"""Top-level keys read at each request or pass."""
LIVE_HTTP = ("trusted_principals", "token_lifespan", "metrics")
"""http: keys the daemon (not the HTTP companion) reads at each request."""
RETIMING = frozenset({"commit_timeout", "expiry", "max_expired", "ending_soon", "notice",
                      "idle_release", "clear_notice", "repeat"})
"""Keys that move ARs' due times: every AR is looked at again."""


@dataclass(frozen=True)
class Changes:
    """The keys whose value in the file differs from the running one."""

    live: tuple[tuple[str, object, object], ...]   # (key, running value, new value)
    sections: tuple[str, ...]                      # plugin sections, changed at once
    restart: tuple[str, ...]                       # wait for the next restart

    @property
    def retiming(self) -> bool:
        return any(key in RETIMING for key, _, _ in self.live)

    def __bool__(self) -> bool:
        return bool(self.live or self.sections or self.restart)


def compare(running: Config, read: Config) -> Changes:
    """Which keys changed, and whether each can change live."""
    live, restart = [], []
    for key in (f.name for f in fields(Config) if f.name not in ("path", "http", "sections")):
        old, new = getattr(running, key), getattr(read, key)
        if old != new:
            if key in LIVE:
                live.append((key, old, new))
            else:
                restart.append(key)
    for key in (f.name for f in fields(HttpSettings)):
        old, new = getattr(running.http, key), getattr(read.http, key)
        if old != new:
            if key in LIVE_HTTP:
                live.append((f"http.{key}", old, new))
            else:
                restart.append(f"http.{key}")
    sections = []
    for name in sorted(running.sections.keys() | read.sections.keys()):
        if running.sections.get(name) != read.sections.get(name):
            (restart if name == running.backend else sections).append(name)
    return Changes(tuple(live), tuple(sections), tuple(restart))


def merged(running: Config, read: Config) -> Config:
    """The configuration to run from now on: the running one with the
    file's live keys and plugin sections (the backend's section stays)."""
    config = copy.copy(running)
    for key in LIVE:
        setattr(config, key, getattr(read, key))
    config.http = replace(running.http, **{key: getattr(read.http, key) for key in LIVE_HTTP})
    config.sections = {name: section for name, section in read.sections.items()
                       if name != running.backend}
    if running.backend in running.sections:
        config.sections[running.backend] = running.sections[running.backend]
    return config


def apply(running: Config, config: Config) -> None:
    """Make the running configuration, the object every part of the daemon
    holds, take ``config``'s live keys and sections."""
    for key in (*LIVE, "http", "sections"):
        setattr(running, key, getattr(config, key))


def described(changes: Changes) -> str:
    """The changes that took effect, for the log (values of live keys,
    names of sections: a section may hold secrets)."""
    parts = [f"{key} {old!r} -> {new!r}" for key, old, new in changes.live]
    parts += [f"{name}: section" for name in changes.sections]
    return ", ".join(parts)
