"""A client that misbehaves on purpose, run as a test user (runuser).

    python hostile_client.py SOCKET hold N     open N connections, send nothing;
                                               print a JSON summary of the refusals
                                               the daemon sent at once, then keep the
                                               rest open until stdin closes
    python hostile_client.py SOCKET send       send stdin's bytes as they are; print
                                               the reply (or "closed")
    python hostile_client.py SOCKET flood N    send stdin's first line as a request
                                               again and again on N connections at
                                               once; print "flooding" at the first
                                               reply, and, once stdin closes, a JSON
                                               count of the replies by their error
"""

from __future__ import annotations

import json
import select
import socket
import sys
import threading
import time


def hold(path: str, count: int) -> None:
    held, refusals = [], []
    for _ in range(count):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
        held.append(sock)
    waiting, deadline = list(held), time.monotonic() + 1.5
    while waiting and time.monotonic() < deadline:
        ready, _, _ = select.select(waiting, [], [], max(0.0, deadline - time.monotonic()))
        for sock in ready:
            waiting.remove(sock)
            data = sock.recv(65536)
            if data:
                refusals.append(json.loads(data)["error"])
    print(json.dumps({"connected": len(held), "refused": refusals}), flush=True)
    sys.stdin.read()


def send(path: str) -> None:
    payload = sys.stdin.buffer.read()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(path)
        try:
            sock.sendall(payload)
        except OSError:
            pass  # the daemon may close on a request it will not read whole
        chunks = []
        try:
            while not chunks or not chunks[-1].endswith(b"\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        except OSError:
            pass
    print(b"".join(chunks).decode() or "closed")


def flood(path: str, count: int) -> None:
    request = sys.stdin.buffer.readline()
    stop, lock, replies, first = threading.Event(), threading.Lock(), {}, threading.Event()

    def one_connection() -> None:
        while not stop.is_set():
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(60)
                sock.connect(path)
                sock.sendall(request)
                reply = json.loads(sock.makefile("rb").readline())
            with lock:
                key = reply.get("error", "ok")
                replies[key] = replies.get(key, 0) + 1
            first.set()
    threads = [threading.Thread(target=one_connection, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    first.wait(60)
    print("flooding", flush=True)
    sys.stdin.read()
    stop.set()
    for thread in threads:
        thread.join(60)
    print(json.dumps(replies), flush=True)


if __name__ == "__main__":
    if sys.argv[2] == "hold":
        hold(sys.argv[1], int(sys.argv[3]))
    elif sys.argv[2] == "flood":
        flood(sys.argv[1], int(sys.argv[3]))
    else:
        send(sys.argv[1])
