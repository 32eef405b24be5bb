"""AR mails: Grid Engine's (qrsub -m b/e/a, -M), a notice at each of the
AR's leads before its start and end, and what to do next in each; sent by
SMTP.

The lifecycle hooks run while the manager holds its lock, so they only
queue a draft; one background thread writes and delivers it, and a failed
delivery is logged and dropped after one retry. The daemon offers
plugins no shutdown hook, so the thread is a daemon thread and ``close``
runs at exit: mails still queued get ``timeout`` seconds to go out.
"""

from __future__ import annotations

import atexit
import logging
import queue
import smtplib
import threading
import time
from dataclasses import dataclass
from email.message import EmailMessage

from overlay.api.plugin import Advice, Reservation, State, hookimpl
from overlay_mail.compose import (
    BROKEN,
    DECIDE,
    END_SOON,
    IN_THE_WAY,
    OVER,
    REFUSED,
    START_SOON,
    SUBMIT,
    Draft,
    in_words,
    written,
)

log = logging.getLogger("plus.mail")

RETRY_DELAY = 1.0
"""Seconds before the one retry of a failed delivery."""


@dataclass(frozen=True)
class Settings:
    """The ``mail:`` section, checked (see plugin.py)."""

    sender: str
    host: str = "localhost"
    port: int = 25
    domain: str | None = None
    timeout: float = 10


class Notifier:
    """Mails the -M list, or else the owner and the users the AR names,
    about the events the AR's -m letters ask for (the subjects of Grid
    Engine's qmaster, sge_ar_send_mail) and at its notice leads, unless
    -m n says no mail at all."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._queue: queue.Queue[Draft | None] = queue.Queue()
        self._closed = False
        self._errors_mailed: set[int] = set()
        self._worker = threading.Thread(target=self._run, name="plus-mail", daemon=True)
        self._worker.start()
        atexit.register(self.close, settings.timeout)

    # -- hooks -------------------------------------------------------------------

    @hookimpl
    def plus_reservation_starting_soon(self, reservation: Reservation, lead: int,
                                       advice: Advice) -> None:
        self._notice(reservation, "Starts", lead, reservation.start, START_SOON, advice)

    @hookimpl
    def plus_reservation_ending_soon(self, reservation: Reservation, lead: int,
                                     advice: Advice) -> None:
        self._notice(reservation, "Ends", lead, reservation.end, END_SOON, advice)

    def _notice(self, ar: Reservation, verb: str, lead: int, at: int, steps: str,
                advice: Advice) -> None:
        """A lead before the start or end came: mailed whatever -m's letters, unless n."""
        if ar.request.mail_options != "n":
            self._put(Draft(ar, f"{verb} in {in_words(lead)}", f"AR {ar.id} {verb.lower()} in "
                            f"{in_words(lead)}, at {advice.local(at)}", steps, advice))

    @hookimpl
    def plus_reservation_nodes_busy(self, reservation: Reservation, lead: int, jobs: list,
                                    advice: Advice) -> None:
        """A clear-notice lead: each owner of jobs in the way of the AR's
        start is mailed once, naming them (whatever the AR's -m letters:
        the mail is not the AR's users')."""
        by_owner: dict[str, list] = {}
        for job in jobs:
            by_owner.setdefault(str(job["owner"]), []).append(job)
        for owner, owned in sorted(by_owner.items()):
            named = "; ".join(f"job {job['id']} on {', '.join(job['nodes'])}" for job in owned)
            self._put(Draft(reservation, f"Nodes busy in {in_words(lead)}",
                            f"AR {reservation.id} starts in {in_words(lead)}, at "
                            f"{advice.local(reservation.start)}, on nodes where your jobs "
                            f"would still run: {named}", IN_THE_WAY, advice,
                            to=(owner,)))

    @hookimpl
    def plus_reservation_started(self, reservation: Reservation, advice: Advice) -> None:
        self._notify(reservation, "b", "Started", f"AR {reservation.id} started", SUBMIT, advice)
        if reservation.state == State.ERROR:  # broken at the start: its error mail is due now
            self._error(reservation, reservation.message, advice)

    @hookimpl
    def plus_reservation_ended(self, reservation: Reservation, advice: Advice) -> None:
        self._errors_mailed.discard(reservation.id)
        self._notify(reservation, "e", "Finished", f"AR {reservation.id} ended", OVER, advice)

    @hookimpl
    def plus_reservation_released(self, reservation: Reservation, why: str,
                                  advice: Advice) -> None:
        """-m e: the AR ended early and its nodes are free again."""
        self._errors_mailed.discard(reservation.id)
        self._notify(reservation, "e", "Released", f"AR {reservation.id} was released early, "
                     f"its nodes freed: {why}", OVER, advice)

    @hookimpl
    def plus_reservation_cancelled(self, reservation: Reservation, advice: Advice) -> None:
        """Grid Engine sends -m e for a deleted AR too, as "Deleted"."""
        self._errors_mailed.discard(reservation.id)
        self._notify(reservation, "e", "Deleted", f"AR {reservation.id} was deleted", OVER,
                     advice)

    @hookimpl
    def plus_reservation_error(self, reservation: Reservation, reason: str | None,
                               advice: Advice) -> None:
        """-m a: the AR went into W (before its start: Grid Engine mails
        nothing then, but a user who learns of it only at the start has
        lost the time to act) or E, or came back from either."""
        if reason is not None:
            self._error(reservation, reason, advice)
        elif reservation.id in self._errors_mailed:
            self._errors_mailed.discard(reservation.id)
            steps = SUBMIT if reservation.state == State.RUNNING else START_SOON
            self._notify(reservation, "a", "Error resolved",
                         f"AR {reservation.id} is satisfied again", steps, advice)

    @hookimpl
    def plus_reservation_repaired(self, reservation: Reservation, replaced: dict,
                                  advice: Advice) -> None:
        """Self-repair, before the window or during it: -m a's mail, saying
        which node took which one's place (instead of "Error resolved")."""
        self._errors_mailed.discard(reservation.id)
        moves = ", ".join(f"{old} replaced by {new}" for old, new in replaced.items())
        steps = SUBMIT if reservation.state == State.RUNNING else START_SOON
        self._notify(reservation, "a", "Repaired",
                     f"AR {reservation.id} was repaired: {moves}", steps, advice)

    @hookimpl
    def plus_reservation_approval_requested(self, reservation: Reservation, reason: str,
                                            managers: tuple[str, ...], advice: Advice) -> None:
        """The site's managers are asked to decide, whatever the AR's -m."""
        if managers:
            self._put(Draft(reservation, "Awaits approval", f"AR {reservation.id} of "
                            f"{reservation.owner} awaits a manager's approval: {reason}",
                            DECIDE, advice, to=tuple(managers)))

    @hookimpl
    def plus_reservation_approved(self, reservation: Reservation, approver: str,
                                  advice: Advice) -> None:
        """Its users are told, unless -m n: it is theirs now."""
        if reservation.request.mail_options != "n":
            steps = SUBMIT if reservation.state == State.RUNNING else START_SOON
            self._put(Draft(reservation, "Approved", f"AR {reservation.id} was approved by "
                            f"{approver}: it is granted", steps, advice))

    @hookimpl
    def plus_reservation_denied(self, reservation: Reservation, reason: str,
                                advice: Advice) -> None:
        """Denied by a manager, or lapsed: its users are told why, unless -m n."""
        if reservation.request.mail_options != "n":
            self._put(Draft(reservation, "Denied", f"AR {reservation.id} will not be granted: "
                            f"{reason}", OVER, advice))

    @hookimpl
    def plus_reservation_occurrence_refused(self, reservation: Reservation, series: int,
                                            reason: str, advice: Advice) -> None:
        """An occurrence of a recurring series could not be granted: mailed
        whatever -m's letters (a user who learns of it only at its start
        has lost the time to act), unless n."""
        if reservation.request.mail_options != "n":
            self._put(Draft(reservation, "Occurrence refused",
                            f"The occurrence of series {series} at "
                            f"{advice.local(reservation.start)} was not granted: {reason}",
                            REFUSED, advice))

    def _error(self, reservation: Reservation, reason: str, advice: Advice) -> None:
        """Once per error: a start into E calls both the start and the error
        hook, and an AR in W that starts broken goes on into E."""
        if reservation.id in self._errors_mailed or "a" not in reservation.request.mail_options:
            return
        self._errors_mailed.add(reservation.id)
        if reservation.state == State.WARNING:
            self._notify(reservation, "a", "Warning", f"AR {reservation.id} is in warning "
                         f"state (its start is ahead): {reason}", BROKEN, advice)
        else:
            self._notify(reservation, "a", "Error",
                         f"AR {reservation.id} is in error state: {reason}", BROKEN, advice)

    # -- composing -----------------------------------------------------------------

    def recipients(self, reservation: Reservation) -> list[str]:
        """-M addresses, else the owner and the users its access list names
        (not its @groups); ``domain`` completes bare user names."""
        return self.addresses(reservation.request.mail_list or tuple(
            name for name in reservation.acl or (reservation.owner,) if not name.startswith("@")))

    def addresses(self, names: tuple[str, ...]) -> list[str]:
        """``domain`` completes bare user names."""
        domain = self.settings.domain
        return [name if "@" in name or not domain else f"{name}@{domain}" for name in names]

    def _notify(self, ar: Reservation, letter: str, event: str, headline: str, steps: str,
                advice: Advice) -> None:
        if letter in ar.request.mail_options:  # "" and "n" hold no event letter
            self._put(Draft(ar, event, headline, steps, advice))

    def _put(self, draft: Draft) -> None:
        if self._closed:
            log.warning("AR %d: %s mail not sent: the notifier is closed", draft.ar.id,
                        draft.event)
            return
        self._queue.put(draft)

    # -- delivery --------------------------------------------------------------------

    @hookimpl
    def plus_unconfigure(self) -> None:
        """plus.yaml was re-read: the new Notifier sends from now on."""
        self.close(self.settings.timeout)

    def close(self, timeout: float | None = None) -> bool:
        """Deliver what is queued, then stop the worker; whether it stopped
        within ``timeout`` seconds."""
        self._closed = True
        self._queue.put(None)
        self._worker.join(timeout)
        return not self._worker.is_alive()

    def _run(self) -> None:
        while (draft := self._queue.get()) is not None:
            try:
                mail = written(draft, self.settings.sender, self.addresses(draft.to) if draft.to
                               else self.recipients(draft.ar))
            except Exception:  # whatever happens, the worker must live on
                log.exception("AR %d: %s mail not written", draft.ar.id, draft.event)
                continue
            self._deliver(mail)

    def _deliver(self, message: EmailMessage) -> None:
        try:
            self._send(message)
        except Exception as exc:  # whatever happens, the worker must live on
            self._warn(message, "failed, retrying", exc)
            time.sleep(RETRY_DELAY)
            try:
                self._send(message)
            except Exception as again:
                self._warn(message, "dropped after a retry", again)

    def _send(self, message: EmailMessage) -> None:
        settings = self.settings
        with smtplib.SMTP(settings.host, settings.port, timeout=settings.timeout) as smtp:
            refused = smtp.send_message(message)
        if refused:
            log.warning("mail %r: recipients refused: %s", message["Subject"], ", ".join(sorted(refused)))

    def _warn(self, message: EmailMessage, outcome: str, exc: Exception) -> None:
        log.warning("mail %r to %s via %s:%d %s: %s", message["Subject"], message["To"],
                    self.settings.host, self.settings.port, outcome, exc)
