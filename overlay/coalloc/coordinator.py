"""The coordinator: one window at every site, or nothing anywhere.

1. RESQUERY every site at once; intersect the ranges; take the earliest
   common start not tried yet.
2. Prepare: a pending (-T) reservation at each site, with an idempotency
   key, so a retried request never makes a second AR.
3. Decide: commit everywhere, or abort everywhere. A site that refuses the
   start (someone took it meanwhile) makes the coordinator abort what it
   holds and try the next common start, up to ``attempts`` times; a site
   down, slow, refusing the token or answering garbage ends it, aborted.
Each step is logged before it is taken (overlay.coalloc.log); ``recover``
finishes what a killed coordinator left: no decision logged, abort
everywhere (presumed abort); commit logged, finish committing (and if a
site's commit_timeout aborted its part meanwhile, cancel the others);
cancel logged, finish cancelling. A site's own commit_timeout aborts what
an absent coordinator left pending.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from itertools import chain
from typing import Callable

from overlay.coalloc.client import SiteClient, SiteError
from overlay.coalloc.log import CoAllocation, Log
from overlay.coalloc.sites import Site
from overlay.placement.nesting import merged
from overlay.placement.planner import covered_ranges


class CoallocError(Exception):
    """The co-allocation was not made (or not finished): the text says why."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def intersect(per_site: list[list[tuple[int, int]]]) -> list[tuple[int, int]]:
    """The closed ranges of starts every site's ranges allow, sorted: each
    site's ranges merged (a site may list them in any order, overlapping),
    then the times lying in as many ranges as there are sites, in one sweep
    over the sorted ends (not every range against every other)."""
    return covered_ranges(chain.from_iterable(map(merged, per_site)), len(per_site))


class Coordinator:
    def __init__(self, sites: dict[str, Site], log: Log, timeout: float = 10.0,
                 attempts: int = 5, skew: int = 30,
                 on_step: Callable[[int], None] = lambda step: None) -> None:
        self.sites, self.log = sites, log
        self.clients = {name: SiteClient(site, timeout) for name, site in sites.items()}
        self.attempts, self.skew, self.on_step = attempts, skew, on_step
        self.steps = 0

    def _stepped(self) -> None:
        """A step is done (logged, or taken at a site): tell ``on_step``."""
        self.steps += 1
        self.on_step(self.steps)

    def _each(self, names, work: Callable[[str], object]) -> dict[str, object]:
        """``work`` at every named site at once: its answer or its SiteError."""
        names = list(names)

        def run(name: str) -> object:
            try:
                return work(name)
            except SiteError as exc:
                return exc
        with ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:
            return dict(zip(names, pool.map(run, names), strict=True))

    def _client(self, name: str) -> SiteClient:
        client = self.clients.get(name)
        if client is None:
            raise CoallocError(f"site {name} is not in the sites file", 2)
        return client

    # -- reserve ---------------------------------------------------------------------

    def reserve(self, duration: int, earliest: int, latest_start: int,
                resources: dict[str, str]) -> CoAllocation:
        for name in resources:
            self._client(name)
        earliest = max(earliest, int(time.time()) + self.skew)
        coalloc = self.log.create(duration, earliest, latest_start, resources)
        self._stepped()
        tried: set[int] = set()
        for attempt in range(1, self.attempts + 1):
            start = self._common_start(coalloc, tried)
            tried.add(start)
            self.log.step(coalloc, state="preparing", attempt=attempt, start=start)
            for name in coalloc.sites:
                self.log.site(coalloc, name, key=f"{coalloc.id}.{attempt}.{name}", ar_id=None,
                              reskey=None, state="none")
            self._stepped()
            failures = self._prepare(coalloc)
            if not failures:
                self.log.step(coalloc, state="committing")
                self._stepped()
                return self._commit(coalloc)
            self.log.step(coalloc, state="aborting")
            self._stepped()
            self._abort_attempt(coalloc)
            fatal = [f for f in failures if f.kind != "refused"]
            if fatal:
                self._finish(coalloc, "aborted", "; ".join(map(str, fatal)))
                raise CoallocError(f"co-allocation {coalloc.id} aborted: {coalloc.message}", 3)
        self._finish(coalloc, "aborted", f"the sites refused {self.attempts} common starts in "
                                         "turn (others took them meanwhile)")
        raise CoallocError(f"co-allocation {coalloc.id} aborted: {coalloc.message}")

    def _common_start(self, coalloc: CoAllocation, tried: set[int]) -> int:
        answers = self._each(coalloc.sites, lambda name: self.clients[name].resquery(
            coalloc.duration, coalloc.earliest, coalloc.latest, coalloc.sites[name].resources))
        failed = [a for a in answers.values() if isinstance(a, SiteError)]
        if failed:
            self._finish(coalloc, "aborted", "; ".join(map(str, failed)))
            raise CoallocError(f"co-allocation {coalloc.id} aborted: {coalloc.message}",
                               1 if all(f.kind == "refused" for f in failed) else 3)
        floor = int(time.time()) + self.skew + max(self.clients[name].ahead
                                                   for name in coalloc.sites)
        for low, high in intersect(list(answers.values())):
            low = max(low, floor)              # ahead of every site's clock by the skew
            start = next((t for t in range(low, min(high, low + 60) + 1) if t not in tried), None)
            if start is not None:
                return start
        self._finish(coalloc, "aborted", "no common start: the sites' free ranges do not meet "
                                         "between the earliest and the latest start")
        raise CoallocError(f"co-allocation {coalloc.id} aborted: {coalloc.message}")

    def _prepare(self, coalloc: CoAllocation) -> list[SiteError]:
        def prepare(name: str) -> dict:
            record = coalloc.sites[name]
            return self.clients[name].prepare(coalloc.duration, coalloc.start, record.resources,
                                              record.key)
        failures = []
        for name, answer in self._each(coalloc.sites, prepare).items():
            if isinstance(answer, SiteError):
                failures.append(answer)
                continue
            self.log.site(coalloc, name, ar_id=answer["reservation"]["id"],
                          reskey=answer["ResKey"], state="prepared")
            self._stepped()
        return failures

    # -- decide ----------------------------------------------------------------------

    def _commit(self, coalloc: CoAllocation) -> CoAllocation:
        """Commit at every site (again, after a crash: idempotent); if a
        site no longer holds its part, cancel the others: none or all."""
        def commit(name: str) -> str:
            record = coalloc.sites[name]
            if record.state == "committed":
                return "committed"
            client = self.clients[name]
            ar = client.find(record.key)
            if ar is None or ar["state"] not in ("p", "w", "r"):
                return "lost"
            if ar["pending"] is not None:
                client.act(ar["id"], "commit")
            self.log.site(coalloc, name, ar_id=ar["id"], state="committed")
            self._stepped()
            return "committed"
        answers = self._each(coalloc.sites, commit)
        errors = [a for a in answers.values() if isinstance(a, SiteError)]
        if errors:
            raise CoallocError(f"co-allocation {coalloc.id} is decided but not committed "
                               f"everywhere ({'; '.join(map(str, errors))}): run "
                               "plus_coreserve --recover when the sites answer", 3)
        lost = sorted(name for name, answer in answers.items() if answer == "lost")
        if lost:
            errors = self._cancel_all(coalloc, "aborted")
            if errors:
                raise CoallocError(f"co-allocation {coalloc.id}: site(s) {', '.join(lost)} let "
                                   "their part lapse, and the others' parts are not all "
                                   f"cancelled yet ({'; '.join(map(str, errors))}): run "
                                   "plus_coreserve --recover when the sites answer", 3)
            self._finish(coalloc, "aborted", f"site(s) {', '.join(lost)} let their part lapse "
                                             "(commit_timeout) before the commit reached them; "
                                             "the others were cancelled")
            raise CoallocError(f"co-allocation {coalloc.id} aborted: {coalloc.message}")
        self._finish(coalloc, "committed", "")
        return coalloc

    def _abort_attempt(self, coalloc: CoAllocation) -> None:
        """Abort what the current attempt may have made, found by its key
        (an answer lost in a timeout may still have made an AR). A site
        that cannot be reached keeps its part until its commit_timeout."""
        def abort(name: str) -> None:
            record = coalloc.sites[name]
            if record.key is None or record.state == "aborted":
                return
            client = self.clients[name]
            ar = client.find(record.key)
            if ar is not None and ar["pending"] is not None:
                client.act(ar["id"], "abort")
            self.log.site(coalloc, name, state="aborted")
            self._stepped()
        self._each(coalloc.sites, abort)

    def _cancel_all(self, coalloc: CoAllocation, state: str) -> list[SiteError]:
        """Cancel each site's part (abort it, if still pending) and log the
        site ``state``; a site done before is skipped. The errors of the
        sites not reached: their parts stay booked."""
        def cancel(name: str) -> None:
            record = coalloc.sites[name]
            if record.state == state:
                return
            client = self.clients[name]
            ar = client.find(record.key) if record.key else None
            if ar is not None and ar["state"] in ("w", "r"):
                client.act(ar["id"], "cancel")
            elif ar is not None and ar["pending"] is not None:
                client.act(ar["id"], "abort")
            self.log.site(coalloc, name, state=state)
        return [a for a in self._each(coalloc.sites, cancel).values() if isinstance(a, SiteError)]

    def _finish(self, coalloc: CoAllocation, state: str, message: str) -> None:
        self.log.step(coalloc, state=state, message=message)
        self._stepped()

    # -- after a crash, and on demand ---------------------------------------------

    def recover(self, coalloc_id: str) -> CoAllocation:
        """Finish what a coordinator left: commit if the decision was
        logged, else abort everywhere."""
        coalloc = self._load(coalloc_id)
        if coalloc.state == "committing":
            return self._commit(coalloc)
        if coalloc.state == "cancelling":
            return self._cancel(coalloc)
        if coalloc.state == "move-committing":
            return self._commit_move(coalloc)
        if coalloc.state == "moving":
            self._undo_move(coalloc)
            return coalloc
        if coalloc.state in ("preparing", "aborting"):
            self._abort_attempt(coalloc)
        if coalloc.state not in ("committed", "aborted", "cancelled"):
            self._finish(coalloc, "aborted", "presumed abort: the coordinator stopped before "
                                             "deciding")
        return coalloc

    def cancel(self, coalloc_id: str) -> CoAllocation:
        """Cancel a committed co-allocation at every site. The decision is
        logged first: a site not reached keeps its part until a retry, or
        ``recover``, reaches it."""
        coalloc = self._load(coalloc_id)
        if coalloc.state not in ("committed", "cancelling"):
            raise CoallocError(f"co-allocation {coalloc_id} is {coalloc.state}: only a committed "
                               "one can be cancelled")
        if coalloc.state == "committed":
            self.log.step(coalloc, state="cancelling", message="")
            self._stepped()
        return self._cancel(coalloc)

    def _cancel(self, coalloc: CoAllocation) -> CoAllocation:
        """Cancel at every site not done yet; until all are, the log keeps
        the co-allocation cancelling, for a retry or ``recover``."""
        errors = self._cancel_all(coalloc, "cancelled")
        if errors:
            raise CoallocError(f"co-allocation {coalloc.id} is not cancelled at "
                               f"{', '.join(e.site for e in errors)}, where its part stays booked "
                               f"({'; '.join(map(str, errors))}): run plus_cocancel {coalloc.id} "
                               "again, or plus_coreserve --recover, when the site answers", 3)
        self._finish(coalloc, "cancelled", "")
        return coalloc

    def move(self, coalloc_id: str, start: int) -> CoAllocation:
        """Move a committed co-allocation's window to ``start`` at every
        site, or leave it where it is: a pending move at each site, then
        commit all or abort all, logged as a reserve is."""
        coalloc = self._load(coalloc_id)
        if coalloc.state != "committed":
            raise CoallocError(f"co-allocation {coalloc_id} is {coalloc.state}: only a committed "
                               "one can be moved")
        start = max(start, int(time.time()) + self.skew)
        self.log.step(coalloc, state="moving", target=start, message="")
        self._stepped()
        answers = self._each(coalloc.sites, lambda name: self.clients[name].move(
            coalloc.sites[name].ar_id, start))
        failures = [a for a in answers.values() if isinstance(a, SiteError)]
        if failures:
            self._undo_move(coalloc)
            raise CoallocError(f"co-allocation {coalloc_id} stays where it was: "
                               f"{'; '.join(map(str, failures))}", 1 if all(
                                   f.kind == "refused" for f in failures) else 3)
        self.log.step(coalloc, state="move-committing")
        self._stepped()
        return self._commit_move(coalloc)

    def _settle_moves(self, coalloc: CoAllocation, action: str) -> dict[str, object]:
        """Commit or abort the pending moves at every site (idempotent)."""
        def settle(name: str) -> str:
            client = self.clients[name]
            ar = client.show(coalloc.sites[name].ar_id)
            if ar["pending"] is not None and ar["pending"]["operation"] == "modify":
                client.act(ar["id"], action)
            self._stepped()
            return "done"
        return self._each(coalloc.sites, settle)

    def _undo_move(self, coalloc: CoAllocation) -> None:
        self._settle_moves(coalloc, "abort")
        self._finish(coalloc, "committed", "a move was refused; the window stayed")

    def _commit_move(self, coalloc: CoAllocation) -> CoAllocation:
        errors = [a for a in self._settle_moves(coalloc, "commit").values()
                  if isinstance(a, SiteError)]
        if errors:
            raise CoallocError(f"the move of co-allocation {coalloc.id} is decided but not "
                               f"committed everywhere ({'; '.join(map(str, errors))}): run "
                               "plus_coreserve --recover when the sites answer", 3)
        self.log.step(coalloc, start=coalloc.target)
        self._finish(coalloc, "committed", "")
        return coalloc

    def status(self, coalloc_id: str) -> tuple[CoAllocation, dict[str, object]]:
        """The logged co-allocation, and each site's AR as the site shows it now."""
        coalloc = self._load(coalloc_id)
        held = {name: r.ar_id for name, r in coalloc.sites.items() if r.ar_id is not None}
        return coalloc, self._each(held, lambda name: self._client(name).show(held[name]))

    def _load(self, coalloc_id: str) -> CoAllocation:
        coalloc = self.log.load(coalloc_id)
        if coalloc is None:
            raise CoallocError(f"co-allocation {coalloc_id} is not in the log")
        for name in coalloc.sites:
            self._client(name)
        return coalloc
