"""Benchmark of fairness on the HTTP API (issue 27, item 4): one user with
3,000 ARs loops GET /reservations on 64 connections while another user
asks for their own things, over HTTP and on the socket.

It prints, beside the idle baseline measured in the same run:
  the other user's GET /whoami and GET /reservations?owner= (their own)
  over HTTP, and plus_status's listing of every AR on the socket (as that
  user, from a process of theirs): p50, p99 and the slowest, ms;
  the flood's answers per second, and how many were refused as busy (429);
  the daemon's and the companion's largest resident memory, MiB.

Run as root after scripts/install.sh (the test users exist):
  /opt/plus-venv/bin/python scripts/bench_fairness.py [--ars 3000] [--seconds 30] [--flood 64]
      [--tokens 1] [--limit 100] [--addresses 1]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from bench_core import Daemon, fill_store, generate
from bench_ggf import Api, free_port
from calibration import python_speed

FLOODER, OTHER = "plusu1", "plusu2"
SOCKET_PROBE = """
import json, sys, time
from overlay.wire import protocol
path, until = sys.argv[1], time.monotonic() + float(sys.argv[2])
taken = []
while time.monotonic() < until:
    began = time.perf_counter()
    reply = protocol.call(path, "status", {"summary": True})
    taken.append((time.perf_counter() - began) * 1000)
    assert reply["ok"], reply
    time.sleep(0.05)
print(json.dumps(taken))
"""


def token_for(daemon: Daemon, user: str) -> str:
    """A token of ``user``, which root asks for as a manager acting for them."""
    from overlay.wire import protocol
    reply = protocol.call(daemon.socket, "token", {"lifespan": 3600}, **{"as": user})
    if not reply.get("ok"):
        raise SystemExit(f"token for {user} refused: {reply.get('error')}")
    return reply["data"]["token"]


def resident_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def companion_pid(daemon: Daemon) -> int:
    found = subprocess.run(["pgrep", "-f", f"overlay.network.http.server --socket {daemon.socket}"],
                           capture_output=True, text=True).stdout.split()
    return int(found[0])


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"{statistics.median(ordered):7.1f} {p99:7.1f} {ordered[-1]:7.1f}   ({len(ordered)})"


def other_user(api: Api, daemon: Daemon, seconds: float) -> dict[str, list[float]]:
    """The other user's latencies over ``seconds``: HTTP from this process,
    the socket from a process of theirs."""
    probe = subprocess.Popen(["runuser", "-u", OTHER, "--", str(Path(os.sys.executable)), "-c",
                              SOCKET_PROBE, daemon.socket, str(seconds)],
                             stdout=subprocess.PIPE, text=True)
    taken: dict[str, list[float]] = {"GET /whoami": [], "GET /reservations (own)": []}
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        for label, path in (("GET /whoami", "/whoami"),
                            ("GET /reservations (own)", f"/reservations?owner={OTHER}")):
            began = time.perf_counter()
            status, _ = api.request("GET", path)
            taken[label].append((time.perf_counter() - began) * 1000)
            if status != 200:
                raise SystemExit(f"{path} answered {status} to {OTHER}")
        time.sleep(0.05)
    taken["socket plus_status (all ARs)"] = json.loads(probe.communicate()[0])
    return taken


def flood(port: int, tokens: list[str], connections: int, limit: int, addresses: int,
          stop: threading.Event, counts: dict[int, int]) -> list[threading.Thread]:
    lock = threading.Lock()

    def connect(number: int) -> http.client.HTTPConnection:
        """From addresses of the flooder's own (other hosts, as it were)."""
        return http.client.HTTPConnection("127.0.0.1", port, timeout=120, source_address=(
            f"127.0.4.{2 + number % addresses}", 0))

    def loop(number: int, token: str) -> None:
        connection = connect(number)
        headers = {"Authorization": f"Bearer {token}"}
        while not stop.is_set():
            try:
                connection.request("GET", f"/reservations?limit={limit}", headers=headers)
                response = connection.getresponse()
                response.read()
                status = response.status
            except OSError:
                connection.close()
                connection = connect(number)
                status = 0
            with lock:
                counts[status] = counts.get(status, 0) + 1
            if status == 429:
                time.sleep(float(response.getheader("Retry-After") or 1))
    threads = [threading.Thread(target=loop, args=(n, tokens[n % len(tokens)]), daemon=True)
               for n in range(connections)]
    for thread in threads:
        thread.start()
    return threads


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ars", type=int, default=3000)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--flood", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=1, help="tokens the flooder mints")
    parser.add_argument("--limit", type=int, default=100, help="ARs per page of the flood")
    parser.add_argument("--addresses", type=int, default=1, help="the flooder's addresses")
    args = parser.parse_args()
    print(python_speed())
    work = Path(tempfile.mkdtemp(prefix="plus-bench-fair-"))
    os.chmod(work, 0o755)
    daemon, port = Daemon(work), free_port()
    with open(work / "plus.yaml", "a") as conf:
        conf.write(f"http: {{address: '127.0.0.1:{port}'}}\n")
    now = int(time.time())
    try:
        fill_store(daemon.url, generate(args.ars, now), now, owner=FLOODER)
        daemon.start()
        other = Api(port, token_for(daemon, OTHER))
        other.wait()
        pids = {"daemon": daemon.process.pid, "companion": companion_pid(daemon)}
        idle = other_user(other, daemon, min(10.0, args.seconds))
        stop, counts, peak = threading.Event(), {}, {name: 0.0 for name in pids}
        tokens = [token_for(daemon, FLOODER) for _ in range(args.tokens)]
        threads = flood(port, tokens, args.flood, args.limit, args.addresses, stop, counts)

        def sample() -> None:
            while not stop.is_set():
                for name, pid in pids.items():
                    peak[name] = max(peak[name], resident_mib(pid))
                time.sleep(0.2)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        time.sleep(2)                    # the flood under way
        began = time.monotonic()
        loaded = other_user(other, daemon, args.seconds)
        elapsed = time.monotonic() - began
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
        print(f"{args.ars} ARs of {FLOODER}; {args.flood} connections from {args.addresses} "
              f"address(es) with {args.tokens} token(s) looping GET /reservations?limit="
              f"{args.limit} for {args.seconds:g} s")
        print(f"{'':50} {'p50':>7} {'p99':>7} {'max':>7}   (samples), ms")
        for label in idle:
            print(f"{label + ', idle':50} {percentiles(idle[label])}")
            print(f"{label + ', under the flood':50} {percentiles(loaded[label])}")
        answered = sum(n for status, n in counts.items() if status == 200)
        print(f"flood: {answered / elapsed:.0f} answers/s; statuses {dict(sorted(counts.items()))}")
        for name, mib in peak.items():
            print(f"{name} memory, largest, MiB: {mib:.0f}")
    finally:
        daemon.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
