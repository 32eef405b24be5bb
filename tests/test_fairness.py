"""overlay.http.fairness on its own: requests of many clients against a
daemon that answers when told, to see who goes in turn (the HTTP tests
see the same from outside, under a real flood)."""

from __future__ import annotations

import asyncio
import base64
import json

from overlay.http.fairness import Fairness, address_of, user_of


def scope(address: str, user: str = "") -> dict:
    headers = []
    if user:
        claims = base64.urlsafe_b64encode(json.dumps({"iss": "i", "sub": user}).encode())
        headers.append((b"authorization", b"Bearer x." + claims.rstrip(b"=") + b".y"))
    return {"type": "http", "client": (address, 4000), "headers": headers}


class Daemon:
    """An app that records who it serves and answers when released."""

    def __init__(self) -> None:
        self.served: list[str] = []
        self.release = asyncio.Event()

    async def __call__(self, scope, receive, send) -> None:
        self.served.append(f"{scope['client'][0]}/{user_of(scope)[2:]}")
        await self.release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})


async def _sent(fair: Fairness, request: dict) -> int:
    statuses = []

    async def send(message):
        if message["type"] == "http.response.start":
            statuses.append(message["status"])
    await fair(request, None, send)
    return statuses[0]


def test_addresses_take_turns_and_a_user_gains_nothing_by_connections_or_tokens():
    async def run():
        daemon = Daemon()
        fair = Fairness(daemon, in_flight=1, per_address=1, per_user=1, waiting=8)
        flood = [asyncio.create_task(_sent(fair, scope("10.0.0.1", "u1"))) for _ in range(6)]
        await asyncio.sleep(0)
        others = [asyncio.create_task(_sent(fair, scope("10.0.0.2", "u2"))) for _ in range(2)]
        await asyncio.sleep(0)
        assert daemon.served == ["10.0.0.1/u1"]
        daemon.release.set()
        await asyncio.gather(*flood, *others)
        a, b = "10.0.0.1/u1", "10.0.0.2/u2"
        assert daemon.served == [a, a, b, a, b, a, a, a]      # in turn, not after the flood
        assert fair.running == 0 and fair.addresses == {} and not fair.turns
    asyncio.run(run())


def test_one_user_waits_for_their_own_while_another_there_goes():
    async def run():
        daemon = Daemon()
        fair = Fairness(daemon, in_flight=4, per_address=4, per_user=1, waiting=8)
        mine = [asyncio.create_task(_sent(fair, scope("10.0.0.1", "u1"))) for _ in range(3)]
        await asyncio.sleep(0)
        theirs = asyncio.create_task(_sent(fair, scope("10.0.0.1", "u2")))
        await asyncio.sleep(0)
        assert daemon.served == ["10.0.0.1/u1", "10.0.0.1/u2"]
        daemon.release.set()
        await asyncio.gather(*mine, theirs)
    asyncio.run(run())


def test_an_address_with_too_many_waiting_is_told_429():
    async def run():
        daemon = Daemon()
        fair = Fairness(daemon, in_flight=1, per_address=1, per_user=1, waiting=2)
        tasks = [asyncio.create_task(_sent(fair, scope("10.0.0.1"))) for _ in range(3)]
        await asyncio.sleep(0)
        assert await _sent(fair, scope("10.0.0.1")) == 429
        daemon.release.set()
        assert await asyncio.gather(*tasks) == [200, 200, 200]
    asyncio.run(run())


def test_a_waiting_request_whose_client_goes_leaves_no_trace():
    async def run():
        daemon = Daemon()
        fair = Fairness(daemon, in_flight=1, per_address=1, per_user=1, waiting=4)
        first = asyncio.create_task(_sent(fair, scope("10.0.0.1")))
        gone = asyncio.create_task(_sent(fair, scope("10.0.0.2")))
        await asyncio.sleep(0)
        gone.cancel()
        await asyncio.sleep(0)
        assert "10.0.0.2" not in fair.addresses and list(fair.turns) == []
        daemon.release.set()
        assert await first == 200
        assert fair.running == 0
    asyncio.run(run())


def test_a_clients_address_and_user():
    assert address_of({"client": ("2001:db8::1:2:3:4", 1)}) == "2001:db8::/64"
    assert address_of({"client": ("::ffff:192.0.2.7", 1)}) == "192.0.2.7"
    assert address_of({"client": None}) == "unknown"
    assert user_of(scope("10.0.0.1", "alice")) == "i|alice"
    assert user_of({"headers": [(b"authorization", b"Bearer garbage")]}) == ""
    assert user_of({"headers": []}) == ""
