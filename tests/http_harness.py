"""A daemon with its HTTP API on a free loopback port, and the helpers the
API's tests share: real tokens from plus_token run as real users."""

from __future__ import annotations

import os
import pwd
import socket
import time
from pathlib import Path

import httpx
import jsonschema_rs

from daemon_harness import Daemon

HOUR = 3600


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_api(settings: str, **daemon_options) -> tuple[Daemon, str]:
    """A started daemon whose configuration adds ``settings`` (YAML) to
    an http: section on a free port, and the API's URL once it answers."""
    port = free_port()
    daemon = Daemon(settings.replace("{address}", f"'127.0.0.1:{port}'"), **daemon_options)
    daemon.start()
    return daemon, answering(daemon, port)


def answering(daemon: Daemon, port: int) -> str:
    """The URL of ``daemon``'s HTTP API on ``port``, once it answers."""
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(url + "/openapi.json", timeout=2).raise_for_status()
            return url
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise RuntimeError(daemon.log.read_text()) from None
            time.sleep(0.1)


def token(daemon: Daemon, user: str, *args: str) -> str:
    return daemon.ok(user, "plus_token", *args).strip()


def secret_file(path: Path, text: str, user: str) -> str:
    """``text`` (a token, a ResKey) in a file ``user`` alone may read, as
    the commands require of a secret."""
    path.write_text(text + "\n")
    os.chown(path, pwd.getpwnam(user).pw_uid, -1)
    os.chmod(path, 0o600)
    return str(path)


def auth(bearer: str) -> dict:
    return {"Authorization": f"Bearer {bearer}"}


def window(hours: int = 2) -> dict:
    start = (int(time.time()) // HOUR + hours) * HOUR
    return {"start": start, "end": start + HOUR}


def conforms(document: dict, method: str, path: str, response: httpx.Response) -> None:
    """``response`` (to ``method`` on the documented ``path``) is what the
    OpenAPI document says that operation answers with its status."""
    declared = document["paths"][path][method.lower()]["responses"][str(response.status_code)]
    schema = declared["content"]["application/json"]["schema"]
    validator = jsonschema_rs.validator_for({**schema, "components": document["components"]})
    errors = [error.message for error in validator.iter_errors(response.json())]
    assert not errors, (method, path, response.status_code, errors[:3])
