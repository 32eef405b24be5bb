"""The sites file: each site's API, the token to use there, its CA
certificate (for https), and the UserID there (default: the local user).

    sites:
      A: {url: "https://a.example:6830", token_file: ~/a.token, ca_cert: /etc/ssl/a.pem}
      B: {url: "http://127.0.0.1:6831", token_file: ~/b.token, user: plusu1}

A token file others may read is refused, as ssh refuses such a private key:
the token goes with every request.
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass

from overlay.config import read_yaml
from overlay.limits import shown
from overlay.request import RequestError, parse_name
from overlay.secretfile import OpenToOthers, check_private

MAX_SITES = 16


@dataclass(frozen=True)
class Site:
    name: str
    url: str
    token: str
    user: str
    ca_cert: str | None = None


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
        url = _text(where, entry, "url").rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise RequestError(f"{where}: url must start with http:// or https://")
        token_file = os.path.expanduser(_text(where, entry, "token_file"))
        try:
            with open(token_file, encoding="utf-8") as handle:
                check_private(handle.fileno(), token_file, "token")
                token = handle.read(16384).strip()
        except OSError as exc:
            raise RequestError(f"{where}: cannot read token_file {shown(token_file)} "
                               f"({exc.strerror})") from None
        except OpenToOthers as exc:
            raise RequestError(f"{where}: token_file {shown(token_file)}: {exc}") from None
        user = _text(where, entry, "user", required=False) or getpass.getuser()
        ca_cert = _text(where, entry, "ca_cert", required=False)
        sites[str(name)] = Site(str(name), url, token, parse_name(user, f"{where}: user"),
                                os.path.expanduser(ca_cert) if ca_cert else None)
    return sites
