"""The ``http:`` section of plus.yaml, checked key by key, and the rule
that plain HTTP is for loopback only."""

from __future__ import annotations

import socket
import urllib.parse
from dataclasses import dataclass
from typing import Any

from overlay.contract import settings
from overlay.network import oidc
from overlay.network.loopback import loopback
from overlay.network.oidc import OidcSettings

DEFAULT_ADDRESS = "127.0.0.1:6830"
METRICS_ACCESS = ("token", "open", "off")
"""Who may scrape /metrics: a bearer token holding the metrics secret,
anyone who reaches the API, or no one over HTTP."""


@dataclass(frozen=True)
class HttpSettings:
    address: str = DEFAULT_ADDRESS       # host:port, or "off"
    tls_cert: str = ""                   # PEM files; required off loopback
    tls_key: str = ""
    trusted_principals: tuple[str, ...] = ()   # may act for another UserID (seed 003)
    token_lifespan: int = 86400          # the longest plus_token -l accepted, seconds
    user: str = "nobody"                 # the companion's user when the daemon runs as root
    max_connections: int = 1024          # held at once from all clients
    max_connections_per_client: int = 32  # held at once from one address
    request_timeout: int = 10            # seconds a request (head and body) has to arrive whole
    timeout: int = 5                     # seconds the API waits for the daemon's answer (then 503)
    max_requests_per_user: int = 2       # one HTTP user's requests the daemon runs at once
    oidc: OidcSettings | None = None     # the site's OpenID provider, whose tokens are taken too
    metrics: str = "token"               # /metrics: token (metrics_token's secret), open, off
    metrics_token: str = ""              # the scrapers' secret; default metrics.token in state_dir
    cors_origins: tuple[str, ...] = ()   # portals on other origins whose pages may call the API

    @property
    def enabled(self) -> bool:
        return self.address != "off"

    @property
    def host(self) -> str:
        return self.address.rpartition(":")[0].strip("[]")

    @property
    def port(self) -> int:
        return int(self.address.rpartition(":")[2])

    @property
    def tls(self) -> bool:
        return bool(self.tls_cert)

    @property
    def base_url(self) -> str:
        """The API's URL as a browser reaches it: this host's name where it
        listens on every address."""
        host = self.host
        if host in ("0.0.0.0", "::", ""):
            host = socket.getfqdn()
        elif ":" in host:
            host = f"[{host}]"
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"


def _address(value: Any) -> str | None:
    if value == "off":
        return value
    if not isinstance(value, str) or ":" not in value:
        return None
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        return None
    return value


def _origin(value: Any) -> bool:
    """A browser origin a portal's pages come from: https://host[:port],
    or http on the loopback (a portal under development)."""
    if not isinstance(value, str) or len(value) > 256:
        return False
    parts = urllib.parse.urlsplit(value)
    plain = parts.scheme == "http" and parts.hostname in ("localhost", "127.0.0.1", "::1")
    try:
        port_given = parts.port is not None          # ValueError: not a port
    except ValueError:
        return False
    return ((parts.scheme == "https" or plain) and bool(parts.hostname) and
            port_given == (":" in parts.netloc.rpartition("]")[2]) and
            value == f"{parts.scheme}://{parts.netloc}" and "@" not in parts.netloc)


_NAMES = settings.Check("a list of user names",
                        lambda v: tuple(v) if isinstance(v, list) and all(
                            isinstance(x, str) and x for x in v) else None)
CHECKS = {
    "address": settings.Check("host:port (e.g. 127.0.0.1:6830, [::1]:6830) or off", _address),
    "tls_cert": settings.path(absolute=False), "tls_key": settings.path(absolute=False),
    "trusted_principals": _NAMES,
    "token_lifespan": settings.seconds(60),
    "user": settings.text(),
    "max_connections": settings.whole(1, 65536),
    "max_connections_per_client": settings.whole(1, 65536),
    "request_timeout": settings.seconds(1),
    "timeout": settings.seconds(1),
    "max_requests_per_user": settings.whole(1, 1024),
    # YAML reads a bare off as false
    "metrics": settings.Check("one of token, open, off", lambda value: "off" if value is False
                              else value if value in METRICS_ACCESS else None),
    "metrics_token": settings.path(absolute=False),
    "cors_origins": settings.Check(
        "a list of origins, each scheme://host[:port] with no path (https, or http on "
        "localhost), e.g. [https://portal.example.org]",
        lambda v: tuple(v) if isinstance(v, list) and all(map(_origin, v)) else None),
}


def load(options: dict[str, Any], relative) -> HttpSettings:
    """The section's settings; ValueError if plain HTTP would leave loopback
    or only one of the TLS files is named."""
    values = settings.read_section("http", options, CHECKS, others=("oidc",))
    if "oidc" in options:
        values["oidc"] = oidc.load(options["oidc"], relative)
    for key in ("tls_cert", "tls_key", "metrics_token"):
        if values.get(key):
            values[key] = relative(values[key])
    chosen = HttpSettings(**values)
    if bool(chosen.tls_cert) != bool(chosen.tls_key):
        raise ValueError("http: give both tls_cert and tls_key (PEM files), or neither")
    if chosen.enabled and not chosen.tls and not loopback(chosen.host):
        raise ValueError(f"http.address {chosen.address}: plain HTTP is served only on loopback "
                         "(127.0.0.0/8, ::1, localhost); set http.tls_cert and http.tls_key to "
                         "serve HTTPS there, or use a loopback address")
    return chosen

