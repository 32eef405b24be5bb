"""What plus_coreserve, plus_costatus and plus_cocancel share: the sites
file and log options, the coordinator they make, how a co-allocation is
printed. Not thin clients: they keep a log in a database (SQLAlchemy)."""

from __future__ import annotations

import os
import signal

from sqlalchemy.exc import ArgumentError

from overlay.cli import common
from overlay.coalloc import sites as sites_file
from overlay.coalloc.coordinator import CoallocError, Coordinator
from overlay.coalloc.log import CoAllocation, Log
from overlay.language.limits import shown
from overlay.language.request import RequestError
from overlay.language.timespec import format_time
from overlay.network import ggf
from overlay.persistence.store import StoreUnavailable
from overlay.wire.protocol import EXIT_USAGE

DEFAULT_SITES = "~/.plus/sites.yaml"
DEFAULT_LOG = "~/.plus/coalloc.db"
KILL_AFTER = "PLUS_COALLOC_KILL_AFTER"
"""Fault tests: the coordinator kills itself (SIGKILL) after this many steps."""


def common_options(p: common.Parser) -> None:
    p.add_argument("--sites", metavar="FILE", default=DEFAULT_SITES,
                   help=f"the sites file: url, token_file, ca_cert, user per site "
                        f"(default {DEFAULT_SITES})")
    p.add_argument("--log", metavar="URL", default=DEFAULT_LOG,
                   help=f"the coordinator's log: a SQLite file or a store URL (default "
                        f"{DEFAULT_LOG})")
    p.add_argument("--timeout", type=common.count_arg("--timeout", "seconds"), default=10,
                   help="seconds a site may take to answer (default 10)")
    p.add_argument("--skew", type=common.count_arg("--skew", "seconds", least=0), default=30,
                   help="the most the sites' clocks may differ from this host's: no window "
                        "starts sooner than that from now (default 30)")
    p.add_argument("--json", action="store_true", help="print JSON, for scripts")


def coordinator(prog: str, args) -> Coordinator:
    try:
        sites = sites_file.load(args.sites)
    except RequestError as exc:
        common.fail(prog, str(exc), EXIT_USAGE)
    kill_after = int(os.environ.get(KILL_AFTER, "0") or 0)

    def on_step(step: int) -> None:
        if step == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
    return Coordinator(sites, open_log(prog, args.log), timeout=args.timeout, skew=args.skew,
                       attempts=getattr(args, "attempts", 5), on_step=on_step)


def open_log(prog: str, given: str) -> Log:
    """The log --log names (a file, or a store URL), or one line naming
    what cannot be used and why."""
    url = given if "://" in given else f"sqlite:///{os.path.expanduser(given)}"
    try:
        return Log(url)
    except OSError as exc:
        common.fail(prog, f"--log: {shown(exc.filename or given)}: {exc.strerror}; the log is a "
                          "file of yours, in a folder you may write", EXIT_USAGE)
    except StoreUnavailable as exc:
        common.fail(prog, f"--log: {exc}", EXIT_USAGE)
    except ArgumentError as exc:
        common.fail(prog, f"--log: not a SQLite file or a store URL ({shown(str(exc))})",
                    EXIT_USAGE)


def one_parser(prog: str, description: str, optional: bool = False) -> common.Parser:
    """The parser of a command naming one co-allocation (or, ``optional``, maybe none)."""
    p = common.Parser(prog, description)
    p.add_argument("id", nargs="?" if optional else None, help="the co-allocation's id (C...)")
    common_options(p)
    return p


def show(args, coalloc: CoAllocation, reskeys: bool = False) -> None:
    """Print the co-allocation; its ResKeys only with ``reskeys``: once,
    by the command that made it."""
    if args.json:
        common.print_json(coalloc.view(reskeys))
        return
    window = "" if coalloc.start is None else \
        f": {format_time(coalloc.start)} to {format_time(coalloc.start + coalloc.duration)}"
    print(f"Co-allocation {coalloc.id} is {coalloc.state}{window}"
          + (f" ({coalloc.message})" if coalloc.message else ""))
    for name, record in sorted(coalloc.sites.items()):
        held = f"R{record.ar_id}" if record.ar_id else "-"
        key = f" {record.reskey}" if reskeys and record.reskey else ""
        print(f"  {name:<12} {held:<10} {record.state:<10}{key}".rstrip())


def site_request(p: common.Parser, text: str) -> tuple[str, str]:
    name, colon, resources = text.partition(":")
    if not colon or not name or not resources:
        p.error(f"--site: expected NAME:RESOURCES (A:nodes=4;ppn=8), got '{shown(text)}'")
    try:
        ggf.resource_list(resources)
    except RequestError as exc:
        p.error(f"--site {shown(name)}: {exc}")
    return name, resources


def acted(prog: str, args, act, reskeys: bool = False) -> int:
    """Run ``act`` on the command's coordinator, print the co-allocation it
    answers (with its ResKeys if it was just made); a refusal is one line
    with its exit status."""
    try:
        coalloc = act(coordinator(prog, args))
    except CoallocError as exc:
        common.fail(prog, str(exc), exc.status)
    show(args, coalloc, reskeys)
    return 0
