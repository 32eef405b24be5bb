"""The cost of /metrics at 10,000 ARs (issue 31): a daemon on a 1,000-node
embedded cluster, its store filled straight with ARs of 100 owners (1,000
in their window, one node each, the rest waiting), scraped through the
HTTP API and asked on its socket; and what counting the ARs by state and
owner would cost if a scrape walked them all, beside the tally the daemon
keeps as they change.

    /opt/plus-venv/bin/python scripts/bench_metrics.py [ARs] [scrapes]
"""

from __future__ import annotations

import os
import socket
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
from sqlmodel import Session

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_core import NODES, Daemon, cpu_seconds  # noqa: E402
from calibration import python_speed  # noqa: E402
from overlay.language.model import Request  # noqa: E402
from overlay.persistence.store import (  # noqa: E402
    AllocationRow,
    CounterRow,
    ReservationRow,
    Store,
    _encode_request,
)
from overlay.usecases.tally import Tally  # noqa: E402
from overlay.wire import protocol  # noqa: E402

HOUR = 3600
OWNERS = 100


def fill(url: str, count: int, now: int) -> None:
    """``count`` one-node ARs: the first NODES in their window (state r),
    the others waiting, each on its node after the one before."""
    store = Store(url)
    with Session(store.engine) as session:
        rows = []
        for ar_id in range(1, count + 1):
            node, round_ = (ar_id - 1) % NODES, (ar_id - 1) // NODES
            start = now - HOUR if round_ == 0 else now + round_ * 2 * HOUR
            owner = f"user{ar_id % OWNERS:03d}"
            request = Request(start=start, end=start + HOUR + HOUR // 2, nodes=1, users=(owner,))
            session.add(ReservationRow(id=ar_id, owner=owner, owner_group=owner,
                                       state="r" if round_ == 0 else "w", submission_time=now,
                                       start_time=request.start, end_time=request.end, acl=owner,
                                       request=_encode_request(request)))
            rows.append(AllocationRow(reservation_id=ar_id, node=f"node{node + 1:04d}", slots=8,
                                      start_time=request.start, end_time=request.end))
        session.flush()
        session.add_all(rows)
        session.add(CounterRow(name="arseqnum", value=count))
        session.commit()
    store.close()


def timed(work, times: int) -> list[float]:
    """Milliseconds of each of ``times`` calls of ``work``."""
    taken = []
    for _ in range(times):
        began = time.perf_counter()
        work()
        taken.append((time.perf_counter() - began) * 1000)
    return taken


def summary(taken: list[float]) -> str:
    ordered = sorted(taken)
    return (f"median {statistics.median(ordered):.2f} ms, "
            f"p99 {ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]:.2f} ms")


def api_daemon(folder: str, count: int, http: str = "") -> tuple[Daemon, int]:
    """A daemon in ``folder`` with ``count`` ARs (``fill``) and its HTTP API
    on a free loopback port (``http``: more of its section), started; and
    the port."""
    os.chmod(folder, 0o755)       # the API runs as nobody: it must reach the socket
    daemon = Daemon(Path(folder))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with open(daemon.work / "plus.yaml", "a") as conf:
        conf.write(f"http: {{address: '127.0.0.1:{port}'{http}}}\n")
    (daemon.work / "state").mkdir()
    fill(daemon.url, count, int(time.time()))
    daemon.start()
    return daemon, port


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    scrapes = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    print(python_speed())
    with tempfile.TemporaryDirectory(prefix="plus-bench-metrics-") as folder:
        daemon, port = api_daemon(folder, count, ", metrics: open")
        try:
            url = f"http://127.0.0.1:{port}/metrics"
            deadline = time.monotonic() + 60
            while True:
                try:
                    first = httpx.get(url, timeout=30)
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            if first.status_code != 200:
                raise SystemExit(f"/metrics answered {first.status_code}: {first.text}")
            series = sum(1 for line in first.text.splitlines() if not line.startswith("#"))
            with httpx.Client(timeout=30) as client:
                before = cpu_seconds(daemon.process.pid)
                http_times = timed(lambda: client.get(url).raise_for_status(), scrapes)
                cpu = (cpu_seconds(daemon.process.pid) - before) / scrapes * 1000
            op_times = timed(lambda: protocol.call(daemon.socket, "metrics", {}), scrapes)
        finally:
            daemon.stop()
        ars = Store(daemon.url).snapshot()[1]
    tally = Tally(ars)
    scan = timed(lambda: Counter((ar.state.value, ar.owner) for ar in ars), scrapes)
    kept = timed(tally.by_state_and_owner, scrapes)
    print(f"{count} ARs ({NODES} in their window) of {OWNERS} owners, {NODES} nodes, "
          f"{scrapes} scrapes")
    print(f"GET /metrics: {summary(http_times)}; {len(first.content) / 1024:.0f} KiB, "
          f"{series} samples")
    print(f"  the daemon's CPU per scrape: {cpu:.2f} ms")
    print(f"the daemon's metrics operation on its socket: {summary(op_times)}")
    print(f"ARs by state and owner: walking every AR {summary(scan)}; "
          f"the tally kept as they change {summary(kept)}")


if __name__ == "__main__":
    main()
