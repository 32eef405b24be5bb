"""The companion's side of the event stream: one wait on the daemon for
all streams (``event_head``, held while any stream is open), the streams
counted per user and in all, and each stream's wait for the next event.

A stream holds no thread and no daemon connection while it waits: when the
last event's id moves past what a stream has read, it asks the daemon for
its next events with its own token (the daemon decides what that user may
see, and refuses a token revoked meanwhile), so a change costs a read per
open stream and an idle stream costs nothing but its heartbeat.
"""

from __future__ import annotations

import asyncio
from collections import Counter

from overlay.network.http import daemon_client
from overlay.wire.protocol import ProtocolError

MAX_STREAMS = 256
"""Streams open at once, from everyone."""
MAX_STREAMS_PER_USER = 4
"""Streams one user may hold open at once."""
HEAD_WAIT = 20
"""Seconds one ``event_head`` waits in the daemon."""


class TooManyStreams(Exception):
    """The limit of streams, the text says which."""


class EventHub:
    """The last event's id as the daemon last said it, and the streams open."""

    def __init__(self, socket_path: str, timeout: float) -> None:
        self.socket_path, self.timeout = socket_path, timeout
        self.head = -1                       # not known yet
        self.streams: Counter = Counter()
        self._moved: asyncio.Condition | None = None
        self._watcher: asyncio.Task | None = None

    def enter(self, user: str) -> None:
        """Count a stream of ``user``'s in, or TooManyStreams."""
        if self.streams[user] >= MAX_STREAMS_PER_USER:
            raise TooManyStreams(f"{user} has {MAX_STREAMS_PER_USER} event streams open, the "
                                 "most one user may: close one")
        if sum(self.streams.values()) >= MAX_STREAMS:
            raise TooManyStreams(f"{MAX_STREAMS} event streams are open, the API's limit; try "
                                 "again shortly")
        self.streams[user] += 1
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.get_running_loop().create_task(self._watch())

    def leave(self, user: str) -> None:
        self.streams[user] -= 1
        if self.streams[user] <= 0:
            del self.streams[user]

    async def past(self, seen: int, seconds: float) -> int:
        """The last event's id once it is past ``seen``, or after ``seconds``."""
        moved = self._condition()
        async with moved:
            try:
                await asyncio.wait_for(moved.wait_for(lambda: self.head > seen), seconds)
            except asyncio.TimeoutError:
                pass
            return self.head

    def _condition(self) -> asyncio.Condition:
        if self._moved is None:
            self._moved = asyncio.Condition()
        return self._moved

    async def _watch(self) -> None:
        """Ask the daemon for the last event's id past the one known, while
        any stream is open; a daemon that cannot be reached is asked again
        a second later."""
        while self.streams:
            try:
                raw = await daemon_client.call(
                    self.socket_path, {"op": "event_head", "args": {
                        "after": max(self.head, 0), "wait": 0 if self.head < 0 else HEAD_WAIT}},
                    HEAD_WAIT + self.timeout)
                head = (daemon_client.reply_of(raw).get("data") or {}).get("head")
            except ProtocolError:
                head = None
            if not isinstance(head, int):
                await asyncio.sleep(1.0)
                continue
            moved = self._condition()
            async with moved:
                self.head = head
                moved.notify_all()
