"""What every family of operations shares: the context an operation runs
in, and the shape of an operation."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable

from overlay.daemon.config import Config
from overlay.daemon.requeststats import RequestStats
from overlay.daemon.services.views import SummaryCache
from overlay.events.watch import HeadWatch
from overlay.language.model import Reservation
from overlay.log.ratelog import RateLimitedLog
from overlay.network import oidc, reskey
from overlay.network.tokens import Tokens
from overlay.persistence.feedtokens import FeedTokens
from overlay.persistence.store import StoreUnavailable
from overlay.reporting.accounting import ReportingFollower
from overlay.reporting.endedjobs import EndedJobs
from overlay.usecases.manager import Caller, Manager
from overlay.usecases.series import SeriesCases
from overlay.wire import codec

log = logging.getLogger("plus.daemon")
CLIENT_LINES = 10
"""Log lines a user's requests may cause per kind and minute (ratelog)."""


@dataclass
class Context:
    """The use cases and the daemon's issuers, as the operations reach them."""

    manager: Manager
    on_change: Callable[[list[Reservation]], None]
    """Told of ARs an operation changed (the lifecycle times them anew)."""
    on_shutdown: Callable[[], None]
    tokens: Tokens | None
    reskeys: reskey.ResKeys | None
    provider: oidc.Provider | None
    client_log: RateLimitedLog
    reported: ReportingFollower
    daemon_uid: int
    daemons: Callable[[], dict] | None = None
    """Who serves the store and who leads (plus_scheduler --status)."""
    role: Callable[[], dict] | None = None
    """Whether this daemon leads, and whether its store is shared (cheap:
    no question to the store)."""
    requests: RequestStats | None = None
    """The socket's requests, counted (/metrics)."""
    metrics_token: bytes = b""
    """The secret a scraper of /metrics sends as its bearer token."""
    feed_tokens: FeedTokens | None = None
    """The calendar feeds' tokens, in the daemon's store."""
    watch: HeadWatch | None = None
    """The event table, and its last id waited for (the event stream and
    the webhooks' operations; the daemon gives one)."""
    wake_deliveries: Callable[[], None] = lambda: None
    """Tell the leader's webhook deliveries of a new webhook."""
    series: SeriesCases | None = None
    """Recurring series (plus_reserve --repeat); the daemon gives them."""
    ended_jobs: EndedJobs = field(init=False)
    """Node-hours of the jobs ended in ARs still in their window (/metrics)."""
    summaries: SummaryCache = field(default_factory=SummaryCache)
    """Listings' rows, each kept encoded."""

    def __post_init__(self) -> None:
        self.ended_jobs = EndedJobs(self.reported)

    @property
    def config(self) -> Config:
        """The running configuration (a SIGHUP changes it in place)."""
        return self.manager.config

    def standing(self) -> tuple[dict, int | None, bool]:
        """Whether this daemon leads and shares its store (``role``), how
        many revisions its memory is behind the store (None: the store did
        not answer), and whether the store answered; one small read on a
        shared store, none on SQLite."""
        role = self.role() if self.role is not None else {"leading": True, "shared": False}
        if not role["shared"]:
            return role, 0, True
        try:
            return role, self.manager.behind_store(), True
        except StoreUnavailable:
            return role, None, False


Operation = Callable[[Context, Caller, codec.Arguments], Any]
"""An operation: its context, who asks, and its arguments (decoded and
checked as they are read); its answer is JSON-ready."""
