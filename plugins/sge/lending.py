"""Running ARs' idle slots lent to jobs that may be preempted, in Grid
Engine's own terms (the ``lend_queue`` setting, e.g. ``plus_lend``).

- One cluster queue, the lending queue, whose instances exist only on the
  hosts of open ARs, with the AR's idle slots there (its slots minus those
  its own jobs use), the FORCED complex's value ``<complex>=<lend_queue>``
  (so only a job that asks, ``-l plus_rsv=plus_lend``, ever runs in it)
  and ``rerun FALSE`` (a job is rerun only if it said ``-r y``).
- Each AR queue subordinates it slot-wise on each host
  (``slots=N(plus_lend:0:sr)``, N the AR's slots there): when an AR job
  starts on a host whose slots lent jobs hold, Grid Engine suspends the
  latest started lent job there at once, in the same dispatch.
- A calendar per lending host (``pluslend_<host>``) switches its instance
  off from the AR's end on, so Grid Engine's scheduler (with resource
  reservation, ``max_reservation`` above 0) starts there only jobs whose
  ``h_rt`` plus its DURATION_OFFSET ends before the AR does, never a job
  without ``h_rt``.

The backend's watch (overlay_sge.lendwatch) then ends each suspended lent
job as it asked: ``qmod -rj`` (requeued) if it is rerunnable, ``qdel``
(killed) if not. This module says what each of those objects is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

from overlay_sge import calendars, objects
from overlay_sge.status import GridJob, Observation

ACTION = "sr"
"""Slot-wise preemption's choice: the lent job with the shortest run time
first (the least work lost, as the native scheduler's latest started)."""

CALENDAR_PREFIX = "pluslend_"
"""Lending calendars' names begin so; the hosts' own (``plus_<host>``) never do."""

OFF_FOR = 2 * 86400
"""How long a lending calendar keeps its instance off after the AR's end:
any job that would run past the end overlaps it, however long its h_rt
(and the instance goes with the AR anyway)."""

REQUEUE, KILL = "requeue", "kill"


@dataclass(frozen=True)
class Lender:
    """An open AR lending its hosts: its slots on each, and its end."""

    ar_id: int
    slots: Mapping[str, int]
    end: int


@dataclass(frozen=True)
class LendingHost:
    """What one host lends: the slots of the open ARs holding it, the
    earliest of their ends, and the AR a preemption there is told as."""

    slots: int
    end: int
    ar_id: int


def calendar_name(host: str) -> str:
    return CALENDAR_PREFIX + re.sub(r"[^A-Za-z0-9_]", "_", objects.check_host(host))


def hosts_of(lenders: Iterable[Lender]) -> dict[str, LendingHost]:
    """Each lending host: the slots of every open AR there (nested ARs add
    up), the first end, the lowest AR id."""
    hosts: dict[str, LendingHost] = {}
    for lender in sorted(lenders, key=lambda lender: lender.ar_id):
        for host, slots in lender.slots.items():
            known = hosts.get(host)
            hosts[host] = LendingHost(slots, lender.end, lender.ar_id) if known is None else \
                LendingHost(known.slots + slots, min(known.end, lender.end), known.ar_id)
    return hosts


def idle_slots(hosts: Mapping[str, LendingHost], observation: Observation,
               is_ar_queue) -> dict[str, int]:
    """The slots each lending host's ARs leave idle: theirs minus those
    their own jobs use now (qstat's slots_used of the AR queue instances)."""
    used: dict[str, int] = {}
    for instance in observation.instances:
        if instance.host in hosts and is_ar_queue(instance.queue):
            used[instance.host] = used.get(instance.host, 0) + instance.slots_used
    return {host: max(0, lending.slots - used.get(host, 0)) for host, lending in hosts.items()}


def queue(name: str, template: dict[str, str], complex_name: str,
          slots: Mapping[str, int]) -> dict[str, str]:
    """The lending queue's configuration: the template's, on the lending
    hosts with their idle slots and calendars (none: hostlist NONE)."""
    attributes = objects.copied(template)
    hosts = sorted(slots)
    attributes.update({
        "qname": name, "hostlist": " ".join(objects.check_host(h) for h in hosts) or "NONE",
        "slots": objects.per_host("0", {h: str(n) for h, n in slots.items()}),
        "calendar": objects.per_host("NONE", {h: calendar_name(h) for h in hosts}),
        "user_lists": "NONE", "xuser_lists": "NONE", "complex_values": f"{complex_name}={name}",
        "rerun": "FALSE", "load_thresholds": "NONE", "suspend_thresholds": "NONE",
        "subordinate_list": "NONE", "owner_list": "NONE", "initial_state": "default"})
    return attributes


def subordinates(name: str, slots: Mapping[str, int]) -> str:
    """An AR queue's ``subordinate_list``: the lending queue, slot-wise,
    with the AR's slots on each host as the threshold."""
    def entry(threshold: int) -> str:
        return f"slots={threshold}({name}:0:{ACTION})"
    if not slots:
        return "NONE"
    first = sorted(slots)[0]
    return objects.per_host(entry(slots[first]), {h: entry(n) for h, n in slots.items()})


def calendar(host: str, end: int, now: int) -> dict[str, str]:
    """A lending host's calendar: off from its ARs' end on."""
    return {"calendar_name": calendar_name(host),
            "year": calendars.year_field([(end, end + OFF_FOR)], now), "week": "NONE"}


def preempted(observation: Observation, name: str) -> list[GridJob]:
    """Lent jobs an AR job's start suspended (state S: by subordination; a
    job its owner suspended, s, is theirs)."""
    return [job for job in observation.running if job.queue == name and "S" in job.state]


def mode(restart: str) -> str:
    """How a preempted job asked to end, from qstat -j's JB_restart: 1
    (``-r y``) requeued, anything else (``-r n``, or the lending queue's
    rerun FALSE) killed."""
    return REQUEUE if restart == "1" else KILL
