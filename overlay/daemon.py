"""plus_scheduler: owns the store, the planner, the backend and the timers,
and serves the commands on a Unix socket.

The caller's identity comes from the socket's peer credentials
(SO_PEERCRED), never from anything the client sends.
"""

from __future__ import annotations

import argparse
import fcntl
import gc
import logging
import os
import pwd
import signal
import socket
import sys
import threading
from typing import Any, Callable

import pluggy

from overlay import config as config_module
from overlay import (
    connections,
    limits,
    logsetup,
    oidc,
    plugins,
    protocol,
    reconfigure,
    reskey,
    statefile,
    wire,
)
from overlay.accounting import ReportingFollower, ReportingWriter, used
from overlay.backend import Backend
from overlay.config import Config, ConfigError
from overlay.http.companion import Companion
from overlay.lifecycle import Lifecycle
from overlay.manager import Caller, Manager, owner_of
from overlay.model import (
    FINISHED_STATES,
    InvalidRequest,
    LimitExceeded,
    NoCapacity,
    PermissionDenied,
    Reservation,
    ReservationError,
    State,
    UnknownReservation,
)
from overlay.ordering import NODE_SORT_KEYS
from overlay.ratelog import RateLimitedLog
from overlay.request import RequestError, parse_idempotency_key, parse_name, parse_name_list
from overlay.store import Conflict, Store, StoreUnavailable, refuse_truncated, shown_url
from overlay.storelease import LeaseLost, StoreLease
from overlay.timespec import TimeSpecError
from overlay.tokens import ISSUER, LOGIN, LOGIN_LIFESPAN, TokenRefused, Tokens
from overlay.users import account, listed, system_account

log = logging.getLogger("plus.daemon")
WEB_SESSION = 8 * 3600
"""How long the calendar page's session lasts (at most http.token_lifespan)."""

_REPLY_TIMEOUT = 30.0
"""Seconds a client may take to read its reply."""
SWITCH_INTERVAL = 0.001
"""Seconds a thread holds the interpreter while others wait (Python's
default 5 ms): a short request waiting behind a user's listings of a
thousand ARs waited that long for each of its turns."""
CLIENT_LINES = 10
"""Log lines a user's requests may cause per kind and minute (ratelog)."""
_FAILURES = RateLimitedLog(log, burst=CLIENT_LINES)


def summary_rows(ars: list[Reservation], with_nodes: bool, messages: bool) -> list[list]:
    """plus_status's table columns of each AR, a list each (a tenth of a
    view's bytes: listings of many ARs stay fast)."""
    # State is a str enum: JSON writes its letter, without Enum.value's slow lookup
    return [[ar.id, ar.name, ar.owner, ar.state, ar.start, ar.end,
             ",".join(ar.node_names) if with_nodes else "",
             *((ar.message,) if messages else ())] for ar in ars]


def reservation_view(ar: Reservation, manager: Manager) -> dict:
    """An AR as the commands print it (JSON-ready)."""
    request = ar.request
    view = {
        "id": ar.id, "name": ar.name, "owner": ar.owner, "group": ar.group,
        "state": ar.state.value, "submission_time": ar.submission_time,
        "start": ar.start, "end": ar.end, "duration": request.duration,
        "acl": list(ar.acl), "account": ar.account, "message": ar.message,
        "granted_pe": ar.granted_pe,
        "allocations": [_allocation_view(a) for a in ar.allocations],
        "inner": sorted(manager.inside.inner(ar.id)),
        "request": wire.encode_request(request),
        "job_runtime_limit": max(0, request.duration - manager.config.duration_offset),
        "submit_hint": manager.backend.submit_hint(ar),
        "idempotency_key": ar.idempotency_key,
        "pending": None,
        "refusal": None,
        "warnings": _warnings(ar, manager),
    }
    refusal = manager.refusals.get(ar.id)
    if refusal is not None:
        view["refusal"] = refusal._asdict()
    if ar.pending is not None:
        view["pending"] = {
            "operation": ar.pending.value, "since": ar.pending_since,
            "expires": ar.pending_since + manager.config.commit_timeout,
            "start": ar.pending_request.start if ar.pending_request else None,
            "end": ar.pending_request.end if ar.pending_request else None,
            "allocations": [_allocation_view(a) for a in ar.pending_allocations],
        }
    return view


def _allocation_view(allocation) -> dict:
    """A node the AR holds: its slots, and the AR they are inside (ResAccess)."""
    view = {"node": allocation.node, "slots": allocation.slots}
    if allocation.queue:
        view["queue"] = allocation.queue
    if allocation.within is not None:
        view["within"] = allocation.within
    return view


def _warnings(ar: Reservation, manager: Manager) -> list[str]:
    """What the owner should know before relying on the AR."""
    warnings = manager.backend.delays(ar)
    idle = [name for name in ar.node_names
            if name in manager.nodes and not manager.nodes[name].runs_jobs]
    if idle:
        warnings.append(f"{', '.join(idle)} run{'s' if len(idle) == 1 else ''} no jobs (exec: "
                        "none in the cluster file): jobs of this AR cannot start there")
    return warnings


class Service:
    """The operations clients may call, by name."""

    def __init__(self, manager: Manager, on_change: Callable[[list[Reservation]], None],
                 on_shutdown: Callable[[], None], tokens: Tokens | None = None,
                 reskeys: reskey.ResKeys | None = None,
                 provider: oidc.Provider | None = None) -> None:
        self.manager = manager
        self.on_change = on_change
        self.on_shutdown = on_shutdown
        self.tokens = tokens
        self.reskeys = reskeys
        self.provider = provider
        self.daemon_uid = os.getuid()
        self.client_log = RateLimitedLog(log, burst=CLIENT_LINES)
        self.turns = connections.UserTurns(manager.config.http.max_requests_per_user)
        self.reported = ReportingFollower(manager.config.accounting_path)
        self.plugin_operations: dict[str, Callable[[Caller, dict], Any]] = {}
        for offered in manager.pm.hook.plus_client_operations(manager=manager):
            for name, operation in (offered or {}).items():
                if hasattr(self, f"op_{name}") or name in self.plugin_operations:
                    raise plugins.PluginError(f"plugins: operation {name!r} is offered twice")
                self.plugin_operations[name] = operation

    def caller(self, uid: int, gid: int) -> Caller:
        """Who is asking, from the peer's credentials (name and groups as
        users.account keeps them for a minute)."""
        found = account(uid, gid)
        if found is None:
            raise ReservationError(f"uid {uid} has no user name on this host")
        name, groups = found
        manager = uid in (0, self.daemon_uid) or name in self.manager.config.managers
        return Caller(uid=uid, user=name, groups=groups, is_manager=manager)

    def caller_for(self, uid: int, gid: int, message: dict) -> Caller:
        """Who is asking: the peer (a command on this host), or the user a
        bearer token proves (a request the HTTP companion forwards), or the
        UserID a manager or a trusted metascheduler's token acts for (seed
        003), as far as the site allows (``_acted_for``)."""
        token, acting_for = message.get("token"), message.get("as")
        if token is None:
            peer = self.caller(uid, gid)
            if acting_for is None or acting_for == peer.user:
                return peer
            if not peer.is_manager:
                raise PermissionDenied(f"{peer.user} may not act for another UserID: only a "
                                       "manager (or a trusted principal's token) may")
            return self._acted_for(peer.user, acting_for)
        if self.tokens is None or not isinstance(token, str):
            raise TokenRefused("the token is not valid")
        if message.get("op") in _PEER_ONLY:
            raise PermissionDenied(f"{message.get('op')} takes the caller from the socket's peer, "
                                   "never from a token: run plus_token on the daemon's host")
        user = self._bearer(token)
        if acting_for is not None and acting_for != user:
            if user not in self.manager.config.http.trusted_principals:
                raise PermissionDenied(f"{user} may not act for another user: only the principals "
                                       "of http.trusted_principals may")
            return self._acted_for(user, acting_for)
        return self._named(user)

    def _bearer(self, token: str) -> str:
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
            return self.tokens.user(token)
        if self.provider is None or issuer != self.provider.issuer:
            raise TokenRefused(f"the token's issuer {limits.shown(issuer)} is neither this "
                               "plus_scheduler nor the site's identity provider (http.oidc.issuer)")
        user = self.provider.user(token)
        caller = self._named(user)
        min_uid = self.manager.config.min_uid
        if system_account(caller.uid, min_uid):
            why = f"root or a system account (uid {caller.uid}, below min_uid {min_uid})"
        elif caller.is_manager:
            why = "a manager"
        else:
            return user
        raise PermissionDenied(f"the identity provider's token names {user}, {why}: such "
                               "accounts act only on this host (plus_token)")

    def op_web_config(self, caller: Caller, args: wire.Arguments) -> dict:
        """How the calendar page may sign in: through the site's identity
        provider (its endpoints, the page's client id) if one is set up."""
        args.done()
        if self.provider is None:
            return {"oidc": None}
        try:
            return {"oidc": self.provider.sign_in()}
        except (OSError, ValueError) as exc:
            return {"oidc": None, "why": f"the identity provider cannot be reached: {exc}"}

    def _acted_for(self, principal: str, target: Any) -> Caller:
        """The user a principal acts for, if the site allows it: never root,
        a system account (below min_uid) or a manager, and only someone
        act_for names."""
        caller = self._named(target if isinstance(target, str) else "")
        config = self.manager.config
        if system_account(caller.uid, config.min_uid):
            raise PermissionDenied(f"{principal} may not act for {caller.user}: uid {caller.uid} is "
                                   f"root or a system account (below min_uid {config.min_uid})")
        if caller.is_manager:
            raise PermissionDenied(f"{principal} may not act for {caller.user}: a manager acts "
                                   "only as itself")
        if not listed(config.act_for, caller.user, caller.groups):
            raise PermissionDenied(f"{principal} may not act for {caller.user}: act_for in "
                                   f"plus.yaml does not name the user or a group of theirs")
        return caller

    def _named(self, user: str) -> Caller:
        """The caller a token or a manager names."""
        try:
            entry = pwd.getpwnam(parse_name(user, "UserID"))
        except KeyError:
            raise PermissionDenied(f"user {limits.shown(user)} is not known on this host") from None
        return self.caller(entry.pw_uid, entry.pw_gid)

    def op_token(self, caller: Caller, args: wire.Arguments) -> dict:
        """plus_token: a bearer token for the caller (the socket's peer)."""
        longest = self.manager.config.http.token_lifespan
        lifespan = args.integer("lifespan", 60, longest, what="-l") or min(3600, longest)
        args.done()
        if self.tokens is None:
            raise ReservationError("this plus_scheduler issues no tokens")
        token, expires = self.tokens.issue(caller.user, lifespan)
        self.client_log.info((caller.user, "token"), "token issued to %s, expiring at %d",
                             caller.user, expires)
        return {"token": token, "user": caller.user, "expires": expires}

    def op_web_link(self, caller: Caller, args: wire.Arguments) -> dict:
        """plus_web: a one-time sign-in link to the calendar page for the
        caller (the socket's peer)."""
        args.done()
        http = self.manager.config.http
        if self.tokens is None or not http.enabled:
            raise ReservationError("the calendar page is served by the HTTP API, which is off "
                                   "here (http.address in plus.yaml)")
        code, expires = self.tokens.issue(caller.user, LOGIN_LIFESPAN, use=LOGIN)
        self.client_log.info((caller.user, "web_link"), "sign-in link issued to %s, expiring "
                             "at %d", caller.user, expires)
        return {"url": f"{http.base_url}/web/#code={code}", "user": caller.user,
                "expires": expires}

    def op_web_session(self, caller: Caller, args: wire.Arguments) -> dict:
        """The page's exchange of plus_web's one-time code for a session
        token of the code's user (the code proves who; the caller is the
        HTTP companion)."""
        code = args.text("code", required=True)
        args.done()
        if self.tokens is None:
            raise ReservationError("this plus_scheduler issues no tokens")
        user = self.tokens.redeem(code)
        lifespan = min(WEB_SESSION, self.manager.config.http.token_lifespan)
        token, expires = self.tokens.issue(user, lifespan)
        self.client_log.info((user, "web_session"), "sign-in link of %s used; session until %d",
                             user, expires)
        return {"token": token, "user": user, "expires": expires}

    def op_revoke_tokens(self, caller: Caller, args: wire.Arguments) -> dict:
        """plus_token -R: every token of the caller (or, for a manager, of
        the user named) issued so far stops working."""
        user = wire.owner(args) or caller.user
        args.done()
        if user != caller.user and not caller.is_manager:
            raise PermissionDenied(f"only a manager may revoke the tokens of another user ({user})")
        if self.tokens is None:
            raise ReservationError("this plus_scheduler issues no tokens")
        self.tokens.revoke(user)
        self.client_log.info((caller.user, "revoke"), "tokens of %s revoked by %s", user,
                             caller.user)
        return {"revoked": user}

    def handle(self, caller: Caller, op: Any, args: Any) -> Any:
        """Run operation ``op``: the core's with its arguments decoded and
        checked (wire.Arguments), a plugin's with the plain mapping, which
        the plugin checks itself."""
        method = getattr(self, f"op_{op}", None) if isinstance(op, str) else None
        if method is not None:
            return method(caller, wire.Arguments(op, args, self.manager.now()))
        operation = self.plugin_operations.get(op) if isinstance(op, str) else None
        if operation is None:
            raise wire.BadArguments(f"unknown operation {limits.shown(op)}")
        if not isinstance(args, dict):
            raise wire.BadArguments("args must be an object")
        return operation(caller, args)

    def _views(self, ars: list[Reservation]) -> list[dict]:
        return [reservation_view(ar, self.manager) for ar in ars]

    def op_ping(self, caller: Caller, args: wire.Arguments) -> dict:
        return {"user": caller.user, "manager": caller.is_manager}

    def op_reserve(self, caller: Caller, args: wire.Arguments) -> dict:
        request = wire.reserve_request(args)
        transactional = args.flag("transactional")
        key = args.checked("idempotency_key", parse_idempotency_key)
        verify = args.flag("verify")
        start_now = args.flag("start_now")
        args.done()
        try:
            ar = self.manager.reserve(caller, request, transactional, key, verify, start_now)
        except NoCapacity as exc:
            if not verify:
                raise
            # qrsub -w v: the scheduler's reasons, all of them, as 8.1.9 prints them
            return {"verified": False, "reasons": list(exc.reasons) or [str(exc)]}
        if verify:      # qrsub -w v: what it would be, nothing stored
            return {"verified": True, "allocations": [_allocation_view(a) for a in ar.allocations],
                    "granted_pe": ar.granted_pe}
        self.on_change([ar])
        return reservation_view(ar, self.manager)

    def op_resquery(self, caller: Caller, args: wire.Arguments) -> dict:
        """RESQUERY (seed 003): the request's shape from its start (the
        earliest start) and end (start + TimeNeeded); the ranges of start
        times up to ``last_start`` at which it would be granted now."""
        request = wire.reserve_request(args)
        last_start = args.time("last_start", "TimeSpec", True)
        args.done()
        ranges = self.manager.start_ranges(caller, request, last_start)
        answer = {"user": caller.user, "ranges": [list(r) for r in ranges]}
        if not ranges:
            answer["why"] = (f"no start between {max(request.start, args.now)} and {last_start} "
                             f"is free for {request.nodes} node(s) for {request.duration} s")
        return answer

    def op_query(self, caller: Caller, args: wire.Arguments) -> dict:
        """QUERY (seed 003): when a job of the request's shape would start
        if submitted now (its start is now, its end now + TimeNeeded)."""
        request = wire.reserve_request(args)
        args.done()
        start, how = self.manager.job_start(caller, request)
        if start is None:
            raise NoCapacity(f"no start can be estimated: jobs without a run time limit hold "
                             f"too many of the nodes ({how})")
        return {"user": caller.user, "start": start, "how": how}

    def _keys(self) -> reskey.ResKeys:
        """The ResKey issuer, asked before a reservation is made for one."""
        if self.reskeys is None:
            raise ReservationError("this plus_scheduler issues no ResKeys")
        return self.reskeys

    def _with_reskey(self, ar: Reservation, keys: reskey.ResKeys) -> dict:
        """The view of a reservation SETRES or RESQANDSET made, with its
        ResKey: the only time the key is sent."""
        return {**reservation_view(ar, self.manager),
                "reskey": keys.issue(ar.id, ar.owner, ar.submission_time)}

    def op_setres(self, caller: Caller, args: wire.Arguments) -> dict:
        """SETRES (seed 003): reserve at the request's start; the ResKey once
        (again to the same request retried with its idempotency key). With
        ``transactional``, the AR waits for plus_commit (a co-allocation's
        prepare)."""
        request = wire.reserve_request(args)
        transactional = args.flag("transactional")
        key = args.checked("idempotency_key", parse_idempotency_key)
        args.done()
        keys = self._keys()
        ar = self.manager.reserve(caller, request, transactional, key)
        self.on_change([ar])
        return self._with_reskey(ar, keys)

    def op_resqandset(self, caller: Caller, args: wire.Arguments) -> dict:
        """RESQANDSET (seed 003): RESQUERY, then reserve at the earliest
        start found; the ResKey once."""
        request = wire.reserve_request(args)
        last_start = args.time("last_start", "TimeSpec", True)
        args.done()
        keys = self._keys()
        ar = self.manager.reserve_earliest(caller, request, last_start)
        self.on_change([ar])
        return self._with_reskey(ar, keys)

    def op_claim(self, caller: Caller, args: wire.Arguments) -> dict:
        """A ResKey holder acts on the AR as its owner (overlay.reskey):
        submit a job into it, cancel it, or change it. A claim that is not
        signed with the AR's key, is out of the window, or was seen before
        is refused and logged."""
        claim = reskey.Claim(wire.ar_id(args, required=True), args.text("nonce", True),
                             args.integer("timestamp", 0, 2 ** 40, True), args.text("operation", True),
                             args.mapping("payload"), args.text("hmac", True))
        args.done()
        try:
            reskey.check_form(claim)
        except ValueError as exc:
            raise InvalidRequest(str(exc)) from None
        (ar,) = self.manager.status(ar_id=claim.ar_id)
        now = self.manager.now()
        try:
            if self.reskeys is None:
                raise reskey.ClaimRefused("this plus_scheduler issues no ResKeys")
            self.reskeys.check(claim, ar.owner, ar.submission_time, now)
            seen = self.manager.store.accept_claim(claim.nonce, ar.id, claim.timestamp,
                                                   now - reskey.CLAIM_WINDOW)
            if seen == ar.id:
                raise reskey.ClaimRefused(f"the claim on AR {ar.id} was already used (its nonce "
                                          "was seen before): a replay")
            if seen is not None:
                raise reskey.ClaimRefused(f"the claim's nonce was used before, by a claim on AR "
                                          f"{seen}: sign each claim with a fresh nonce")
        except reskey.ClaimRefused as exc:
            self.client_log.warning((caller.user, "claim refused"), "claim refused: %s %s by %s: "
                                    "%s", claim.operation, ar.id, caller.user, exc)
            raise PermissionDenied(str(exc)) from None
        done = self._claimed(ar, claim)
        self.client_log.info((caller.user, "claim carried out"), "claim carried out: %s AR %d "
                             "(owner %s) by %s", claim.operation, ar.id, ar.owner, caller.user)
        return done

    def _claimed(self, ar: Reservation, claim: reskey.Claim) -> dict:
        """Run a claim's operation as the AR's owner, with an owner's rights
        only (a manager's AR gives its key holder no manager's rights)."""
        owner = owner_of(ar)
        payload = wire.Arguments(f"claim {claim.operation}", claim.payload, self.manager.now())
        if claim.operation == "submit":
            self._may_run_jobs(owner)
            if ar.state == State.PENDING:
                raise InvalidRequest(f"AR {ar.id} is pending: it takes jobs once committed")
            if ar.state in FINISHED_STATES:
                raise InvalidRequest(f"AR {ar.id} has ended ({ar.state.name.lower()}): it takes "
                                     "no jobs")
            return self.manager.backend.submit_claimed(ar, claim.payload)
        if claim.operation == "cancel":
            payload.done()
            changed = self.manager.cancel(owner, ar.id, None, False)
        else:
            changed = [self._modify(owner, ar.id, payload)]
        self.on_change(changed)
        return reservation_view(changed[0], self.manager)

    def _may_run_jobs(self, owner: Caller) -> None:
        """Refuse a job for root, a system account or an unknown user: no
        client ever starts one as such, on any backend."""
        if owner.uid < 0:
            raise PermissionDenied(f"user {owner.user} is not known on this host: no job runs "
                                   "as them")
        if system_account(owner.uid, self.manager.config.min_uid):
            raise PermissionDenied(f"{owner.user} (uid {owner.uid}) is root or a system account "
                                   f"(below min_uid {self.manager.config.min_uid}): no job runs as "
                                   "one for a client")

    def op_modify(self, caller: Caller, args: wire.Arguments) -> dict:
        ar = self._modify(caller, wire.ar_id(args, required=True), args)
        self.on_change([ar])
        return reservation_view(ar, self.manager)

    def _modify(self, caller: Caller, ar_id: int, args: wire.Arguments) -> Reservation:
        start, end = args.time("start", "-s"), args.time("end", "-e")
        duration = args.integer("duration", 1, limits.MAX_DURATION, what="-D")
        nodes, users = args.count("nodes", "-n"), wire.users(args)
        transactional = args.flag("transactional")
        args.done()
        return self.manager.modify(caller, ar_id, start=start, end=end, duration=duration,
                                   nodes=nodes, users=users, transactional=transactional)

    def _select_op(self, caller: Caller, args: wire.Arguments, operation: Callable) -> list[dict]:
        ar_id, owner, transactional = wire.ar_id(args), wire.owner(args), args.flag("transactional")
        args.done()
        ars = operation(caller, ar_id, owner, transactional)
        self.on_change(ars)
        return self._views(ars)

    def op_cancel(self, caller: Caller, args: wire.Arguments) -> list[dict]:
        return self._select_op(caller, args, self.manager.cancel)

    def op_destroy(self, caller: Caller, args: wire.Arguments) -> list[dict]:
        return self._select_op(caller, args, self.manager.destroy)

    def _settle(self, caller: Caller, args: wire.Arguments, operation: Callable) -> dict:
        ar_id = wire.ar_id(args, required=True)
        args.done()
        ar = operation(caller, ar_id)
        self.on_change([ar])
        return reservation_view(ar, self.manager)

    def op_commit(self, caller: Caller, args: wire.Arguments) -> dict:
        return self._settle(caller, args, self.manager.commit)

    def op_abort(self, caller: Caller, args: wire.Arguments) -> dict:
        return self._settle(caller, args, self.manager.abort)

    def op_status(self, caller: Caller, args: wire.Arguments) -> list | dict:
        """Full views, or with ``summary`` only the table's columns as lists
        (a tenth of the bytes: listings of many ARs stay fast). With
        ``limit``, one page: ``{"total", "items"}`` from ``offset``, so that
        no answer is unbounded (the HTTP API always asks so)."""
        limit = args.integer("limit", 1, limits.MAX_PAGE, what="limit")
        offset = args.integer("offset", 0, limits.MAX_COUNT, what="offset") or 0
        ar_id, owner = wire.ar_id(args), wire.owner(args)
        start, end = args.time("start", "-s"), args.time("end", "-e")
        expired = args.integer("expired", 0, limits.MAX_COUNT, what="-ne") or 0
        summary, with_nodes = args.flag("summary"), args.flag("nodes")
        messages = args.flag("messages")
        key = args.checked("idempotency_key", parse_idempotency_key)
        owners = args.names("owners", "-u", wire.owner_names)
        refs = args.names("refs", "-ar", wire.ar_references)
        args.done()
        if key is not None:      # the caller's AR made with that key, if any
            ar_id = self.manager.by_key.get((caller.user, key))
            if ar_id is None:
                return []
        ars = self.manager.status(ar_id=ar_id, owner=owner, start=start, end=end, expired=expired,
                                  owners=owners, refs=refs,
                                  lingering=self.manager.backend.lingering())
        total = len(ars)
        if limit is not None:
            ars = ars[offset:offset + limit]
        shown = summary_rows(ars, with_nodes, messages) if summary else self._views(ars)
        return shown if limit is None else {"total": total, "items": shown}

    def op_calendar(self, caller: Caller, args: wire.Arguments) -> dict:
        """The calendar page's window [start, end): the nodes, the ARs there
        as plus_status's summary rows with their nodes, and the backend's
        jobs there. The page polls with the ``revision`` it has: while no AR
        has changed, the answer has only the jobs."""
        start, end = args.time("start", "start", True), args.time("end", "end", True)
        since = args.integer("since", 0, 2**62, what="since")
        args.done()
        if not start < end <= start + limits.MAX_CALENDAR_SPAN:
            raise InvalidRequest(f"the window must end after it starts and span at most "
                                 f"{limits.MAX_CALENDAR_SPAN // 86400} days")
        jobs = [[bar.id, bar.owner, bar.kind, bar.start, end if bar.end is None else bar.end,
                 ",".join(bar.nodes)] for bar in self.manager.backend.job_bars(args.now)
                if bar.start < end and (bar.end is None or bar.end > start)]
        revision = self.manager.revision
        if since == revision:
            return {"revision": revision, "unchanged": True, "jobs": jobs}
        ars = self.manager.status(start=start, end=end)
        if len(ars) > limits.MAX_WINDOW_ARS:
            raise InvalidRequest(f"the window holds {len(ars)} ARs, more than "
                                 f"{limits.MAX_WINDOW_ARS}: ask for a shorter one")
        return {"revision": revision, "now": args.now, "nodes": list(self.manager.capacity()),
                "ars": summary_rows(ars, True, False), "jobs": jobs}

    def op_usage(self, caller: Caller, args: wire.Arguments) -> dict:
        """Reserved and used node-hours of [start, end) from the reporting
        file, as spans [owner, from, to, nodes]: each AR's hold on its hosts
        (plus_account's figures), and each job in an AR (its acct record)."""
        start, end = args.time("start", "-s", True), args.time("end", "-e", True)
        owner = wire.owner(args)
        args.done()
        end = min(end, args.now)
        if end <= start:
            raise InvalidRequest("the period's end must be later than its start")
        owners = {owner} if owner else set()
        ars, jobs = self.reported.current()
        answer = {"reserved": [[ar.owner, begin, finish, len(hosts)]
                               for ar, begin, finish, hosts in used(ars, start, end, owners, set())],
                  "used": [[job.owner, max(job.start, start), min(job.end, end), 1]
                           for job in jobs if job.start < end and job.end > start and
                           (not owners or job.owner in owners)]}
        spans = len(answer["reserved"]) + len(answer["used"])
        if spans > limits.MAX_SPANS:
            raise InvalidRequest(f"the period holds {spans} spans, more than {limits.MAX_SPANS}: "
                                 "ask for a shorter one, or for one owner")
        return answer

    def op_availnodes(self, caller: Caller, args: wire.Arguments) -> dict:
        start, end = args.time("start", "-s", True), args.time("end", "-e", True)
        args.done()
        nodes = self.manager.available_nodes(start, end)
        return {"start": start, "end": end, "count": len(nodes), "nodes": nodes}

    def op_accounting(self, caller: Caller, args: wire.Arguments) -> dict:
        """plus_account -l's records (for the HTTP API): each AR's use of its
        hosts within [start, end), from the reporting file, a page of
        ``limit`` from ``offset``; malformed records are skipped, as
        plus_account skips them."""
        limit = args.integer("limit", 1, limits.MAX_PAGE, what="limit") or limits.PAGE
        offset = args.integer("offset", 0, limits.MAX_COUNT, what="offset") or 0
        start = args.time("start", "-s") or 0
        end = min(args.time("end", "-e") or args.now, args.now)
        owners, nodes = args.strings("owners"), args.strings("nodes")
        args.done()
        if end <= start:
            raise InvalidRequest("the period's end must be later than its start")
        ars, _ = self.reported.current()
        found = list(used(ars, start, end, set(owners or ()), set(nodes or ())))
        return {"total": len(found), "items": [
            {"id": ar.id, "owner": ar.owner, "name": ar.name, "state": ar.last_state,
             "from": begin, "to": finish, "seconds": finish - begin,
             "node_seconds": (finish - begin) * len(hosts),
             "slot_seconds": (finish - begin) * sum(hosts.values()), "hosts": hosts}
            for ar, begin, finish, hosts in found[offset:offset + limit]]}

    def op_shutdown(self, caller: Caller, args: wire.Arguments) -> dict:
        args.done()
        if caller.uid != self.daemon_uid and not caller.is_manager:
            raise PermissionDenied("only the owner of plus_scheduler or a manager may stop it")
        threading.Timer(0.2, self.on_shutdown).start()  # after this reply is sent
        return {"stopping": os.getpid()}


def _reply_to(service: Service, sock: socket.socket, peer: connections.Peer,
              deadline: float, bounds: connections.Limits) -> None:
    """Read one request by ``deadline``, run it, send the reply."""
    try:
        message = protocol.receive_message(sock, bounds.message_bytes, deadline)
        caller = service.caller_for(peer.uid, peer.gid, message)
        if message.get("token") is None:
            data = service.handle(caller, message.get("op"), message.get("args") or {})
        else:       # an HTTP user's: counted by the user the token proves
            with service.turns.turn(caller.user):
                data = service.handle(caller, message.get("op"), message.get("args") or {})
        reply = {"ok": True, "data": data}
    except ReservationError as exc:
        reply = {"ok": False, "error": str(exc), "status": exc.exit_status, "kind": _kind(exc)}
    except TokenRefused as exc:
        reply = {"ok": False, "error": str(exc), "status": protocol.EXIT_REFUSED, "kind": "token"}
    except connections.Busy as exc:
        reply = {"ok": False, "error": str(exc), "status": protocol.EXIT_REFUSED, "kind": "busy"}
    except (RequestError, TimeSpecError) as exc:
        reply = {"ok": False, "error": str(exc), "status": protocol.EXIT_USAGE, "kind": "invalid"}
    except (protocol.TooLarge, protocol.TooSlow) as exc:
        _FAILURES.warning((peer.uid, type(exc)), "request from uid %d refused: %s (limit %s)",
                          peer.uid, exc, f"{bounds.message_bytes} bytes"
                          if isinstance(exc, protocol.TooLarge)
                          else f"request_timeout {bounds.request_timeout:g} s")
        reply = {"ok": False, "error": f"bad request: {exc}", "status": protocol.EXIT_USAGE,
                 "kind": "invalid"}
    except (wire.BadArguments, protocol.ProtocolError) as exc:
        reply = {"ok": False, "error": f"bad request: {exc}", "status": protocol.EXIT_USAGE,
                 "kind": "invalid"}
    except Exception as exc:
        _FAILURES.log(logging.ERROR, (peer.uid, "failed"), "request from uid %d failed",
                      peer.uid, exc_info=True)
        reply = {"ok": False, "error": f"internal error in plus_scheduler ({type(exc).__name__}); "
                 "its log has the details", "status": protocol.EXIT_REFUSED, "kind": "internal"}
    sock.settimeout(_REPLY_TIMEOUT)  # a client that never reads its reply frees the thread
    try:
        protocol.send_message(sock, reply)
    except OSError:
        pass


_PEER_ONLY = frozenset({"token", "revoke_tokens", "shutdown", "web_link"})
"""Operations whose caller must be the socket's peer: a token may not mint
tokens (its life would never end) nor stop the daemon."""

_KINDS = ((PermissionDenied, "forbidden"), (LimitExceeded, "limit"),
          (UnknownReservation, "unknown"), (InvalidRequest, "invalid"),
          (StoreUnavailable, "unavailable"), (NoCapacity, "capacity"), (Conflict, "capacity"))


def _kind(exc: ReservationError) -> str:
    """What kind of refusal: the HTTP API answers each with its status."""
    return next((kind for error, kind in _KINDS if isinstance(exc, error)), "conflict")


class PidLock:
    """One daemon per state directory: an flock'ed pid file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.handle = open(path, "a+")
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.handle.seek(0)
            other = self.handle.read().strip() or "?"
            self.handle.close()
            raise ConfigError(f"plus_scheduler is already running (pid {other}) for "
                              f"{os.path.dirname(path)}") from None
        self.handle.seek(0)
        self.handle.truncate()
        self.handle.write(f"{os.getpid()}\n")
        self.handle.flush()

    def release(self) -> None:
        self.handle.close()


class Daemon:
    """Everything plus_scheduler runs, started and stopped as one."""

    def __init__(self, config: Config, overrides: dict[str, Any] | None = None) -> None:
        """``overrides`` (the command line's) win over plus.yaml at every reading."""
        self.config = config
        self.overrides = dict(overrides or {})
        self._reload_lock = threading.Lock()
        os.makedirs(config.state_path, mode=0o755, exist_ok=True)
        self.pid_lock = PidLock(os.path.join(config.state_path, "plus_scheduler.pid"))
        self.backend: Backend | None = None
        self.store: Store | None = None
        self.lease: StoreLease | None = None
        try:
            self.pm = plugins.plugin_manager(config.plugins)
            claimed = plugins.configure(self.pm, config)
            refuse_truncated(config.store_url)
            self.store = Store(config.store_url)
            self.lease = StoreLease(config.store_url, self.store.engine)
            self.lease.acquire()
            self.backend = plugins.build_backend(self.pm, config.backend, config,
                                                 config.backend_options(), claimed)
            self.manager = Manager(config, self.store, self.backend, self.pm,
                                   ReportingWriter(config.accounting_path))
            self.lifecycle = Lifecycle(self.manager, config.reconcile_interval,
                                       before_pass=self._check_lease)
            secret = statefile.secret_key(os.path.join(config.state_path, "reskey.key"),
                                          "ResKey secret")
            provider = oidc.Provider(config.http.oidc) if config.http.oidc else None
            self.service = Service(self.manager, self.lifecycle.notice, self.stop,
                                   Tokens(config.state_path), reskey.ResKeys(secret), provider)
            self.http = Companion(config.http, config.socket_path)
            self.http.listen()
        except Exception:
            if self.backend is not None:
                self.backend.close()
            if self.lease is not None:
                self.lease.release()
            if self.store is not None:
                self.store.close()
            self.pid_lock.release()
            raise
        self.server: connections.BoundedServer | None = None

    def serve(self) -> None:
        path = self.config.socket_path
        if os.path.exists(path):
            os.unlink(path)  # stale: the pid lock proves no daemon owns it
        fds = connections.raise_fd_limit()
        bounds = connections.Limits(
            total=min(self.config.max_connections, max(16, fds - connections.FDS_KEPT)),
            per_user=self.config.max_connections_per_user,
            request_timeout=self.config.request_timeout, message_bytes=limits.MAX_MESSAGE)
        if bounds.total < self.config.max_connections:
            log.warning("max_connections lowered from %d to %d: the open file limit is %d",
                        self.config.max_connections, bounds.total, fds)
        self.server = connections.BoundedServer(
            path, lambda sock, peer, deadline: _reply_to(self.service, sock, peer, deadline, bounds),
            bounds, exempt=lambda uid: uid in (0, self.service.daemon_uid),
            forwarder=lambda uid: uid == self.http.uid)
        os.chmod(path, 0o666)
        self.lifecycle.start()
        self.backend.start()
        self.http.start()
        log.info("plus_scheduler %d serving %s (backend %s, store %s)", os.getpid(), path,
                 self.config.backend, shown_url(self.config.store_url))
        # What the daemon loaded (every stored AR, its modules) stays for its
        # life: out of the cyclic collector's reach, a full collection no
        # longer walks it. At 100,000 ARs one took about 250 ms, and the
        # request in flight waited for it (after a listing of them all).
        gc.freeze()
        try:
            self.server.serve_forever(poll_interval=0.5)
        finally:
            self._cleanup()

    def stop(self, *_ignored) -> None:
        """Safe from a signal handler: shutdown() waits for serve_forever,
        which runs in the main thread, so it must be called from another."""
        if self.server is not None:
            threading.Thread(target=self.server.shutdown, daemon=True).start()

    def hang_up(self, *_ignored) -> None:
        """SIGHUP, as sites expect of their daemons: re-read plus.yaml in
        a thread of its own (the signal handler must not wait)."""
        threading.Thread(target=self.reload, name="plus-reload", daemon=True).start()

    def reload(self) -> None:
        """Re-read plus.yaml: keys read at each request change now, the
        others are named in the log and wait for a restart. A file that
        cannot be used changes nothing, and one line says why. Nothing is
        stored, so the running configuration changes at once, between two
        requests (under the manager's lock)."""
        with self._reload_lock:
            path = self.config.path
            try:
                read = config_module.load(path, self.overrides)
                changes = reconfigure.compare(self.config, read)
                config = reconfigure.merged(self.config, read)
                pm = self._configured_plugins(config) if changes.sections else None
            except Exception as exc:  # a plugin's check may fail in any way
                log.error("SIGHUP: %s not re-read, the running configuration stays: %s",
                          path, exc if str(exc) else type(exc).__name__)
                return
            with self.manager.lock:
                reconfigure.apply(self.config, config)
                if pm is not None:
                    replaced, self.pm = self.pm, pm
                    self.manager.pm = pm
            if pm is not None:
                replaced.hook.plus_unconfigure()
            if changes.retiming:
                self.lifecycle.look_at_all()
            if changes.live or changes.sections:
                log.info("SIGHUP: %s re-read; in effect now: %s", path,
                         reconfigure.described(changes))
            if changes.restart:
                log.warning("SIGHUP: %s changes %s: in effect only when plus_scheduler "
                            "restarts (until then the running values stay)", path,
                            ", ".join(changes.restart))
            if not changes:
                log.info("SIGHUP: %s re-read; nothing changed", path)

    def _configured_plugins(self, config: Config) -> pluggy.PluginManager:
        """A fresh plugin manager configured with ``config`` (every plugin
        checks its section anew); raises as at the start."""
        pm = plugins.plugin_manager(config.plugins)
        plugins.check_sections(pm, config, plugins.configure(pm, config))
        return pm

    def _cleanup(self) -> None:
        self.http.stop()
        self.lifecycle.stop()
        if self.server is not None:
            self.server.server_close()
        try:
            os.unlink(self.config.socket_path)
        except FileNotFoundError:
            pass
        self.backend.close()
        self.lease.release()
        self.store.close()
        self.pid_lock.release()
        log.info("plus_scheduler stopped")

    def _check_lease(self) -> None:
        """Before each pass: stop rather than share the store with another daemon."""
        try:
            self.lease.check()
        except LeaseLost as exc:
            log.critical("%s; stopping, so that two daemons never act on one store", exc)
            self.stop()
            raise


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="plus_scheduler", allow_abbrev=False,
        description="The PluS reservation daemon. Commands find it through PLUS_CONF "
                    f"(default {protocol.DEFAULT_CONF}).")
    parser.add_argument("-t", metavar="target", help="backend to enforce reservations on "
                        "(native, sge, torque, ...); overrides 'backend'")
    parser.add_argument("-a", metavar="algo", help="node allocation order: Sort (the "
                        "configuration's node_order, the default) or a comma list of "
                        f"{', '.join(NODE_SORT_KEYS)}")
    parser.add_argument("-c", metavar="conffile", help="configuration file (default: $PLUS_CONF "
                        f"or {protocol.DEFAULT_CONF}); point PLUS_CONF at it for the commands")
    parser.add_argument("-r", metavar="rsvFilePath", help="reservation store: a SQLite file "
                        "or a database URL; overrides 'store'")
    parser.add_argument("-ne", metavar="maxExpired", type=int,
                        help="keep at most this many expired reservations; overrides 'max_expired'")
    parser.add_argument("-sgeq", metavar="qNames", help="reserve only nodes of these queues "
                        "(comma list); overrides 'sge_queues'")
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    return parser


def _overrides(args: argparse.Namespace) -> dict:
    overrides: dict[str, Any] = {}
    if args.t:
        overrides["backend"] = args.t
    if args.r:
        overrides["store"] = args.r if "://" in args.r else os.path.abspath(args.r)
    if args.ne is not None:
        overrides["max_expired"] = args.ne
    if args.sgeq:
        overrides["sge_queues"] = list(parse_name_list(args.sgeq, "-sgeq"))
    if args.a and args.a != "Sort":
        overrides["node_order"] = [key.strip() for key in args.a.split(",")]
    return overrides


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    level = getattr(logging, args.log_level.upper(), logging.INFO)
    logging.basicConfig(level=level, format=logsetup.FORMAT)
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
    path = args.c or protocol.conf_path()
    try:
        overrides = _overrides(args)
        config = config_module.load(path, overrides)
        logsetup.configure(config.log, config.log_path, config.log_size, config.log_keep,
                           level)
        daemon = Daemon(config, overrides)
    except (ConfigError, RequestError, plugins.PluginError, ValueError) as exc:
        print(f"plus_scheduler: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # a store or backend that cannot be reached
        print(f"plus_scheduler: cannot start: {exc}", file=sys.stderr)
        return 1
    sys.setswitchinterval(SWITCH_INTERVAL)
    signal.signal(signal.SIGTERM, daemon.stop)
    signal.signal(signal.SIGINT, daemon.stop)
    signal.signal(signal.SIGHUP, daemon.hang_up)
    daemon.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
