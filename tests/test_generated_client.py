"""A client generated from the OpenAPI document (openapi-python-client, as
a portal author would make one) drives a whole cycle against a real
daemon: create, list with paging and filters, read, modify, cancel,
destroy. Its answers come back as the generated typed classes: the
document's schemas are what the API answers."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import httpx
import pytest

from daemon_harness import BIN
from http_harness import HOUR, start_api, token, window


@pytest.fixture(scope="module")
def api():
    daemon, url = start_api("http: {address: {address}}\n")
    yield daemon, url
    daemon.cleanup()


@pytest.fixture(scope="module")
def client_package(api, tmp_path_factory):
    """The package generated from the live API's document, importable."""
    _, url = api
    folder = tmp_path_factory.mktemp("generated")
    (folder / "openapi.json").write_bytes(httpx.get(url + "/openapi.json").content)
    made = subprocess.run([str(BIN / "openapi-python-client"), "generate", "--path",
                           "openapi.json", "--meta", "none", "--output-path", "plus_client"],
                          cwd=folder, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})
    assert made.returncode == 0, made.stdout + made.stderr
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module("plus_client")
    finally:
        sys.path.remove(str(folder))
        for name in [name for name in sys.modules if name.startswith("plus_client")]:
            del sys.modules[name]


def test_a_generated_client_drives_a_whole_cycle(api, client_package):
    daemon, url = api
    models = importlib.import_module("plus_client.models")
    call = {name: importlib.import_module(f"plus_client.api.default.{name}")
            for name in ("create_reservation", "list_reservations", "get_reservation",
                         "modify_reservation", "cancel_reservation", "destroy_reservation")}
    client = client_package.AuthenticatedClient(base_url=url, token=token(daemon, "plusu1"))
    times = window(150)
    made = [call["create_reservation"].sync(client=client, body=models.ReservationIn(
        start=times["start"] + hours * HOUR, end=times["end"] + hours * HOUR, nodes=1,
        name=name)) for hours, name in ((0, "gen-a"), (1, "gen-b"), (2, "other"))]
    assert all(isinstance(ar, models.Reservation) for ar in made), made
    ids = [ar.id for ar in made]
    page = call["list_reservations"].sync_detailed(client=client, owner="plusu1", name="gen-*",
                                                   limit=1, sort="-start")
    assert page.status_code == 200 and page.headers["x-total-count"] == "2"
    assert [ar.id for ar in page.parsed] == [ids[1]] and "rel=\"next\"" in page.headers["link"]
    following = call["list_reservations"].sync(client=client, owner="plusu1", name="gen-*",
                                               limit=1, offset=1, sort="-start")
    assert [ar.id for ar in following] == [ids[0]]
    shown = call["get_reservation"].sync(client=client, ar_id=ids[0])
    assert isinstance(shown, models.Reservation) and shown.name == "gen-a"
    assert isinstance(shown.request, models.RequestShown) and shown.request.nodes == 1
    moved = call["modify_reservation"].sync(client=client, ar_id=ids[0],
                                            body=models.ModifyIn(end=shown.end + HOUR))
    assert isinstance(moved, models.Reservation) and moved.end == shown.end + HOUR
    cancelled = call["cancel_reservation"].sync(client=client, ar_id=ids[0])
    assert cancelled.state == "d"
    missing = call["get_reservation"].sync(client=client, ar_id=9_999_999)
    assert isinstance(missing, models.Problem) and missing.kind == "unknown"
    for ar_id in ids:
        assert isinstance(call["destroy_reservation"].sync(client=client, ar_id=ar_id),
                          models.Reservation)
