"""The list endpoint's time per page at 100,000 ARs (issue 31): a daemon on
a 1,000-node embedded cluster, its store filled straight with one-node ARs
of 100 owners (scripts/bench_metrics.py's fill), listed through the HTTP
API a page of 1,000 at a time at the first, middle and last offsets,
filtered (one owner's), sorted, and read again with its ETag (304).

    /opt/plus-venv/bin/python scripts/bench_api_list.py [ARs] [runs]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import httpx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_metrics import api_daemon, summary, timed  # noqa: E402
from calibration import python_speed  # noqa: E402
from overlay.wire import protocol  # noqa: E402

PAGE = 1000


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    print(python_speed())
    with tempfile.TemporaryDirectory(prefix="plus-bench-list-") as folder:
        daemon, port = api_daemon(folder, count)
        try:
            reply = protocol.call(daemon.socket, "token", {})
            if not reply.get("ok"):
                raise SystemExit(f"no token: {reply}")
            headers = {"Authorization": f"Bearer {reply['data']['token']}"}
            url = f"http://127.0.0.1:{port}/v1/reservations"
            deadline = time.monotonic() + 60
            with httpx.Client(timeout=60, headers=headers) as client:
                while True:
                    try:
                        first = client.get(url, params={"limit": PAGE})
                        break
                    except httpx.HTTPError:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.1)
                first.raise_for_status()
                print(f"{count} ARs, pages of {PAGE} ({len(first.content) / 1024:.0f} KiB), "
                      f"{runs} runs each")
                cases = [(f"offset {offset}", {"limit": PAGE, "offset": offset})
                         for offset in (0, count // 2, count - PAGE)]
                cases += [("one owner's (1% of them)", {"owner": "user001", "limit": PAGE}),
                          ("sorted by -start", {"sort": "-start", "limit": PAGE}),
                          ("state r and a name pattern", {"state": "r", "name": "x*"})]
                for label, params in cases:
                    taken = timed(lambda p=params: client.get(url, params=p).raise_for_status(),
                                  runs)
                    print(f"  {label:<28} {summary(taken)}")
                tag = first.headers["etag"]
                unchanged = timed(lambda: client.get(url, params={"limit": PAGE}, headers={
                    "If-None-Match": tag}), runs)
                print(f"  {'the first page again, 304':<28} {summary(unchanged)}")
        finally:
            daemon.stop()


if __name__ == "__main__":
    main()
