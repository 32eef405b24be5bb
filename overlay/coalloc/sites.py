"""The sites file: each site's API, the token to use there, its CA
certificate (for https), and the UserID there (default: the local user).

    sites:
      A: {url: "https://a.example:6830", token_file: ~/a.token, ca_cert: /etc/ssl/a.pem}
      B: {url: "http://127.0.0.1:6831", token_file: ~/b.token, user: plusu1}

The token goes with every request: plain http:// is accepted to loopback
only, and a token file others may read is refused, as ssh refuses such a
private key.
"""

from __future__ import annotations

import getpass
import os
import ssl
import urllib.parse
from dataclasses import dataclass, field

from overlay.daemon.config import read_yaml
from overlay.kit.secretfile import OpenToOthers, check_private
from overlay.language.limits import shown
from overlay.language.request import RequestError, parse_name
from overlay.network.loopback import loopback

MAX_SITES = 16


@dataclass(frozen=True)
class Site:
    name: str
    url: str
    token: str
    user: str
    ca_cert: str | None = None
    context: ssl.SSLContext | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """An https site's TLS context, made once (OSError or ssl.SSLError
        if ca_cert cannot be read or holds no certificate)."""
        object.__setattr__(self, "context", ssl.create_default_context(cafile=self.ca_cert)
                           if self.url.startswith("https://") else None)


def _text(where: str, entry: dict, key: str, required: bool = True) -> str | None:
    value = entry.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise RequestError(f"{where}: {key} must be a non-empty string")
    return value


def load(path: str) -> dict[str, Site]:
    """The sites of ``path``, every entry checked, tokens read."""
    data = read_yaml(os.path.expanduser(path), "the sites file", RequestError)
    entries = data.get("sites") if isinstance(data, dict) else None
    if not isinstance(entries, dict) or not entries:
        raise RequestError(f"--sites: {shown(path)} needs a 'sites:' mapping of names to "
                           "{url, token_file[, ca_cert, user]}")
    if len(entries) > MAX_SITES:
        raise RequestError(f"--sites: at most {MAX_SITES} sites are accepted")
    sites = {}
    for name, entry in entries.items():
        where = f"sites file, site {shown(str(name))}"
        parse_name(str(name), where)
        if not isinstance(entry, dict):
            raise RequestError(f"{where}: expected a mapping with url and token_file")
        unknown = sorted(set(entry) - {"url", "token_file", "ca_cert", "user"})
        if unknown:
            raise RequestError(f"{where}: unknown key '{shown(unknown[0])}'; accepted: url, "
                               "token_file, ca_cert, user")
        url = _url(where, _text(where, entry, "url").rstrip("/"))
        token_file = os.path.expanduser(_text(where, entry, "token_file"))
        try:
            with open(token_file, encoding="utf-8", errors="replace") as handle:
                check_private(handle.fileno(), token_file, "token")
                token = handle.read(16384).strip()
        except OSError as exc:
            raise RequestError(f"{where}: cannot read token_file {shown(token_file)} "
                               f"({exc.strerror})") from None
        except OpenToOthers as exc:
            raise RequestError(f"{where}: token_file {shown(token_file)}: {exc}") from None
        if not token or not token.isascii() or not token.isprintable():
            raise RequestError(f"{where}: token_file {shown(token_file)} holds no token (one "
                               "line of printable characters, as plus_token prints it)")
        user = _text(where, entry, "user", required=False) or getpass.getuser()
        ca_cert = _text(where, entry, "ca_cert", required=False)
        ca_cert = os.path.expanduser(ca_cert) if ca_cert else None
        try:
            sites[str(name)] = Site(str(name), url, token, parse_name(user, f"{where}: user"),
                                    ca_cert)
        except ssl.SSLError:            # an OSError too: first
            raise RequestError(f"{where}: ca_cert {shown(ca_cert)} holds no PEM certificate") \
                from None
        except OSError as exc:
            raise RequestError(f"{where}: cannot read ca_cert {shown(ca_cert)} "
                               f"({exc.strerror})") from None
    return sites


def _url(where: str, url: str) -> str:
    """``url`` if it is http(s) with a host, and plain http only to loopback."""
    parts = urllib.parse.urlsplit(url)
    try:
        valid = parts.scheme in ("http", "https") and parts.hostname and parts.port != 0
    except ValueError:                  # a port that is not a number up to 65535
        valid = False
    if not valid:
        raise RequestError(f"{where}: url '{shown(url)}' must be http:// or https:// with a host "
                           "(and a port from 1 to 65535)")
    if parts.scheme == "http" and not loopback(parts.hostname):
        raise RequestError(f"{where}: url '{shown(url)}' would send the token in clear off this "
                           "host; accepted: https://, or http:// to loopback (127.0.0.0/8, ::1, "
                           "localhost)")
    return url
