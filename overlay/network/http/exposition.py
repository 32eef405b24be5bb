"""The daemon's figures (overlay.daemon.services.metrics) in Prometheus'
text format, through the prometheus-client library: the daemon computes,
the companion only names and renders. Every name here is what the sample
Grafana dashboard (conf/grafana-dashboard.json) and its test query."""

from __future__ import annotations

from typing import Iterator

from prometheus_client import generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.utils import floatToGoString

from overlay.language.model import State

STATE_NAMES = {state.value: state.name.lower() for state in State}
"""plus_ars' state label: waiting, running, exited, deleted, warning, error, pending,
awaiting (a manager's approval)."""
_HOUR = 3600.0


class Figures:
    """A collector over one answer of the daemon's ``metrics`` operation."""

    def __init__(self, figures: dict) -> None:
        self.figures = figures

    def collect(self) -> Iterator[Metric]:
        figures = self.figures
        yield GaugeMetricFamily("plus_leader", "1 when this daemon leads (runs the clock and "
                                "the backend), 0 when it stands by", value=int(figures["leading"]))
        yield GaugeMetricFamily("plus_store_up", "1 when this daemon reached its store for this "
                                "scrape", value=int(figures["store_up"]))
        if figures["feed_lag"] is not None:
            yield GaugeMetricFamily("plus_feed_lag_revisions", "store revisions this daemon "
                                    "has not taken in yet (the change feed's lag)",
                                    value=figures["feed_lag"])
        if figures["inventory_age"] is not None:
            yield GaugeMetricFamily("plus_inventory_age_seconds", "age of the leader's last look "
                                    "at the nodes and running jobs", value=figures["inventory_age"])
        ars = GaugeMetricFamily("plus_ars", "ARs held, by state and owner",
                                labels=["state", "owner"])
        for state, owner, count in figures["ars"]:
            ars.add_metric([STATE_NAMES.get(state, state), owner], count)
        yield ars
        yield GaugeMetricFamily("plus_nodes", "nodes the daemon knows", value=figures["nodes"])
        yield GaugeMetricFamily("plus_nodes_reserved", "nodes held now by ARs in their window",
                                value=figures["nodes_reserved"])
        yield from _in_window(figures["in_window"])
        yield from _requests(figures)


def _in_window(rows: list) -> Iterator[Metric]:
    """One series per AR in its window, each labelled with its id and owner."""
    families = (
        (GaugeMetricFamily("plus_ar_nodes", "nodes an AR in its window holds",
                           labels=["ar", "owner"]), lambda row: row[2]),
        (GaugeMetricFamily("plus_ar_end_timestamp_seconds", "when an AR in its window ends",
                           labels=["ar", "owner"]), lambda row: row[3]),
        (GaugeMetricFamily("plus_ar_reserved_node_hours", "node-hours an AR in its window has "
                           "held since its start", labels=["ar", "owner"]),
         lambda row: row[4] / _HOUR),
        (GaugeMetricFamily("plus_ar_used_node_hours", "node-hours of an AR in its window its "
                           "jobs have run so far", labels=["ar", "owner"]),
         lambda row: row[5] / _HOUR),
        (GaugeMetricFamily("plus_ar_busy_nodes", "nodes of an AR in its window running its "
                           "jobs now (0: an idle AR, which could be released)",
                           labels=["ar", "owner"]), lambda row: row[6]))
    for family, value in families:
        for row in rows:
            family.add_metric([str(row[0]), row[1]], value(row))
        yield family


def _requests(figures: dict) -> Iterator[Metric]:
    if "requests" not in figures:
        return
    counted = CounterMetricFamily("plus_requests", "requests the daemon answered, by operation "
                                  "and outcome (ok, or the kind of refusal)",
                                  labels=["operation", "outcome"])
    for operation, outcome, count in figures["requests"]:
        counted.add_metric([operation, outcome], count)
    yield counted
    latency = figures["latency"]
    bounds = [floatToGoString(bound) for bound in (*latency["buckets"], float("inf"))]
    timed = HistogramMetricFamily("plus_request_duration_seconds", "time the daemon took to "
                                  "answer a request, by operation", labels=["operation"])
    for operation, cumulative, seconds in latency["series"]:
        timed.add_metric([operation], list(zip(bounds, cumulative, strict=True)), seconds)
    yield timed


def rendered(figures: dict) -> bytes:
    """The answer as Prometheus scrapes it."""
    return generate_latest(Figures(figures))
