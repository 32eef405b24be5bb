"""The native scheduler's configuration: Grid Engine's sched_conf(5) settings
the scheduler honours, and PluS's job and node order (seed 004, 3.2).

It is the ``scheduler:`` section of the cluster file, so an edit takes
effect at the next pass, as ``qconf -msconf`` does. Defaults are Grid
Engine 6.0's (seed 001): no reservations, INFINITY as default duration,
weight_priority 1, weight_urgency 0.1, weight_ticket 0.01.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from overlay.api.plugin import ORDER_SETTINGS, JobOrder, OrderError, read_orders
from overlay_native.resources.complexes import ComplexError, parse_value

QUEUE_SORT_METHODS = ("load", "seqno")
GE_JOB_ORDER = ("JobPriority",)
"""Grid Engine's own order: priority, then submit time and job id (FIFO)."""

_NUMBERS = ("weight_priority", "weight_urgency", "weight_ticket", "weight_waiting_time")
KEYS = ("schedule_interval", "max_reservation", "default_duration", "params", "queue_sort_method",
        "sched_conf", *_NUMBERS, *ORDER_SETTINGS)


class SchedConfError(ValueError):
    """A scheduler setting that cannot be used; the text names it."""


@dataclass(frozen=True)
class SchedulerConfig:
    schedule_interval: int = 15
    max_reservation: int = 0
    default_duration: float = math.inf     # seconds; inf: INFINITY
    monitor: bool = False                  # params MONITOR: write the schedule file
    duration_offset: int | None = None     # params DURATION_OFFSET; None: plus.yaml's
    weight_priority: float = 1.0
    weight_urgency: float = 0.1
    weight_ticket: float = 0.01
    weight_waiting_time: float = 0.0
    queue_sort_method: str = "load"
    job_order: JobOrder = field(default_factory=lambda: JobOrder(GE_JOB_ORDER))
    node_order: tuple[str, ...] = ()       # NodeSortKey; () sorts by queue_sort_method


def _time(key: str, value: Any, infinity: bool = False) -> float:
    try:
        seconds = parse_value("TIME", value if isinstance(value, str) else str(value))
    except ComplexError:
        seconds = None
    if seconds is None or (math.isinf(seconds) and not infinity):
        forms = "seconds or h:m:s" + (", or INFINITY" if infinity else "")
        raise SchedConfError(f"scheduler.{key}: expected a time ({forms}), got {value!r}")
    return seconds


def _params(value: Any) -> dict[str, str]:
    """``params`` as Grid Engine writes it (MONITOR=1,DURATION_OFFSET=60 or
    none), or as a mapping."""
    if isinstance(value, Mapping):
        items = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, str):
        items = []
        for part in filter(None, (p.strip() for p in value.split(","))):
            if part.lower() == "none":
                continue
            name, sep, text = part.partition("=")
            items.append((name.strip(), text.strip() if sep else "1"))
    else:
        raise SchedConfError(f"scheduler.params: expected NAME=VALUE,... or a mapping, got {value!r}")
    known = {"MONITOR", "DURATION_OFFSET"}
    for name, _ in items:
        if name not in known:
            raise SchedConfError(f"scheduler.params: unknown parameter {name!r}; "
                                 f"accepted: {', '.join(sorted(known))}")
    return {name: text for name, text in items}


def _flag(text: Any) -> bool:
    if isinstance(text, bool):
        return text
    answer = {"1": True, "true": True, "0": False, "false": False}.get(str(text).strip().lower())
    if answer is None:
        raise SchedConfError(f"scheduler.params: MONITOR: expected 1, 0, true or false, got {text!r}")
    return answer


def parse_scheduler(raw: Any, read_file, queue_priority: Mapping[str, int] | None = None,
                    queue_order: tuple[str, ...] = ()) -> SchedulerConfig:
    """The ``scheduler:`` section; ``read_file(name) -> (text, path)`` reads
    a sched_conf file named in it. Queue priorities and registration order
    serve PluS's QueuePriority and ByQueue keys."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise SchedConfError(f"scheduler: expected a mapping of settings, got {raw!r}")
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        raise SchedConfError(f"scheduler: unknown setting {unknown[0]!r}; accepted: {', '.join(KEYS)}")
    settings: dict[str, Any] = {}
    if "schedule_interval" in raw:
        interval = _time("schedule_interval", raw["schedule_interval"])
        if interval < 1:
            raise SchedConfError("scheduler.schedule_interval: must be at least 1 second")
        settings["schedule_interval"] = int(interval)
    if "max_reservation" in raw:
        value = raw["max_reservation"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SchedConfError(f"scheduler.max_reservation: expected a whole number of 0 or "
                                 f"more, got {value!r}")
        settings["max_reservation"] = value
    if "default_duration" in raw:
        settings["default_duration"] = _time("default_duration", raw["default_duration"], True)
    for key in _NUMBERS:
        if key in raw:
            value = raw[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise SchedConfError(f"scheduler.{key}: expected a number of 0 or more, got {value!r}")
            settings[key] = float(value)
    if "queue_sort_method" in raw:
        method = str(raw["queue_sort_method"]).lower()
        if method not in QUEUE_SORT_METHODS:
            raise SchedConfError(f"scheduler.queue_sort_method: expected load or seqno, got "
                                 f"{raw['queue_sort_method']!r}")
        settings["queue_sort_method"] = method
    params = _params(raw.get("params", "none"))
    if "MONITOR" in params:
        settings["monitor"] = _flag(params["MONITOR"])
    if "DURATION_OFFSET" in params:
        offset = _time("params DURATION_OFFSET", params["DURATION_OFFSET"])
        settings["duration_offset"] = int(offset)
    try:
        orders = read_orders(raw, "scheduler", read_file)
    except OrderError as error:
        raise SchedConfError(str(error)) from None
    try:
        settings["node_order"] = orders.get("NodeSortKey", ())
        settings["job_order"] = JobOrder(
            keys=orders.get("JobSortKey", GE_JOB_ORDER), owners=orders.get("OwnersOrder", ()),
            groups=orders.get("GroupsOrder", ()), hosts=orders.get("HostsOrder", ()),
            queue_priority=dict(queue_priority or {}), queue_order=queue_order)
    except OrderError as error:
        raise SchedConfError(f"scheduler: {error}") from None
    return SchedulerConfig(**settings)
