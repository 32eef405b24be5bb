"""The leader's webhook deliveries: each webhook's events, in order, at
least once, each POST signed and carrying the event's id so the receiver
drops a repeat.

A webhook goes on after its ``cursor``, the last event its receiver took,
kept in the store: a new leader (or this one after a restart) starts where
the last delivery that was answered 2xx left it, so an event may be posted
twice (a crash between the answer and the cursor's write) but never lost
while it is kept. A receiver that fails (down, slow, 5xx, a redirect) is
tried again after BASE seconds, doubling up to CAP, its later events
waiting behind the one it did not take; it holds only its own webhook:
each has a task of its own, every POST ends within DEADLINE, and at most
MAX_POSTS are under way at once, whatever the receivers do. Deliveries run
only while ``fence()`` says this daemon leads.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from typing import Callable, Sequence

from overlay.events import signing
from overlay.events.catalog import shown
from overlay.events.hooks import Network, reachable
from overlay.events.post import DeliveryFailed, post
from overlay.events.visibility import chosen
from overlay.log.ratelog import RateLimitedLog
from overlay.persistence.events import KEEP_SECONDS, Event, EventLog, Webhook
from overlay.persistence.store import StoreUnavailable

log = logging.getLogger("plus.webhooks")
_FAILED = RateLimitedLog(log)

BASE = 1.0
"""Seconds before the first retry of a failed delivery."""
CAP = 300.0
"""The longest wait between two tries."""
DEADLINE = 10.0
"""Seconds a POST may take, all of it."""
MAX_POSTS = 16
"""POSTs under way at once, to all receivers."""
POLL = 1.0
"""Seconds between two looks when nothing wakes the deliverer (events of
other daemons, retries that fell due)."""
SCAN = 200
"""Events read at once for a webhook."""
PRUNE_EVERY = 3600.0


def backoff(failures: int) -> float:
    """The wait after the ``failures``-th failure in a row."""
    return min(CAP, BASE * 2 ** (failures - 1))


def takes(hook: Webhook, event: Event) -> bool:
    """Whether ``hook`` takes ``event``: its owner's ARs (every AR's for a
    manager's webhook made with ``every``), of the types it chose."""
    return (hook.every or event.owner == hook.owner) and chosen(event, hook.types, hook.lead)


class Deliverer:
    """Posts the webhooks' events from a thread of its own (the leader's)."""

    def __init__(self, events: EventLog, fence: Callable[[], bool],
                 networks: Callable[[], Sequence[Network]] = tuple) -> None:
        self.events, self.fence = events, fence
        self.networks = networks
        """The site's webhook_networks, as configured now."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._due: dict[str, float] = {}          # webhook id -> when it is tried again
        self._failures: dict[str, int] = {}
        self._tasks: dict[str, asyncio.Task] = {}
        self._pruned = 0.0
        self._any_hooks = True
        """Whether the last look found a webhook: while none is kept, a
        commit does not wake the loop (a wake cost each reserve a tenth
        of its time, and the loop a read of the webhooks)."""

    def start(self) -> None:
        """Deliver from now on (once: a daemon that leads again keeps its
        thread, which the fence idles meanwhile)."""
        if self._thread is not None:
            self.wake()
            return
        self._stopping.clear()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()),
                                        name="plus-webhooks", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stopping.set()
        self.wake()
        self._thread.join(timeout=DEADLINE + 5)
        self._thread = None

    def events_committed(self) -> None:
        """Events were committed: look soon if a webhook may take them. A
        webhook made at another daemon meanwhile is found by the next
        poll, within POLL, and takes its events from its cursor."""
        if self._any_hooks:
            self.wake()

    def wake(self) -> None:
        """Look soon (safe from any thread)."""
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:       # the loop has ended
                pass

    async def _main(self) -> None:
        self._loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
        self._posts = asyncio.Semaphore(MAX_POSTS)
        while not self._stopping.is_set():
            due = min(self._due.values(), default=float("inf")) - time.monotonic()
            try:
                await asyncio.wait_for(self._wake.wait(), max(0.0, min(POLL, due)))
            except asyncio.TimeoutError:
                pass
            self._wake.clear()
            if self._stopping.is_set() or not self.fence():
                continue
            try:
                await self._look()
            except StoreUnavailable as exc:
                _FAILED.warning("store", "webhooks wait: %s", exc)
        for task in self._tasks.values():
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    async def _look(self) -> None:
        """Start the delivery of every webhook that is idle and due."""
        loop, now = asyncio.get_running_loop(), time.monotonic()
        hooks = await loop.run_in_executor(None, self.events.hooks)
        self._any_hooks = bool(hooks)
        present = {hook.id for hook in hooks}
        for gone in [key for key in self._due if key not in present]:
            self._due.pop(gone, None)
            self._failures.pop(gone, None)
        for hook in hooks:
            task = self._tasks.get(hook.id)
            if (task is None or task.done()) and self._due.get(hook.id, 0.0) <= now:
                self._tasks[hook.id] = asyncio.create_task(self._serve(hook))
        self._tasks = {key: task for key, task in self._tasks.items() if not task.done()}
        if time.time() - self._pruned > PRUNE_EVERY:
            self._pruned = time.time()
            await loop.run_in_executor(None, self.events.prune, int(time.time()) - KEEP_SECONDS)

    async def _serve(self, hook: Webhook) -> None:
        """Post ``hook``'s next events, in order, until one fails or none is left."""
        loop = asyncio.get_running_loop()
        try:
            batch = await loop.run_in_executor(None, self.events.after, hook.cursor, SCAN)
            cursor, posted = hook.cursor, 0
            for event in batch:
                if not takes(hook, event):
                    cursor = event.id
                    continue
                if not self.fence():
                    break
                try:
                    await self._post(hook, event)
                except DeliveryFailed as exc:
                    await self._failed(hook, cursor, posted, str(exc))
                    return
                cursor, posted = event.id, posted + 1
                await loop.run_in_executor(None, self.events.delivered, hook.id, cursor, 1)
                self._failures.pop(hook.id, None)
            if cursor != hook.cursor and posted == 0:
                await loop.run_in_executor(None, self.events.delivered, hook.id, cursor, 0)
            if batch:                # look again: events may have come while this one ran
                self.wake()
        except StoreUnavailable as exc:
            _FAILED.warning("store", "webhook %s waits: %s", hook.id, exc)
            self._due[hook.id] = time.monotonic() + BASE

    async def _post(self, hook: Webhook, event: Event) -> None:
        body = json.dumps(shown(event.id, event.type, event.time, event.data),
                          separators=(",", ":")).encode()
        headers = {signing.SIGNATURE_HEADER: signing.signature(hook.secret, body, int(time.time())),
                   signing.EVENT_ID_HEADER: str(event.id),
                   signing.EVENT_TYPE_HEADER: event.type}
        async with self._posts:
            await post(hook.url, body, headers, DEADLINE,
                       lambda address: reachable(address, self.networks()))

    async def _failed(self, hook: Webhook, cursor: int, posted: int, why: str) -> None:
        """A delivery failed: the webhook waits its backoff, the events it
        skipped before the failed one stay skipped."""
        failures = self._failures.get(hook.id, hook.failures) + 1
        self._failures[hook.id] = failures
        self._due[hook.id] = time.monotonic() + backoff(failures)
        _FAILED.warning(hook.owner, "webhook %s of %s: delivery failed (%s); try %d again in "
                        "%g s", hook.id, hook.owner, why, failures + 1, backoff(failures))
        loop = asyncio.get_running_loop()
        if cursor != hook.cursor and posted == 0:
            await loop.run_in_executor(None, self.events.delivered, hook.id, cursor, 0)
        await loop.run_in_executor(None, self.events.failed, hook.id, failures, why)
