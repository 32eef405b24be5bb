"""Who the caller is, and the bearer tokens that prove it over HTTP:
plus_token, plus_token -R, and the API's /whoami."""

from __future__ import annotations

from overlay.daemon.services.base import Context, Operation
from overlay.language.model import PermissionDenied, ReservationError
from overlay.usecases.manager import Caller
from overlay.wire import codec


def ping(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    return {"user": caller.user, "manager": caller.is_manager}


def token(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """plus_token: a bearer token for the caller (the socket's peer)."""
    longest = context.config.http.token_lifespan
    lifespan = args.integer("lifespan", 60, longest, what="-l") or min(3600, longest)
    args.done()
    if context.tokens is None:
        raise ReservationError("this plus_scheduler issues no tokens")
    issued, expires = context.tokens.issue(caller.user, lifespan)
    context.client_log.info((caller.user, "token"), "token issued to %s, expiring at %d",
                            caller.user, expires)
    return {"token": issued, "user": caller.user, "expires": expires}


def revoke_tokens(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """plus_token -R: every token of the caller (or, for a manager, of
    the user named) issued so far stops working."""
    user = codec.owner(args) or caller.user
    args.done()
    if user != caller.user and not caller.is_manager:
        raise PermissionDenied(f"only a manager may revoke the tokens of another user ({user})")
    if context.tokens is None:
        raise ReservationError("this plus_scheduler issues no tokens")
    context.tokens.revoke(user)
    context.client_log.info((caller.user, "revoke"), "tokens of %s revoked by %s", user,
                            caller.user)
    return {"revoked": user}


OPERATIONS: dict[str, Operation] = {"ping": ping, "token": token, "revoke_tokens": revoke_tokens}
