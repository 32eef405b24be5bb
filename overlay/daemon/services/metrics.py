"""What /metrics shows of this daemon: its ARs by state and owner, the
nodes reserved now, each AR in its window with its node-hours reserved and
used so far (an idle AR shows while it can still be released), the
socket's requests and their latency, the change feed's lag, and whether it
leads. Each daemon answers for itself; the HTTP API renders the answer in
Prometheus' text format (overlay.network.http.exposition).

A scrape costs what changed, not what is stored: the counts are kept as
memory changes (overlay.usecases.tally), the ended jobs' node-hours as the
reporting file grows (overlay.reporting.endedjobs); only the ARs in their
window and the running jobs are walked."""

from __future__ import annotations

import hmac

from overlay.daemon.services.base import Context, Operation
from overlay.language.model import PermissionDenied
from overlay.network.tokens import TokenRefused
from overlay.reporting.endedjobs import so_far
from overlay.usecases.manager import Caller
from overlay.wire import codec


def metrics(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """This daemon's figures. Through HTTP (``http``), as ``http.metrics``
    allows: with the scrapers' secret as ``credential`` (token), to anyone
    (open), or not at all (off). On the socket, to anyone on this host, who
    sees every AR with plus_status anyway."""
    through_http, credential = args.flag("http"), args.text("credential")
    args.done()
    if through_http:
        _check_scraper(context, caller, credential)
    manager, now = context.manager, args.now
    role, lag, store_up = context.standing()
    in_window = manager.tally.in_window()
    inventory = manager.inventory
    answer = {"leading": role["leading"], "store_up": store_up, "feed_lag": lag,
              "ars": [[*key, count] for key, count in
                      sorted(manager.tally.by_state_and_owner().items())],
              "nodes": len(manager.capacity()),
              "nodes_reserved": len({node for ar in in_window for node in ar.node_names}),
              "in_window": [list(row) for row in
                            so_far(context.ended_jobs, in_window, inventory.jobs, now)],
              "inventory_age": None if inventory.observed_at is None
              else max(0, now - inventory.observed_at)}
    if context.requests is not None:
        answer.update(context.requests.snapshot())
    return answer


def _check_scraper(context: Context, caller: Caller, credential: str | None) -> None:
    access = context.config.http.metrics
    if access == "off":
        raise PermissionDenied("/metrics is not served over HTTP here (http.metrics: off); "
                               "a site turns it on with http.metrics: token or open")
    if access == "token" and not (credential and context.metrics_token and hmac.compare_digest(
            credential.encode(), context.metrics_token)):
        context.client_log.warning((caller.user, "metrics"), "a /metrics scrape was refused: "
                                   "%s", "no credential" if not credential
                                   else "not the metrics secret")
        raise TokenRefused("send the metrics secret (the file http.metrics_token names, "
                           "metrics.token in state_dir by default) as 'Authorization: Bearer "
                           "<secret>'")


OPERATIONS: dict[str, Operation] = {"metrics": metrics}
