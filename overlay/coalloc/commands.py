"""plus_coreserve, plus_costatus and plus_cocancel: co-allocations across
sites from the command line (the library: overlay.coalloc.coordinator).
Not thin clients: they keep a log in a database (SQLAlchemy)."""

from __future__ import annotations

import os
import signal
import sys
import time

from overlay import ggf
from overlay.cli import common
from overlay.coalloc import sites as sites_file
from overlay.coalloc.coordinator import CoallocError, Coordinator
from overlay.coalloc.log import CoAllocation, Log
from overlay.limits import shown
from overlay.protocol import EXIT_USAGE
from overlay.request import RequestError
from overlay.timespec import format_time

DEFAULT_SITES = "~/.plus/sites.yaml"
DEFAULT_LOG = "~/.plus/coalloc.db"
WEEK = 7 * 86400
KILL_AFTER = "PLUS_COALLOC_KILL_AFTER"
"""Fault tests: the coordinator kills itself (SIGKILL) after this many steps."""


def _common_options(p: common.Parser) -> None:
    p.add_argument("--sites", metavar="FILE", default=DEFAULT_SITES,
                   help=f"the sites file: url, token_file, ca_cert, user per site "
                        f"(default {DEFAULT_SITES})")
    p.add_argument("--log", metavar="URL", default=DEFAULT_LOG,
                   help=f"the coordinator's log: a SQLite file or a store URL (default "
                        f"{DEFAULT_LOG})")
    p.add_argument("--timeout", type=common.count_arg("--timeout", "seconds"), default=10,
                   help="seconds a site may take to answer (default 10)")
    p.add_argument("--json", action="store_true", help="print JSON, for scripts")


def _coordinator(prog: str, args) -> Coordinator:
    url = args.log if "://" in args.log else f"sqlite:///{os.path.expanduser(args.log)}"
    try:
        sites = sites_file.load(args.sites)
    except RequestError as exc:
        common.fail(prog, str(exc), EXIT_USAGE)
    kill_after = int(os.environ.get(KILL_AFTER, "0") or 0)

    def on_step(step: int) -> None:
        if step == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
    return Coordinator(sites, Log(url), timeout=args.timeout,
                       attempts=getattr(args, "attempts", 5), on_step=on_step)


def _print(args, coalloc: CoAllocation) -> None:
    if args.json:
        common.print_json(coalloc.view())
        return
    window = "" if coalloc.start is None else \
        f": {format_time(coalloc.start)} to {format_time(coalloc.start + coalloc.duration)}"
    print(f"Co-allocation {coalloc.id} is {coalloc.state}{window}"
          + (f" ({coalloc.message})" if coalloc.message else ""))
    for name, record in sorted(coalloc.sites.items()):
        held = f"R{record.ar_id}" if record.ar_id else "-"
        print(f"  {name:<12} {held:<10} {record.state:<10} {record.reskey or ''}")


def _site_request(p: common.Parser, text: str) -> tuple[str, str]:
    name, colon, resources = text.partition(":")
    if not colon or not name or not resources:
        p.error(f"--site: expected NAME:RESOURCES (A:nodes=4;ppn=8), got '{shown(text)}'")
    try:
        ggf.resource_list(resources)
    except RequestError as exc:
        p.error(f"--site {shown(name)}: {exc}")
    return name, resources


def coreserve_parser() -> common.Parser:
    p = common.Parser("plus_coreserve", "Reserve at several sites for one common window, or "
                      "nowhere: query every site, prepare a pending reservation at each, then "
                      "commit all or abort all, each step logged first so that a coordinator "
                      "killed at any point finishes (or undoes) its work with --recover.")
    p.add_argument("-D", metavar="duration", type=common.duration_arg("-D"),
                   help="the window's length: 2h, 90m, 1:30:00")
    p.add_argument("-s", metavar="earliest", type=common.time_arg("-s"),
                   help="the earliest start (default now)")
    p.add_argument("-E", metavar="latest", type=common.time_arg("-E"),
                   help="the latest end (default a week after the earliest start)")
    p.add_argument("--site", action="append", metavar="NAME:RESOURCES",
                   help="a site of the sites file and what to reserve there, as a ResourceList "
                        "(nodes=4;ppn=8); give one per site")
    p.add_argument("--attempts", type=common.count_arg("--attempts", "attempts"), default=5,
                   help="common starts tried in turn when a site refuses one (default 5)")
    p.add_argument("--recover", action="store_true",
                   help="finish every co-allocation a killed coordinator left: commit those "
                        "decided, abort the others")
    _common_options(p)
    return p


@common.command("plus_coreserve")
def coreserve(argv: list[str] | None = None) -> int:
    p = coreserve_parser()
    args = p.parse_args(argv)
    if args.recover:
        if args.site or args.D:
            p.error("--recover takes no --site and no -D")
        coordinator, status = _coordinator(p.prog, args), 0
        for coalloc_id in coordinator.log.unfinished():
            try:
                _print(args, coordinator.recover(coalloc_id))
            except CoallocError as exc:
                print(f"{p.prog}: {exc}", file=sys.stderr)
                status = max(status, exc.status)
        return status
    if not args.D or len(args.site) < 1:
        p.error("give -D duration and at least one --site NAME:RESOURCES")
    requests = dict(_site_request(p, text) for text in args.site)
    if len(requests) != len(args.site):
        p.error("--site: each site may be named once")
    earliest = args.s if args.s is not None else int(time.time())
    latest_end = args.E if args.E is not None else earliest + WEEK + args.D
    if latest_end - args.D < earliest:
        p.error("-E: the latest end leaves no room for -D after the earliest start")
    coordinator = _coordinator(p.prog, args)
    try:
        coalloc = coordinator.reserve(args.D, earliest, latest_end - args.D, requests)
    except CoallocError as exc:
        common.fail(p.prog, str(exc), exc.status)
    _print(args, coalloc)
    return 0


def _one(prog: str, description: str):
    p = common.Parser(prog, description)
    p.add_argument("id", help="the co-allocation's id (C...)")
    _common_options(p)
    return p


@common.command("plus_costatus")
def costatus(argv: list[str] | None = None) -> int:
    p = _one("plus_costatus", "A co-allocation as the log has it, and each site's AR now.")
    args = p.parse_args(argv)
    try:
        coalloc, live = _coordinator(p.prog, args).status(args.id)
    except CoallocError as exc:
        common.fail(p.prog, str(exc), exc.status)
    if args.json:
        common.print_json({**coalloc.view(), "live": {
            name: (str(view) if isinstance(view, Exception) else view["state"])
            for name, view in live.items()}})
        return 0
    _print(args, coalloc)
    for name, view in sorted(live.items()):
        now = str(view) if isinstance(view, Exception) else f"state {view['state']}"
        print(f"  {name}: now {now}")
    return 0


@common.command("plus_cocancel")
def cocancel(argv: list[str] | None = None) -> int:
    p = _one("plus_cocancel", "Cancel a committed co-allocation at every site.")
    args = p.parse_args(argv)
    try:
        coalloc = _coordinator(p.prog, args).cancel(args.id)
    except CoallocError as exc:
        common.fail(p.prog, str(exc), exc.status)
    _print(args, coalloc)
    return 0


if __name__ == "__main__":
    sys.exit(coreserve())
