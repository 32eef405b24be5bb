"""The words of an AR's mail: what happened, the AR with its times in the
site's zone, and what its users can do next (submit into it, move or
extend it, release it), with the commands to type.

Composed on the sender's thread, not in the hook: the submit line asks
the backend (``Advice.submit_line``), which a hook, under the use cases'
lock, must not.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate

from overlay.api.plugin import Advice, Reservation

EXTENSION = 3600
"""How much longer the extension a mail suggests makes the AR."""


@dataclass(frozen=True)
class Draft:
    """A mail to write: about ``ar`` (as it was when the hook ran), whose
    ``event`` ("Started", "Starts in 1 hour", ...) the subject names,
    ``headline`` its first line, ``steps`` which advice it gives."""

    ar: Reservation
    event: str
    headline: str
    steps: str
    advice: Advice
    to: tuple[str, ...] = ()
    """Whom to mail instead of the AR's users (the managers, asked to
    decide; a job's owner, whose job is in the way of its start)."""


SUBMIT, START_SOON, END_SOON, OVER, BROKEN, DECIDE, IN_THE_WAY, REFUSED = (
    "submit", "start", "end", "over", "broken", "decide", "in the way", "refused")
"""Which next steps a mail gives: into a running or repaired AR, before the
start, before the end, after it, while it is broken, to the managers asked
to approve it, to the owner of a job that would still run on its nodes at
its start, and for an occurrence of a series that was refused (the AR it
would have been has id 0)."""


def in_words(seconds: int) -> str:
    """A lead as people say it: 1 hour, 15 minutes, 1 hour 30 minutes, 40 seconds."""
    parts = []
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count} {unit}{'s' if count != 1 else ''}")
    return " ".join(parts[:2]) or "0 seconds"


def written(draft: Draft, sender: str, recipients: list[str]) -> EmailMessage:
    """The mail of ``draft``, ready to send."""
    ar, advice = draft.ar, draft.advice
    mail = EmailMessage()
    mail["From"] = sender
    mail["To"] = ", ".join(recipients)
    named = f"series {ar.series}" if draft.steps == REFUSED else str(ar.id)
    mail["Subject"] = f"Advance Reservation {named} ({ar.name or 'none'}) {draft.event}"
    mail["Date"] = formatdate(localtime=True)
    lines = [draft.headline, "",
             f"AR id      = {ar.id}",
             f"name       = {ar.name or 'none'}",
             f"owner      = {ar.owner}",
             f"start time = {advice.local(ar.start)}",
             f"end time   = {advice.local(ar.end)}",
             f"nodes      = {', '.join(ar.node_names)}",
             f"state      = {ar.state.value} ({ar.state.name.lower()})"]
    if ar.message:
        lines.append(f"reason     = {ar.message}")
    steps = next_steps(draft)
    if steps:
        lines += ["", "What you can do now:"] + [f"  {step}" for step in steps]
    lines += ["", f"Times are in {advice.zone}."]
    mail.set_content("\n".join(lines) + "\n")
    return mail


def next_steps(draft: Draft) -> list[str]:
    """What the AR's users can do next, each with the command to type."""
    ar, advice, steps = draft.ar, draft.advice, draft.steps
    submit = advice.submit_line()
    extend = (f"extend it by an hour: plus_modify -r {ar.id} -e "
              f"{advice.typed(ar.end + EXTENSION)}")
    release = f"release its nodes now if you no longer need them: plus_cancel -r {ar.id}"
    if steps == START_SOON:
        return [*([f"get jobs ready for it: {submit}"] if submit else []),
                f"move it: plus_modify -r {ar.id} -s NEW_START (its length is kept)", release]
    if steps == SUBMIT:
        return [*([f"submit jobs into it: {submit}"] if submit else []), extend, release]
    if steps == END_SOON:
        return [f"{extend} (if its nodes are free for it)",
                "jobs still running in it at its end are ended with it: save your work", release]
    if steps == DECIDE:
        return [f"approve it: plus_approve {ar.id}",
                f"deny it: plus_deny {ar.id} -reason 'why, for {ar.owner}'",
                f"see it and what it holds: plus_status -r {ar.id}",
                *([f"unless one of you decides, it lapses at {advice.local(ar.approval_due)}"]
                  if ar.approval_due else [])]
    if steps == IN_THE_WAY:
        return [f"let your job end before {advice.local(ar.start)}, or end it now and submit "
                "it again with a run time limit that ends before then (or after the AR)",
                "at the start the site's conflict policy acts on jobs still there (requeued "
                "or killed)"]
    if steps == REFUSED:
        return [f"see the series and what it was refused: plus_status -series {ar.series}",
                f"reserve that time yourself: plus_reserve -s {advice.typed(ar.start)} -D "
                f"{ar.end - ar.start}s -n {ar.request.nodes}",
                f"stop the series: plus_cancel -series {ar.series}"]
    if steps == BROKEN:
        return ["the overlay keeps the AR and mails again once its nodes are healthy",
                f"see why: plus_status -r {ar.id}", release]
    return [f"reserve again: plus_reserve -s START -D DURATION -n {max(1, len(ar.node_names))}"]
