"""Who is asking: the socket's peer (SO_PEERCRED), the user a bearer token
proves (a request the HTTP companion forwards), or the UserID a manager or
a trusted metascheduler's token acts for (seed 003), as far as the site
allows. Never a name the client merely sends."""

from __future__ import annotations

import pwd
from typing import Any

from overlay.daemon.services.base import Context
from overlay.kit.users import account, listed, system_account
from overlay.language import limits
from overlay.language.model import PermissionDenied, ReservationError
from overlay.language.request import parse_name
from overlay.network.tokens import ISSUER, TokenRefused
from overlay.usecases.manager import Caller

PEER_ONLY = frozenset({"token", "revoke_tokens", "shutdown", "web_link", "daemons",
                       "event_head"})
"""Operations whose caller must be the socket's peer: a token may not mint
tokens (its life would never end) nor stop the daemon, and which hosts
serve the store is for the people logged in on them (plus_scheduler
--status); the wait for the next event, which holds a thread of the
daemon's, is the HTTP companion's one wait for all its streams."""


def caller(context: Context, uid: int, gid: int) -> Caller:
    """Who is asking, from the peer's credentials (name and groups as
    users.account keeps them for a minute)."""
    found = account(uid, gid)
    if found is None:
        raise ReservationError(f"uid {uid} has no user name on this host")
    name, groups = found
    manager = uid in (0, context.daemon_uid) or name in context.config.managers
    return Caller(uid=uid, user=name, groups=groups, is_manager=manager)


def caller_for(context: Context, uid: int, gid: int, message: dict) -> Caller:
    """Who is asking: the peer (a command on this host), or the user a
    bearer token proves, or the UserID a manager or a trusted
    metascheduler's token acts for (``_acted_for``)."""
    token, acting_for = message.get("token"), message.get("as")
    if token is None:
        peer = caller(context, uid, gid)
        if acting_for is None or acting_for == peer.user:
            return peer
        if not peer.is_manager:
            raise PermissionDenied(f"{peer.user} may not act for another UserID: only a "
                                   "manager (or a trusted principal's token) may")
        return _acted_for(context, peer.user, acting_for)
    if context.tokens is None or not isinstance(token, str):
        raise TokenRefused("the token is not valid")
    if message.get("op") in PEER_ONLY:
        raise PermissionDenied(f"{message.get('op')} takes the caller from the socket's peer, "
                               "never from a token: run plus_token on the daemon's host")
    user = _bearer(context, token)
    if acting_for is not None and acting_for != user:
        if user not in context.config.http.trusted_principals:
            raise PermissionDenied(f"{user} may not act for another user: only the principals "
                                   "of http.trusted_principals may")
        return _acted_for(context, user, acting_for)
    return _named(context, user)


def _bearer(context: Context, token: str) -> str:
    """The user a bearer token proves: one of this daemon's (plus_token,
    plus_web), or one of the site's identity provider, whose user must
    be a person's account here (never root, a system account or a
    manager: those act only on this host)."""
    import jwt
    try:
        issuer = jwt.decode(token, options={"verify_signature": False}).get("iss")
    except jwt.InvalidTokenError as exc:
        raise TokenRefused(f"the token is not valid ({exc})") from None
    if issuer == ISSUER:
        return context.tokens.user(token)
    provider = context.provider
    if provider is None or issuer != provider.issuer:
        raise TokenRefused(f"the token's issuer {limits.shown(issuer)} is neither this "
                           "plus_scheduler nor the site's identity provider (http.oidc.issuer)")
    user = provider.user(token)
    named = _named(context, user)
    min_uid = context.config.min_uid
    if system_account(named.uid, min_uid):
        why = f"root or a system account (uid {named.uid}, below min_uid {min_uid})"
    elif named.is_manager:
        why = "a manager"
    else:
        return user
    raise PermissionDenied(f"the identity provider's token names {user}, {why}: such "
                           "accounts act only on this host (plus_token)")


def _acted_for(context: Context, principal: str, target: Any) -> Caller:
    """The user a principal acts for, if the site allows it: never root,
    a system account (below min_uid) or a manager, and only someone
    act_for names."""
    target_caller = _named(context, target if isinstance(target, str) else "")
    config = context.config
    if system_account(target_caller.uid, config.min_uid):
        raise PermissionDenied(f"{principal} may not act for {target_caller.user}: uid "
                               f"{target_caller.uid} is root or a system account (below min_uid "
                               f"{config.min_uid})")
    if target_caller.is_manager:
        raise PermissionDenied(f"{principal} may not act for {target_caller.user}: a manager acts "
                               "only as itself")
    if not listed(config.act_for, target_caller.user, target_caller.groups):
        raise PermissionDenied(f"{principal} may not act for {target_caller.user}: act_for in "
                               f"plus.yaml does not name the user or a group of theirs")
    return target_caller


def _named(context: Context, user: str) -> Caller:
    """The caller a token or a manager names."""
    try:
        entry = pwd.getpwnam(parse_name(user, "UserID"))
    except KeyError:
        raise PermissionDenied(f"user {limits.shown(user)} is not known on this host") from None
    return caller(context, entry.pw_uid, entry.pw_gid)
