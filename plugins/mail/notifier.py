"""Grid Engine's AR mails (qrsub -m b/e/a, -M), sent by SMTP.

The lifecycle hooks run while the manager holds its lock, so they only
compose a message and queue it; one background thread delivers, and a
failed delivery is logged and dropped after one retry. The daemon offers
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
from email.utils import formatdate

from overlay.api.plugin import Reservation, State, hookimpl

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


def _when(epoch: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(epoch))


class Notifier:
    """Mails the -M list, or the owner when it is empty, about the events
    the AR's -m letters ask for, with the subjects of Grid Engine's
    qmaster (sge_ar_send_mail)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._queue: queue.Queue[EmailMessage | None] = queue.Queue()
        self._closed = False
        self._errors_mailed: set[int] = set()
        self._worker = threading.Thread(target=self._run, name="plus-mail", daemon=True)
        self._worker.start()
        atexit.register(self.close, settings.timeout)

    # -- hooks -------------------------------------------------------------------

    @hookimpl
    def plus_reservation_started(self, reservation: Reservation) -> None:
        self._notify(reservation, "b", "Started", f"AR {reservation.id} started")
        if reservation.state == State.ERROR:  # broken before the start: its error mail is due now
            self._error(reservation, reservation.message)

    @hookimpl
    def plus_reservation_ended(self, reservation: Reservation) -> None:
        self._errors_mailed.discard(reservation.id)
        self._notify(reservation, "e", "Finished", f"AR {reservation.id} ended")

    @hookimpl
    def plus_reservation_cancelled(self, reservation: Reservation) -> None:
        """Grid Engine sends -m e for a deleted AR too, as "Deleted"."""
        self._errors_mailed.discard(reservation.id)
        self._notify(reservation, "e", "Deleted", f"AR {reservation.id} was deleted")

    @hookimpl
    def plus_reservation_error(self, reservation: Reservation, reason: str | None) -> None:
        """Only after the start, as Grid Engine: W (before it) mails nothing;
        the start mails the error if it persists (seed 000, 5.2.2.2.1)."""
        if reason is not None and reservation.state == State.ERROR:
            self._error(reservation, reason)
        elif reason is None and reservation.state == State.RUNNING:
            self._errors_mailed.discard(reservation.id)
            self._notify(reservation, "a", "Error resolved", f"AR {reservation.id} is satisfied again")

    @hookimpl
    def plus_reservation_repaired(self, reservation: Reservation, replaced: dict) -> None:
        """Self-repair, before the window or during it: -m a's mail, saying
        which node took which one's place."""
        self._errors_mailed.discard(reservation.id)
        moves = ", ".join(f"{old} replaced by {new}" for old, new in replaced.items())
        self._notify(reservation, "a", "Repaired",
                     f"AR {reservation.id} was repaired: {moves}")

    def _error(self, reservation: Reservation, reason: str) -> None:
        """Once per error: a start into E calls both the start and the error hook."""
        if reservation.id in self._errors_mailed:
            return
        self._errors_mailed.add(reservation.id)
        self._notify(reservation, "a", "Error", f"AR {reservation.id} is in error state: {reason}")

    # -- composing -----------------------------------------------------------------

    def recipients(self, reservation: Reservation) -> list[str]:
        """-M addresses, else the owner; ``domain`` completes bare user names."""
        domain = self.settings.domain
        names = reservation.request.mail_list or (reservation.owner,)
        return [name if "@" in name or not domain else f"{name}@{domain}" for name in names]

    def _notify(self, ar: Reservation, letter: str, event: str, headline: str) -> None:
        if letter not in ar.request.mail_options:  # "" and "n" hold no event letter
            return
        if self._closed:
            log.warning("AR %d: %s mail not sent: the notifier is closed", ar.id, event)
            return
        message = EmailMessage()
        message["From"] = self.settings.sender
        message["To"] = ", ".join(self.recipients(ar))
        message["Subject"] = f"Advance Reservation {ar.id} ({ar.name or 'none'}) {event}"
        message["Date"] = formatdate(localtime=True)
        lines = [headline, "",
                 f"AR id      = {ar.id}",
                 f"name       = {ar.name or 'none'}",
                 f"owner      = {ar.owner}",
                 f"start time = {_when(ar.start)}",
                 f"end time   = {_when(ar.end)}",
                 f"nodes      = {', '.join(ar.node_names)}",
                 f"state      = {ar.state.value} ({ar.state.name.lower()})"]
        if ar.message:
            lines.append(f"reason     = {ar.message}")
        message.set_content("\n".join(lines) + "\n")
        self._queue.put(message)

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
        while (message := self._queue.get()) is not None:
            self._deliver(message)

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
