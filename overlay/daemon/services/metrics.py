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
from collections import defaultdict

from overlay.daemon.services.base import Context, Operation
from overlay.language.model import PermissionDenied
from overlay.network.tokens import TokenRefused
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
              "in_window": _in_window(context, in_window, inventory.jobs, now),
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


def _in_window(context: Context, ars: list, jobs, now: int) -> list[list]:
    """[id, owner, nodes, end, reserved node-seconds, used node-seconds,
    nodes running its jobs now] of each AR in its window: reserved is its
    nodes times the time since its start; used, its ended jobs' (the
    reporting file) and its running jobs' so far (the inventory)."""
    open_ids = {ar.id for ar in ars}
    context.ended_jobs.update(open_ids)
    running = defaultdict(list)
    for job in jobs:
        if job.reservation in open_ids:
            running[job.reservation].append(job)
    rows = []
    for ar in sorted(ars, key=lambda ar: ar.id):
        nodes = set(ar.node_names)
        used = context.ended_jobs.node_seconds.get(ar.id, 0)
        ended = context.ended_jobs.starts.get(ar.id, ())
        busy: set[str] = set()
        for job in running.get(ar.id, ()):
            busy.update(job.nodes)
            if job.start not in ended:
                used += len(set(job.nodes)) * max(0, now - max(job.start or ar.start, ar.start))
        rows.append([ar.id, ar.owner, len(nodes), ar.end, len(nodes) * max(0, min(now, ar.end)
                     - ar.start), used, len(busy & nodes)])
    return rows


OPERATIONS: dict[str, Operation] = {"metrics": metrics}
