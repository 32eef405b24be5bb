"""The calendar page's sign-in: plus_web's one-time link, its exchange for
a session token, and how the page may sign in at the site's identity
provider instead."""

from __future__ import annotations

from overlay.daemon.services.base import Context, Operation
from overlay.language.model import ReservationError
from overlay.network.tokens import LOGIN, LOGIN_LIFESPAN
from overlay.usecases.manager import Caller
from overlay.wire import codec

WEB_SESSION = 8 * 3600
"""How long the calendar page's session lasts (at most http.token_lifespan)."""


def web_link(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """plus_web: a one-time sign-in link to the calendar page for the
    caller (the socket's peer)."""
    args.done()
    http = context.config.http
    if context.tokens is None or not http.enabled:
        raise ReservationError("the calendar page is served by the HTTP API, which is off "
                               "here (http.address in plus.yaml)")
    code, expires = context.tokens.issue(caller.user, LOGIN_LIFESPAN, use=LOGIN)
    context.client_log.info((caller.user, "web_link"), "sign-in link issued to %s, expiring "
                            "at %d", caller.user, expires)
    return {"url": f"{http.base_url}/web/#code={code}", "user": caller.user, "expires": expires}


def web_session(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """The page's exchange of plus_web's one-time code for a session token
    of the code's user (the code proves who; the caller is the HTTP
    companion)."""
    code = args.text("code", required=True)
    args.done()
    if context.tokens is None:
        raise ReservationError("this plus_scheduler issues no tokens")
    user = context.tokens.redeem(code)
    lifespan = min(WEB_SESSION, context.config.http.token_lifespan)
    token, expires = context.tokens.issue(user, lifespan)
    context.client_log.info((user, "web_session"), "sign-in link of %s used; session until %d",
                            user, expires)
    return {"token": token, "user": user, "expires": expires}


def web_config(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """How the calendar page may sign in: through the site's identity
    provider (its endpoints, the page's client id) if one is set up; and
    the site's zone, the page's default, so that its times and
    plus_status's agree for a browser elsewhere."""
    args.done()
    zone = {"timezone": context.config.timezone}
    if context.provider is None:
        return {"oidc": None, **zone}
    try:
        return {"oidc": context.provider.sign_in(), **zone}
    except (OSError, ValueError) as exc:
        return {"oidc": None, **zone, "why": f"the identity provider cannot be reached: {exc}"}


OPERATIONS: dict[str, Operation] = {
    "web_link": web_link, "web_session": web_session, "web_config": web_config}
