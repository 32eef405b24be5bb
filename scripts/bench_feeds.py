"""The calendar feed's cost: a user with 1,000 ARs (among others' ARs)
subscribes to their feed. Measures a full fetch (200, the iCalendar of
every AR) and a client's poll that finds nothing changed (If-None-Match,
304), over HTTP against a real daemon on a 1,000-node cluster.

Run as root with the venv's Python after the test set-up:
    /opt/plus-venv/bin/python scripts/bench_feeds.py [--ars 1000] [--others 9000]
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench_core import BIN, Daemon, fill_store, generate
from bench_ggf import Api, free_port
from calibration import python_speed

USER = "plusu1"


def fetch(port: int, path: str, tag: str | None = None) -> tuple[int, bytes, str, float]:
    """One GET of ``path``: its status, body, ETag and milliseconds."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    began = time.perf_counter()
    connection.request("GET", path, headers={"If-None-Match": tag} if tag else {})
    response = connection.getresponse()
    body = response.read()
    taken = (time.perf_counter() - began) * 1000
    connection.close()
    return response.status, body, response.getheader("ETag") or "", taken


def timed(port: int, path: str, runs: int, tag: str | None = None, status: int = 200) -> list[float]:
    samples = []
    for _ in range(runs):
        got, _, _, taken = fetch(port, path, tag)
        if got != status:
            raise SystemExit(f"{path} answered {got}, not {status}")
        samples.append(taken)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ars", type=int, default=1000, help=f"{USER}'s ARs")
    parser.add_argument("--others", type=int, default=9000, help="other users' ARs")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    print(python_speed())
    work = Path(tempfile.mkdtemp(prefix="plus-bench-feeds-"))
    os.chmod(work, 0o755)
    daemon, port = Daemon(work), free_port()
    with open(work / "plus.yaml", "a") as conf:
        conf.write(f"http: {{address: '127.0.0.1:{port}'}}\ntimezone: Europe/Berlin\n")
    now = int(time.time())
    try:
        fill_store(daemon.url, generate(args.ars + args.others, now), now, owner=USER)
        with sqlite3.connect(daemon.url.removeprefix("sqlite:///")) as database:
            database.execute("UPDATE reservation SET owner = 'plusu2', acl = 'plusu2' WHERE id > ?",
                             (args.ars,))
        daemon.start()
        Api(port, "").wait()
        made = subprocess.run(["runuser", "-u", USER, "--", "env", f"PLUS_CONF={work}/plus.yaml",
                               str(BIN / "plus_feed"), "-c", "bench"],
                              capture_output=True, text=True, check=True)
        path = f"/feeds/users/{USER}.ics?token={made.stdout.split()[0]}"
        status, body, tag, first = fetch(port, path)
        if status != 200:
            raise SystemExit(f"the feed answered {status}: {body[:200]!r}")
        events = body.count(b"BEGIN:VEVENT")
        full = timed(port, path, args.runs)
        polls = timed(port, path, args.runs * 10, tag, 304)
        print(f"{USER}'s feed: {events} events of {args.ars + args.others} ARs in the store, "
              f"{len(body) / 1024:.0f} KiB")
        print(f"first fetch: {first:.0f} ms; full fetch (200) median {statistics.median(full):.0f}"
              f" ms, max {max(full):.0f} ms ({len(full)})")
        print(f"poll, unchanged (304): median {statistics.median(polls):.1f} ms, max "
              f"{max(polls):.1f} ms ({len(polls)})")
    finally:
        daemon.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
