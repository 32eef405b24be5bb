"""Which notices an AR is given, and when: the leads before its start
(``reservation.starting_soon``) and before its end
(``reservation.ending_soon``) at which its users are told.

Three lists meet here (and a fourth, of its own kind: the leads before
the start at which the owners of jobs still running on the AR's nodes past
its start are told, ``clear_notice``, else the site's, as a
``reservation.nodes_busy`` event naming the jobs and a mail to each
owner; one already past when the window was set is told at once). The AR's own leads (``notify_start``,
``notify_end``), else the site's (plus.yaml's ``notice:``): its users are
told (mail, and an event marked ``notice``), but only of a lead that falls
after its window was last set (granted, modified, committed), and an end
lead only inside the window. The site's ``ending_soon`` leads, which
streams and webhooks choose among: an event each, at the start for a
lead longer than the window. A lead in both is one event, told once by
its key (``overlay.persistence.events.EventLog.add_once``), whichever
daemon leads when it falls due.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from overlay.contract.backend import Job
from overlay.events.catalog import ENDING_SOON, NODES_BUSY, STARTING_SOON
from overlay.language.model import Reservation, State

START, END, CLEAR = "start", "end", "clear"
"""What a notice tells of: the AR's start, its end, or the jobs in the way of its start."""

_BEFORE = {START: (State.WAITING, State.WARNING),
           END: (State.WAITING, State.WARNING, State.RUNNING, State.ERROR),
           CLEAR: (State.WAITING, State.WARNING)}
"""The states from which each kind's moment is still to come."""
_OPEN = {START: (State.WAITING, State.WARNING), END: (State.RUNNING, State.ERROR),
         CLEAR: (State.WAITING, State.WARNING)}
"""The states in which a notice of each kind is given."""


@dataclass(frozen=True)
class Notice:
    """One notice of an AR: of its ``moment`` at ``at``, ``lead`` seconds
    ahead, due at ``due``; ``asked``: its users are told (mail)."""

    moment: str
    at: int
    lead: int
    due: int
    asked: bool

    @property
    def kind(self) -> str:
        """The event type."""
        return {START: STARTING_SOON, END: ENDING_SOON, CLEAR: NODES_BUSY}[self.moment]

    @property
    def told(self) -> tuple[str, int, int]:
        """What a lifecycle remembers of it once told."""
        return self.moment, self.at, self.lead

    def key(self, ar: Reservation) -> str:
        """The event's key: once per AR (by id and submission), moment,
        time and lead, at every daemon (the end's keys are those
        ending-soon events always had)."""
        prefix = {START: "start", END: "soon", CLEAR: "clear"}[self.moment]
        return f"{prefix}:{ar.id}:{ar.submission_time}:{self.at}:{self.lead}"

    def ahead(self, ar: Reservation) -> bool:
        """Whether its moment is still to come, by the AR's state."""
        return ar.state in _BEFORE[self.moment]

    def open_for(self, ar: Reservation, now: int) -> bool:
        """Whether it may still be given: the AR is in the state before
        the moment, and the moment has not come."""
        return ar.state in _OPEN[self.moment] and now < self.at


def notices(ar: Reservation, start_leads: Sequence[int], end_leads: Sequence[int],
            ending_soon: Sequence[int], clear_leads: Sequence[int] = ()) -> list[Notice]:
    """Every notice of ``ar``, told or not: ``start_leads``, ``end_leads``
    and ``clear_leads`` the site's notice leads (the AR's own replace
    them), ``ending_soon`` the site's ending-soon leads."""
    request, since = ar.request, ar.window_set or ar.submission_time
    own_clear = clear_leads if request.clear_notice is None else request.clear_notice
    found = [Notice(CLEAR, ar.start, lead, max(since, ar.start - lead), True)
             for lead in own_clear if since < ar.start]
    own_start = start_leads if request.notify_start is None else request.notify_start
    own_end = end_leads if request.notify_end is None else request.notify_end
    found += [Notice(START, ar.start, lead, ar.start - lead, True) for lead in own_start
              if ar.start - lead >= since]
    asked = {lead for lead in own_end if ar.end - lead >= max(ar.start, since)}
    found += [Notice(END, ar.end, lead, max(ar.start, ar.end - lead), lead in asked)
              for lead in sorted(asked | set(ending_soon), reverse=True)]
    return found


def jobs_in_the_way(ar: Reservation, jobs: Sequence[Job]) -> list[dict]:
    """The running ``jobs`` (outside ``ar``) on its nodes whose run time
    limit ends after its start, or that have none, as a
    ``reservation.nodes_busy`` event names them."""
    nodes = set(ar.node_names)
    return [{"id": job.id, "owner": job.owner,
             "nodes": [node for node in job.nodes if node in nodes],
             "limit_end": job.runtime_limit_end}
            for job in jobs
            if job.reservation != ar.id and nodes.intersection(job.nodes)
            and (job.runtime_limit_end is None or job.runtime_limit_end > ar.start)]
