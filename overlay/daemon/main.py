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
import signal
import socket
import sys
import threading
import time
from typing import Any

import pluggy

from overlay.cmdserver.host import CommandServer
from overlay.contract import plugins
from overlay.contract.backend import Backend
from overlay.daemon import config as config_module
from overlay.daemon import connections, reconfigure, status
from overlay.daemon.config import Config, ConfigError
from overlay.daemon.services.base import CLIENT_LINES
from overlay.daemon.services.service import Service
from overlay.events.delivery import Deliverer
from overlay.events.watch import HeadWatch
from overlay.kit import statefile
from overlay.language import limits
from overlay.language.model import (
    InvalidRequest,
    LimitExceeded,
    NoCapacity,
    PermissionDenied,
    ReservationError,
    UnknownJob,
    UnknownReservation,
    Unsupported,
)
from overlay.language.request import RequestError, parse_name_list
from overlay.language.timespec import TimeSpecError
from overlay.log import logsetup
from overlay.log.ratelog import RateLimitedLog
from overlay.network import oidc, reskey
from overlay.network.http.companion import Companion
from overlay.network.tokens import TokenRefused, Tokens
from overlay.persistence.events import EventLog
from overlay.persistence.feed import ChangeFeed
from overlay.persistence.feedtokens import FeedTokens
from overlay.persistence.members import Members
from overlay.persistence.outbox import Outbox
from overlay.persistence.series import SeriesStore
from overlay.persistence.store import Conflict, Store, StoreUnavailable, refuse_truncated, shown_url
from overlay.persistence.storelease import LeaseLost, StoreLease, describe
from overlay.placement.ordering import NODE_SORT_KEYS
from overlay.reporting.drain import ReportingDrain
from overlay.usecases.lifecycle import Lifecycle
from overlay.usecases.manager import Manager
from overlay.usecases.series import SeriesCases
from overlay.wire import codec, protocol

log = logging.getLogger("plus.daemon")
_REPLY_TIMEOUT = 30.0
"""Seconds a client may take to read its reply."""
SWITCH_INTERVAL = 0.001
"""Seconds a thread holds the interpreter while others wait (Python's
default 5 ms): a short request waiting behind a user's listings of a
thousand ARs waited that long for each of its turns."""
_FAILURES = RateLimitedLog(log, burst=CLIENT_LINES)
_OUTAGE = RateLimitedLog(log, burst=1)


def _reply_to(service: Service, sock: socket.socket, peer: connections.Peer,
              deadline: float, bounds: connections.Limits) -> None:
    """Read one request by ``deadline``, run it, send the reply (counted
    with the time it took, for /metrics)."""
    began, operation = time.perf_counter(), None
    try:
        message = protocol.receive_message(sock, bounds.message_bytes, deadline)
        began, operation = time.perf_counter(), message.get("op")
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
    except (codec.BadArguments, protocol.ProtocolError) as exc:
        reply = {"ok": False, "error": f"bad request: {exc}", "status": protocol.EXIT_USAGE,
                 "kind": "invalid"}
    except Exception as exc:
        _FAILURES.log(logging.ERROR, (peer.uid, "failed"), "request from uid %d failed",
                      peer.uid, exc_info=True)
        reply = {"ok": False, "error": f"internal error in plus_scheduler ({type(exc).__name__}); "
                 "its log has the details", "status": protocol.EXIT_REFUSED, "kind": "internal"}
    service.requests.record(operation, "ok" if reply["ok"] else reply["kind"],
                            time.perf_counter() - began)
    sock.settimeout(_REPLY_TIMEOUT)  # a client that never reads its reply frees the thread
    try:
        protocol.send_message(sock, reply)
    except OSError:
        pass


_KINDS = ((PermissionDenied, "forbidden"), (LimitExceeded, "limit"),
          (UnknownReservation, "unknown"), (UnknownJob, "unknown"), (InvalidRequest, "invalid"),
          (StoreUnavailable, "unavailable"), (NoCapacity, "capacity"), (Conflict, "capacity"),
          (Unsupported, "unsupported"))


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
            if not self.lease.shared:
                self.lease.acquire()            # SQLite: one daemon per store
            self.backend = plugins.build_backend(self.pm, config.backend, config,
                                                 config.backend_options(), claimed)
            self.drain = ReportingDrain(Outbox(self.store.engine, config.store_url),
                                        config.accounting_path, fence=self.lease.holds)
            self.watch = HeadWatch(EventLog(self.store))
            self.deliverer = Deliverer(EventLog(self.store), self.lease.holds,
                                       lambda: self.manager.config.webhook_networks)
            self.manager = Manager(config, self.store, self.backend, self.pm, self._committed)
            self.lifecycle = Lifecycle(self.manager, config.reconcile_interval,
                                       before_pass=self._before_pass)
            self.series = SeriesCases(self.manager, SeriesStore(self.store))
            self.lifecycle.series = self.series
            secret = statefile.secret_key(os.path.join(config.state_path, "reskey.key"),
                                          "ResKey secret")
            provider = oidc.Provider(config.http.oidc) if config.http.oidc else None
            self.members = Members(self.store)
            scrapers = statefile.secret_key(config.http.metrics_token or os.path.join(
                config.state_path, "metrics.token"), "metrics secret (http.metrics_token)")
            self.service = Service(self.manager, self.lifecycle.notice, self.stop,
                                   Tokens(config.state_path), reskey.ResKeys(secret), provider,
                                   daemons=self.daemons, role=self.role, metrics_token=scrapers,
                                   feed_tokens=FeedTokens(self.store),
                                   watch=self.watch, wake_deliveries=self.deliverer.wake,
                                   series=self.series)
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
        self.commands: CommandServer | None = None
        self.feed: ChangeFeed | None = None
        self._leading = False
        self._leadership = threading.Lock()     # taking the lead, and stopping
        self._stopping = threading.Event()
        self.manager.enforcer.fence = self.backend.fence = self.lease.holds
        self.lease.on_lost = self._lost_lead

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
        self.commands = CommandServer(path, bounds.total, bounds.per_user, bounds.request_timeout)
        self.commands.start()
        if not self.lease.shared:
            self._lead()
        else:
            self.feed = ChangeFeed(self.config.store_url, self.store.channel, self._catch_up)
            self.feed.start()
            if self.lease.try_take():
                self._lead()
            else:
                log.info("standby: %s leads; serving users, taking the lead when it goes",
                         describe(self.lease.leader()))
                self.backend.stand_by()
                self.manager.enforcer.stand_by()
                self._start_campaign()
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
        if self.commands is not None:
            self.commands.stop()
        with self._leadership:
            self._stopping.set()
        if self.feed is not None:
            self.feed.stop()
        self.lifecycle.stop()                 # if it ever led
        self.manager.enforcer.stop()
        self.drain.stop()                     # after a last drain, if it leads
        self.deliverer.stop()
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

    def _lead(self) -> None:
        """This daemon leads: the clock, the enforcer and the backend's own work."""
        with self._leadership:
            if self._stopping.is_set():
                return
            self._leading = True
            self.manager.enforcer.lead()          # the first pass wants every AR, and applies it
            self.lifecycle.start()
            self.manager.enforcer.start()         # after it: each AR applied once
            self.drain.start()
            self.deliverer.start()
            self.backend.start()
        self.members.report(True, self.manager.seen_revision, force=True)

    def _start_campaign(self) -> None:
        threading.Thread(target=self._campaign, name="plus-campaign", daemon=True).start()

    def _campaign(self) -> None:
        """A standby takes the lead as soon as the leader's lease is free
        (a store that cannot be reached meanwhile is tried again)."""
        unreachable = False
        while not self._stopping.wait(1.0):
            try:
                taken = self.lease.try_take()
            except Exception as exc:
                if not unreachable:
                    log.warning("standby: cannot reach the store to take the lead (%s); "
                                "trying every second", exc)
                unreachable = True
                continue
            unreachable = False
            if taken:
                log.warning("taking the lead: the store's lease was free")
                self._catch_up()
                self._lead()
                return

    def _lost_lead(self) -> None:
        """The lease's heartbeat found its session gone (the connection
        cut, PostgreSQL restarted, this daemon woken after a stop): lead
        again if the lease is free, else stand by. Meanwhile the fence
        keeps the backend untouched."""
        try:
            self.lease.check()
        except LeaseLost as exc:
            self._stand_down(str(exc))
            return
        except Exception as exc:
            _OUTAGE.warning("lost", "the lead's connection to the store is gone and the store "
                            "cannot be reached (%s); touching nothing until it can", exc)
            return
        log.warning("the lead's connection to the store was lost; the lease was free and is "
                    "taken again")

    def _stand_down(self, why: str) -> None:
        """Another daemon took the lead: stop enforcing, go on serving users."""
        with self._leadership:
            if not self._leading or self._stopping.is_set():
                return
            self._leading = False
            self.lease.stand_down()
            self.lifecycle.pause()
            self.manager.enforcer.stand_by()
            self.backend.stand_by()
        log.warning("standing by: %s; serving users, taking the lead when it goes", why)
        self.members.report(False, self.manager.seen_revision, force=True)
        self._start_campaign()

    def _catch_up(self) -> None:
        """The change feed: take in what other daemons wrote (the leader's
        inventory too), timing it."""
        self.manager.take_published()
        changed = self.manager.catch_up()
        ars = [self.manager.ars[i] for i in changed if i in self.manager.ars]
        self.watch.notify()                       # others' events, for the streams
        if self._leading:
            self.drain.wake()                     # others' records, in the outbox
            self.deliverer.events_committed()
            if ars:
                self.lifecycle.notice(ars)
        self.members.report(self._leading, self.manager.seen_revision)

    def _committed(self) -> None:
        """A change and its records and events were committed here: the
        drain, the streams and the webhooks hear of it."""
        self.drain.wake()
        self.watch.notify()
        self.deliverer.events_committed()

    def daemons(self) -> dict:
        """plus_scheduler --status: who leads, since when, and every daemon
        serving the store with how far it is behind."""
        self.members.report(self._leading, self.manager.seen_revision)
        return {"this": self.members.name, "leading": self._leading, "shared": self.lease.shared,
                "leader": self.lease.leader(), "revision": self.store.revision(),
                "daemons": self.members.listed()}

    def role(self) -> dict:
        """Whether this daemon leads, and whether others share its store:
        what it knows without asking the store (/metrics)."""
        return {"leading": self._leading, "shared": self.lease.shared}

    def _before_pass(self) -> bool:
        """Before each pass: whether this daemon leads now (a pass of one
        that lost the lead is skipped; its heartbeat takes the lease again
        or stands it down), and the reporting outbox drained."""
        if not (self._leading and self.lease.holds()):
            return False
        self.drain.wake()
        return True


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
    parser.add_argument("--status", action="store_true", help="do not start: ask the running "
                        "daemon (PLUS_CONF's) which daemon leads, since when, and how far "
                        "each daemon serving the store is behind it")
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
    if args.status:
        return status.show(args.c or protocol.conf_path())
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
