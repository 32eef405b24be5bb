"""A ResKey's holder acts on the AR as its owner (overlay.network.reskey): submit
a job into it, cancel it, or change it, without ever sending the key."""

from __future__ import annotations

from overlay.daemon.services.base import Context, Operation
from overlay.daemon.services.reservations import modified
from overlay.daemon.services.views import reservation_view
from overlay.language.model import InvalidRequest, PermissionDenied, Reservation
from overlay.network import reskey
from overlay.usecases.manager import Caller, owner_of
from overlay.wire import codec


def claim(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """A claim that is not signed with the AR's key, is out of the window,
    or was seen before is refused and logged."""
    claimed = reskey.Claim(codec.ar_id(args, required=True), args.text("nonce", True),
                           args.integer("timestamp", 0, 2 ** 40, True),
                           args.text("operation", True), args.mapping("payload"),
                           args.text("hmac", True))
    args.done()
    try:
        reskey.check_form(claimed)
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None
    manager = context.manager
    (ar,) = manager.status(ar_id=claimed.ar_id)
    now = manager.now()
    try:
        if context.reskeys is None:
            raise reskey.ClaimRefused("this plus_scheduler issues no ResKeys")
        context.reskeys.check(claimed, ar.owner, ar.submission_time, now)
        seen = manager.accept_claim(claimed.nonce, ar.id, claimed.timestamp,
                                    now - reskey.CLAIM_WINDOW)
        if seen == ar.id:
            raise reskey.ClaimRefused(f"the claim on AR {ar.id} was already used (its nonce "
                                      "was seen before): a replay")
        if seen is not None:
            raise reskey.ClaimRefused(f"the claim's nonce was used before, by a claim on AR "
                                      f"{seen}: sign each claim with a fresh nonce")
    except reskey.ClaimRefused as exc:
        context.client_log.warning((caller.user, "claim refused"), "claim refused: %s %s by %s: "
                                   "%s", claimed.operation, ar.id, caller.user, exc)
        raise PermissionDenied(str(exc)) from None
    done = _carried_out(context, ar, claimed)
    context.client_log.info((caller.user, "claim carried out"), "claim carried out: %s AR %d "
                            "(owner %s) by %s", claimed.operation, ar.id, ar.owner, caller.user)
    return done


def _carried_out(context: Context, ar: Reservation, claimed: reskey.Claim) -> dict:
    """Run a claim's operation as the AR's owner, with an owner's rights
    only (a manager's AR gives its key holder no manager's rights)."""
    manager = context.manager
    owner = owner_of(ar)
    payload = codec.Arguments(f"claim {claimed.operation}", claimed.payload, manager.now())
    if claimed.operation == "submit":
        return manager.submit_claimed(owner, ar, claimed.payload)
    if claimed.operation == "cancel":
        payload.done()
        changed = manager.cancel(owner, ar.id, None, False)
    else:
        changed = [modified(context, owner, ar.id, payload)]
    context.on_change(changed)
    return reservation_view(changed[0], manager)


OPERATIONS: dict[str, Operation] = {"claim": claim}
