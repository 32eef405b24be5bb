"""The Slurm reservation of one AR: its name and the fields scontrol is
given for it, and whether one Slurm has is still what the AR wants.

AR 123 is reservation ``R123`` on exactly its nodes, for its window, for
its users (each @group's members listed by name: a reservation's Groups=
and Users= cannot be given together), with IGNORE_JOBS so that it can be
made over jobs already running there (the conflict policy deals with those
at the start; Slurm's own scheduler starts no job that would overrun into
the window once it exists). A slot AR reserves its slots on each node as
cores (``CoreCnt=1,2`` beside ``Nodes=n1,n2``: one count per node; a
single total must divide evenly). Slurm 22.05 cannot change a core-based
reservation ("Core-based reservation can not be updated"): one is made
anew. Every name is checked before it reaches scontrol.

With ``lend_partition`` set, a whole-node AR also lends its idle nodes
through a second reservation ``L123`` on the same nodes and window, open to
every user (``Users=-root``: 22.05 has no "all") and, by the site's
job_submit/lua rule (scripts/slurm-job-submit.lua), only to jobs of the
lending partition, whose lower PriorityTier lets the AR's own jobs preempt
them (PreemptType=preempt/partition_prio). Both carry OVERLAP: without it
on ``R123`` its jobs wait "Reserved for maintenance" while lent jobs hold
the nodes (seen on 22.05). A slot AR lends nothing: Slurm gives an
overlapping core reservation other cores than the AR's (seen), where lent
jobs would not be in the AR's way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from overlay.api.plugin import Reservation, with_members
from overlay_slurm.slurm import utc
from overlay_slurm.status import SlurmReservation

_NAME = re.compile(r"^R([1-9][0-9]{0,8})$")
_WORD = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
FLAGS = "IGNORE_JOBS"
"""The flags a reservation is made with."""
MAINT_FLAGS = "IGNORE_JOBS,MAINT"
"""A maintenance AR's: Slurm's MAINT lets it be made over other
reservations (plus_reserve --maint --force) and accounts it as maintenance."""
LENDING_FLAGS = "IGNORE_JOBS,OVERLAP"
"""An AR's that lends, and its lending reservation's: each may overlap the other."""
EVERY_USER = "-root"
"""The lending reservation's Users=: everyone but root."""


def name(ar_id: int) -> str:
    return f"R{ar_id}"


def lending_name(ar_id: int) -> str:
    return f"L{ar_id}"


def ar_id_of(reservation: str) -> int | None:
    match = _NAME.match(reservation)
    return int(match.group(1)) if match else None


def _checked(word: str, what: str) -> str:
    if not _WORD.match(word):
        raise ValueError(f"refusing {what} {word!r}: not a name Slurm takes")
    return word


def users(ar: Reservation) -> tuple[str, ...]:
    """The AR's users, each @group's members by name, sorted."""
    return tuple(sorted({_checked(entry, "user") for entry in with_members(ar.acl)
                         if not entry.startswith("@")}))


@dataclass(frozen=True)
class Wanted:
    """What the AR's reservation must be."""

    name: str
    start: int
    end: int
    nodes: tuple[str, ...]
    users: tuple[str, ...]
    cores: tuple[int, ...]   # slots per node, in the order of ``nodes``; () whole nodes
    partition: str
    maint: bool = False
    lend: str = ""           # the lending partition, when the AR lends its idle nodes
    lent: bool = False       # the AR's lending reservation, not the AR's own

    @property
    def flags(self) -> str:
        """The flags it is made with."""
        return MAINT_FLAGS if self.maint else LENDING_FLAGS if self.lend or self.lent else FLAGS

    def lending(self) -> "Wanted":
        """The reservation that lends this AR's idle nodes."""
        return replace(self, name=lending_name(int(self.name[1:])), users=(EVERY_USER,),
                       partition=self.lend, lend="", lent=True)

    def fields(self, now: int, started: bool) -> dict[str, str]:
        """scontrol's words: StartTime only before the window (an active
        reservation's start cannot move), "now" if it is already due."""
        chosen = {"ReservationName": self.name}
        if not started:
            chosen["StartTime"] = utc(self.start) if self.start > now else "now"
        chosen.update({"EndTime": utc(self.end), "Nodes": ",".join(self.nodes),
                       "Users": ",".join(self.users) or "root"})
        if self.cores:
            chosen["CoreCnt"] = ",".join(str(count) for count in self.cores)
        if self.partition:
            chosen["PartitionName"] = self.partition
        return chosen

    def differences(self, current: SlurmReservation, started: bool, now: int) -> list[str]:
        """What Slurm's reservation lacks (drift, or an AR modified)."""
        found = []
        if set(current.nodes) != set(self.nodes):
            found.append("nodes")
        if set(current.users) != set(self.users or ("root",)):
            found.append("users")
        if current.end != self.end:
            found.append("end")
        if not started and current.start != self.start and self.start > now:
            found.append("start")
        if self.cores and current.cores != sum(self.cores):
            found.append("cores")
        if "OVERLAP" in self.flags and "OVERLAP" not in current.flags:
            found.append("flags")
        return found


def wanted(ar: Reservation, cpus: dict[str, int], partition: str, lend: str = "") -> Wanted:
    """The reservation of ``ar``; ``cpus``: each node's CPUs as last seen,
    to tell a slot AR (fewer slots than CPUs somewhere) from whole nodes;
    ``lend``: the lending partition, "" when nothing is lent."""
    slots: dict[str, int] = {}
    for allocation in ar.allocations:
        node = _checked(allocation.node, "node")
        slots[node] = slots.get(node, 0) + allocation.slots
    nodes = tuple(sorted(slots))
    whole = all(count >= cpus.get(node, 0) for node, count in slots.items())
    lends = lend if whole and not ar.request.maint else ""
    return Wanted(name(ar.id), ar.start, ar.end, nodes, users(ar),
                  () if whole else tuple(slots[node] for node in nodes), partition,
                  ar.request.maint, lends)
