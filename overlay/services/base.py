"""What every family of operations shares: the context an operation runs
in, and the shape of an operation."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable

from overlay import oidc, reskey, wire
from overlay.accounting import ReportingFollower
from overlay.config import Config
from overlay.manager import Caller, Manager
from overlay.model import Reservation
from overlay.ratelog import RateLimitedLog
from overlay.tokens import Tokens

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

    @property
    def config(self) -> Config:
        """The running configuration (a SIGHUP changes it in place)."""
        return self.manager.config


Operation = Callable[[Context, Caller, wire.Arguments], Any]
"""An operation: its context, who asks, and its arguments (decoded and
checked as they are read); its answer is JSON-ready."""
