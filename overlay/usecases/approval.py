"""Approval: an AR a policy holds for a manager (plus_approval_needed)
waits in state h, its nodes kept from other ARs in the store and nothing
of it on the batch system, until plus_approve grants it, plus_deny refuses
it, or its due time (``approval_timeout`` after the request, written once
with the AR, or its end if sooner) passes and the leader's lifecycle lets
it lapse. The manager decides (overlay/usecases/manager.py); this module
holds the rules and the words users read.
"""

from __future__ import annotations

from overlay.language.model import Reservation, ReservationError, State

AWAITING_PREFIX = "awaiting a manager's approval: "


def awaiting(reason: str | None) -> str:
    """The message of an AR held for approval (plus_status -r shows it)."""
    return AWAITING_PREFIX + reason if reason else ""


def due(now: int, timeout: int, reason: str | None) -> int | None:
    """When a request held now lapses unless a manager decides first."""
    return now + timeout if reason else None


def lapse_time(ar: Reservation) -> int:
    """When the lifecycle ends an AR still awaiting approval: its due
    time, or its end if that comes first."""
    return min(ar.approval_due or ar.end, ar.end)


def check_awaiting(ar: Reservation, action: str) -> None:
    """Refuse to ``action`` an AR that is not waiting for approval."""
    if ar.state is not State.AWAITING:
        decided = "was denied or cancelled" if ar.state is State.DELETED else \
            "is granted already" if ar.state is not State.PENDING else "is a -T operation's"
        raise ReservationError(f"AR {ar.id} is not awaiting approval (state {ar.state.value}: "
                               f"it {decided}); only ARs in state h may be approved or denied")


def check_window_open(ar: Reservation, now: int) -> None:
    """Refuse to approve an AR whose window has ended (the lifecycle's
    next pass lets it lapse)."""
    if now >= ar.end:
        raise ReservationError(f"AR {ar.id}'s window has ended: it can no longer be approved "
                               "and lapses")


def not_a_manager(user: str, action: str) -> str:
    return (f"only managers may {action} advance reservations; {user} is not one "
            "(managers: in plus.yaml)")


def unchangeable(ar: Reservation) -> str:
    return (f"AR {ar.id} awaits a manager's approval and cannot change before one decides; "
            f"cancel it (plus_cancel -r {ar.id}) and reserve again to ask for something else")


def change_needs_manager(reason: str) -> str:
    return (f"{reason}: this change needs a manager's approval; ask a manager to make it "
            "(a manager's plus_modify is not held)")


def no_jobs_yet(ar: Reservation) -> str:
    return f"AR {ar.id} awaits a manager's approval: it takes jobs once approved"


def denied(manager: str, reason: str) -> str:
    return f"denied by {manager}" + (f": {reason}" if reason else "")


def lapsed(ar: Reservation, now: int) -> str:
    if ar.approval_due is not None and ar.approval_due <= min(now, ar.end):
        waited = max(0, ar.approval_due - ar.submission_time)
        return f"lapsed: no manager approved it within approval_timeout ({waited} s)"
    return "lapsed: its window ended before a manager approved it"

