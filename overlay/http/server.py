"""The HTTP companion's process: uvicorn serving overlay.http.app, run by
plus_scheduler (overlay.http.companion) as an unprivileged user. It gets
what it needs on its command line, never reading the configuration (which
may be readable by the daemon's user only)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time

import uvicorn

from overlay.http.app import make_app


def _leave_with(parent: int) -> None:
    """End this process when plus_scheduler is gone (killed, even with
    SIGKILL): an orphan would keep the port from the next daemon's API."""
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="plus_scheduler (http)")
    parser.add_argument("--socket", required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", default="")
    parser.add_argument("--key", default="")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s plus.http %(levelname)s %(message)s")
    threading.Thread(target=_leave_with, args=(os.getppid(),), daemon=True).start()
    uvicorn.run(make_app(args.socket), host=args.host, port=args.port, log_level="warning",
                access_log=False, ssl_certfile=args.cert or None, ssl_keyfile=args.key or None,
                h11_max_incomplete_event_size=64 * 1024, timeout_keep_alive=5,
                limit_concurrency=256, server_header=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
