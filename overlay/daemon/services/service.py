"""The operations clients may call, by name: the families' dispatch table,
and the operations plugins offer beside it."""

from __future__ import annotations

import os
from typing import Any, Callable

from overlay.contract import plugins
from overlay.daemon import connections
from overlay.daemon.requeststats import RequestStats
from overlay.daemon.services import (
    approval,
    callers,
    claims,
    control,
    events,
    feeds,
    ggf,
    identities,
    jobs,
    metrics,
    nodes,
    release,
    reports,
    reservations,
    series,
    web,
)
from overlay.daemon.services.base import CLIENT_LINES, Context, Operation, log
from overlay.events.watch import HeadWatch
from overlay.language import limits
from overlay.language.model import Reservation
from overlay.log.ratelog import RateLimitedLog
from overlay.network import oidc, reskey
from overlay.network.tokens import Tokens
from overlay.persistence.feedtokens import FeedTokens
from overlay.reporting.accounting import ReportingFollower
from overlay.usecases.manager import Caller, Manager
from overlay.usecases.series import SeriesCases
from overlay.wire import codec

FAMILIES = (reservations, release, approval, series, ggf, claims, identities, web, reports,
            metrics, feeds, events, nodes, jobs, control)
"""The modules whose OPERATIONS the socket serves."""


def dispatch_table(families: tuple = FAMILIES) -> dict[str, Operation]:
    """Every family's operations by wire name; a name offered twice is a
    mistake of ours, found at the start."""
    table: dict[str, Operation] = {}
    for family in families:
        for name, operation in family.OPERATIONS.items():
            if name in table:
                raise ValueError(f"operation {name!r} is offered twice ({family.__name__})")
            table[name] = operation
    return table


OPERATIONS = dispatch_table()


class Service:
    """The operations clients may call, by name, and who is calling."""

    def __init__(self, manager: Manager, on_change: Callable[[list[Reservation]], None],
                 on_shutdown: Callable[[], None], tokens: Tokens | None = None,
                 reskeys: reskey.ResKeys | None = None,
                 provider: oidc.Provider | None = None,
                 daemons: Callable[[], dict] | None = None,
                 role: Callable[[], dict] | None = None, metrics_token: bytes = b"",
                 feed_tokens: FeedTokens | None = None,
                 watch: HeadWatch | None = None,
                 wake_deliveries: Callable[[], None] = lambda: None,
                 series: SeriesCases | None = None) -> None:
        self.turns = connections.UserTurns(manager.config.http.max_requests_per_user)
        self.plugin_operations: dict[str, Callable[[Caller, dict], Any]] = {}
        for offered in manager.plugin_operations():
            for name, operation in (offered or {}).items():
                if name in OPERATIONS or name in self.plugin_operations:
                    raise plugins.PluginError(f"plugins: operation {name!r} is offered twice")
                self.plugin_operations[name] = operation
        self.requests = RequestStats([*OPERATIONS, *self.plugin_operations])
        self.context = Context(manager, on_change, on_shutdown, tokens, reskeys, provider,
                               RateLimitedLog(log, burst=CLIENT_LINES),
                               ReportingFollower(manager.config.accounting_path), os.getuid(),
                               daemons, role, self.requests, metrics_token, feed_tokens,
                               watch, wake_deliveries, series)

    @property
    def daemon_uid(self) -> int:
        """The daemon's own user, who may always stop it."""
        return self.context.daemon_uid

    def caller_for(self, uid: int, gid: int, message: dict) -> Caller:
        """Who sends ``message`` (overlay.daemon.services.callers)."""
        return callers.caller_for(self.context, uid, gid, message)

    def handle(self, caller: Caller, op: Any, args: Any) -> Any:
        """Run operation ``op``: the core's with its arguments decoded and
        checked (codec.Arguments), a plugin's with the plain mapping, which
        the plugin checks itself."""
        operation = OPERATIONS.get(op) if isinstance(op, str) else None
        if operation is not None:
            return operation(self.context, caller, codec.Arguments(op, args,
                                                                  self.context.manager.now()))
        offered = self.plugin_operations.get(op) if isinstance(op, str) else None
        if offered is None:
            raise codec.BadArguments(f"unknown operation {limits.shown(op)}")
        if not isinstance(args, dict):
            raise codec.BadArguments("args must be an object")
        return offered(caller, args)
