"""The HTTP companion's process: uvicorn serving overlay.network.http.app, run by
plus_scheduler (overlay.network.http.companion) as an unprivileged user. It gets
what it needs on its command line, never reading the configuration (which
may be readable by the daemon's user only)."""

from __future__ import annotations

import argparse
import logging
import os
import socket
import ssl
import sys

from overlay.kit.childprocess import die_with, undumpable

RESPONSE_SLACK = 30
"""Seconds a client has, beyond the daemon's own time, to take a response."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="plus_scheduler (http)")
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--socket", required=True)
    parser.add_argument("--listening", type=int, required=True,
                        help="the listening socket's descriptor, which the daemon holds")
    parser.add_argument("--connections", type=int, required=True)
    parser.add_argument("--per-client", type=int, required=True)
    parser.add_argument("--request-timeout", type=float, required=True)
    parser.add_argument("--timeout", type=float, required=True)
    parser.add_argument("--provider", default="", help="the identity provider's origin")
    parser.add_argument("--cors", action="append", default=[],
                        help="an origin whose pages may call the API (http.cors_origins)")
    parser.add_argument("--cert", default="")
    parser.add_argument("--key", default="")
    args = parser.parse_args(argv)
    die_with(args.parent, "plus_scheduler (http)")
    undumpable("plus_scheduler (http)")
    import uvicorn  # after die_with: its import is the slow part of the start

    from overlay.daemon.connections import raise_fd_limit
    from overlay.log.ratelog import RateLimitFilter
    from overlay.network.http.admission import Admission, protocol_for
    from overlay.network.http.app import served
    logging.basicConfig(level=logging.WARNING, format="%(name)s %(levelname)s %(message)s")
    for handler in logging.getLogger().handlers:   # what the daemon's log takes from here
        handler.addFilter(RateLimitFilter())
    raise_fd_limit()
    tls = None
    if args.cert:     # the handshake is the admitted connection's (overlay.network.http.admission)
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            tls.load_cert_chain(args.cert, args.key)
        except (OSError, ssl.SSLError) as exc:
            sys.exit(f"plus_scheduler (http): http.tls_cert {args.cert} or http.tls_key "
                     f"{args.key} cannot be used by uid {os.getuid()} (http.user): "
                     f"{getattr(exc, 'strerror', None) or exc}")
    admission = Admission(args.connections, args.per_client, args.request_timeout,
                          args.timeout + RESPONSE_SLACK, tls)
    config = uvicorn.Config(
        served(args.socket, args.timeout, args.provider, tuple(args.cors)), http=protocol_for(admission),
        log_level="warning", log_config=None, access_log=False,
        h11_max_incomplete_event_size=64 * 1024, timeout_keep_alive=5,
        limit_concurrency=None, server_header=False)
    uvicorn.Server(config).run(sockets=[socket.socket(fileno=args.listening)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
