"""overlay.network.http.fairness on its own: requests of many clients for a daemon
that answers when told, to see who goes in turn (the HTTP tests see the
same from outside, under a real flood)."""

from __future__ import annotations

import asyncio
import base64
import json

import pytest

from overlay.network.http.fairness import HALF_LIFE, Dispatcher, Usage, address_of, user_of
from overlay.network.http.refusal import Refusal


def scope(address: str, user: str = "") -> dict:
    headers = []
    if user:
        claims = base64.urlsafe_b64encode(json.dumps({"iss": "i", "sub": user}).encode())
        headers.append((b"authorization", b"Bearer x." + claims.rstrip(b"=") + b".y"))
    return {"type": "http", "client": (address, 4000), "headers": headers}


class Daemon:
    """Records who it serves, and answers when released."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher
        self.served: list[str] = []
        self.release = asyncio.Event()

    async def ask(self, address: str, user: str = "") -> str:
        async with self.dispatcher.turn(address, user):
            self.served.append(f"{address}/{user}")
            await self.release.wait()
        return "answered"


def test_addresses_take_turns_and_a_user_gains_nothing_by_connections_or_tokens():
    async def run():
        daemon = Daemon(Dispatcher(in_flight=1, per_address=1, per_user=1, waiting=8))
        flood = [asyncio.create_task(daemon.ask("10.0.0.1", "u1")) for _ in range(6)]
        await asyncio.sleep(0)
        others = [asyncio.create_task(daemon.ask("10.0.0.2", "u2")) for _ in range(2)]
        await asyncio.sleep(0)
        assert daemon.served == ["10.0.0.1/u1"]
        daemon.release.set()
        await asyncio.gather(*flood, *others)
        b = "10.0.0.2/u2"
        first, second = [n for n, who in enumerate(daemon.served) if who == b]
        assert first == 1 and second <= 3               # not after the whole flood
        dispatcher = daemon.dispatcher
        assert dispatcher.running == 0 and dispatcher.addresses == {} and not dispatcher.turns
    asyncio.run(run())


def test_the_address_that_used_the_daemon_least_lately_goes_first():
    async def run():
        dispatcher = Dispatcher(in_flight=1, per_address=1, per_user=1, waiting=8)
        daemon = Daemon(dispatcher)
        dispatcher.usage.add("10.0.0.1", 30.0)           # pages of a thousand ARs, lately
        busy = asyncio.create_task(daemon.ask("10.0.0.3"))
        await asyncio.sleep(0)
        heavy = asyncio.create_task(daemon.ask("10.0.0.1"))
        await asyncio.sleep(0)
        light = asyncio.create_task(daemon.ask("10.0.0.2"))
        await asyncio.sleep(0)
        daemon.release.set()
        await asyncio.gather(busy, heavy, light)
        assert daemon.served == ["10.0.0.3/", "10.0.0.2/", "10.0.0.1/"]
        assert 0 < dispatcher.usage.of("10.0.0.1") < 30.0 + 1
    asyncio.run(run())


def test_usage_halves_every_half_life():
    now = [0.0]
    usage = Usage(clock=lambda: now[0])
    usage.add("a", 8.0)
    now[0] = 2 * HALF_LIFE
    assert usage.of("a") == pytest.approx(2.0)
    assert usage.of("never") == 0.0


def test_one_user_waits_for_their_own_while_another_there_goes():
    async def run():
        daemon = Daemon(Dispatcher(in_flight=4, per_address=4, per_user=1, waiting=8))
        mine = [asyncio.create_task(daemon.ask("10.0.0.1", "u1")) for _ in range(3)]
        await asyncio.sleep(0)
        theirs = asyncio.create_task(daemon.ask("10.0.0.1", "u2"))
        await asyncio.sleep(0)
        assert daemon.served == ["10.0.0.1/u1", "10.0.0.1/u2"]
        daemon.release.set()
        await asyncio.gather(*mine, theirs)
    asyncio.run(run())


def test_an_address_with_too_many_waiting_is_told_429():
    async def run():
        daemon = Daemon(Dispatcher(in_flight=1, per_address=1, per_user=1, waiting=2))
        tasks = [asyncio.create_task(daemon.ask("10.0.0.1")) for _ in range(3)]
        await asyncio.sleep(0)
        with pytest.raises(Refusal) as refused:
            await daemon.ask("10.0.0.1")
        assert refused.value.status == 429 and refused.value.body["kind"] == "busy"
        daemon.release.set()
        assert await asyncio.gather(*tasks) == ["answered"] * 3
    asyncio.run(run())


def test_a_waiting_request_whose_client_goes_leaves_no_trace():
    async def run():
        daemon = Daemon(Dispatcher(in_flight=1, per_address=1, per_user=1, waiting=4))
        first = asyncio.create_task(daemon.ask("10.0.0.1"))
        gone = asyncio.create_task(daemon.ask("10.0.0.2"))
        await asyncio.sleep(0)
        gone.cancel()
        await asyncio.sleep(0)
        dispatcher = daemon.dispatcher
        assert "10.0.0.2" not in dispatcher.addresses and list(dispatcher.turns) == []
        daemon.release.set()
        assert await first == "answered"
        assert dispatcher.running == 0 and daemon.served == ["10.0.0.1/"]
    asyncio.run(run())


def test_a_clients_address_and_user():
    assert address_of({"client": ("2001:db8::1:2:3:4", 1)}) == "2001:db8::/64"
    assert address_of({"client": ("::ffff:192.0.2.7", 1)}) == "192.0.2.7"
    assert address_of({"client": None}) == "unknown"
    assert user_of(scope("10.0.0.1", "alice")) == "i|alice"
    assert user_of({"headers": [(b"authorization", b"Bearer garbage")]}) == ""
    assert user_of({"headers": []}) == ""
