"""The command server's process, started by plus_scheduler
(overlay.cmdserver.host) as a fresh interpreter: every served command
imported once, and the modules they import on demand, then frozen out of
the cyclic collector's reach, so that each worker forked from it starts a
command with nothing left to load."""

from __future__ import annotations

import argparse
import gc
import importlib
import logging
import socket

from overlay.cmdserver import served
from overlay.cmdserver.pool import Caps, Pool
from overlay.kit.childprocess import die_with
from overlay.log.ratelog import RateLimitFilter

ON_DEMAND = ("json", "difflib", "textwrap", "xml.etree.ElementTree", "_datetime",
             "overlay.network.reskey")
"""What the commands import inside their functions (--json, -x, help, a
ResKey claim): imported here, so that no worker pays for it."""
PROG = "plus_scheduler (commands)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG)
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--listening", type=int, required=True,
                        help="the listening socket's descriptor, which the daemon holds")
    parser.add_argument("--connections", type=int, required=True)
    parser.add_argument("--per-user", type=int, required=True)
    parser.add_argument("--request-timeout", type=float, required=True)
    parser.add_argument("--spare", type=int, default=4)
    args = parser.parse_args(argv)
    die_with(args.parent, PROG)
    logging.basicConfig(level=logging.WARNING, format="%(name)s %(levelname)s %(message)s")
    for handler in logging.getLogger().handlers:   # what the daemon's log takes from here
        handler.addFilter(RateLimitFilter())
    commands = served.load()
    for module in ON_DEMAND:
        importlib.import_module(module)
    gc.collect()
    gc.freeze()
    listening = socket.socket(fileno=args.listening)
    Pool(listening, Caps(args.connections, args.per_user, args.request_timeout, args.spare),
         commands).serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
