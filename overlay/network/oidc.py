"""Tokens of the site's OpenID Connect provider (``http.oidc`` in
plus.yaml), as slurmrestd's auth/jwt with ``jwks=`` and Open OnDemand's
``oidc_remote_user_claim`` take them: a JWT access token signed by the
provider (RS256 or ES256 only, the key found by ``kid`` in its JWKS),
issued by ``issuer``, for ``audience``, not expired, whose ``user_claim``
names the local user. Which local users a token may name is the daemon's
to decide (never root, a system account or a manager).

The JWKS is fetched from the provider (its discovery document names it,
unless ``jwks_uri`` does) when first needed, kept, and fetched again when
a token names a kid it does not hold (the provider rotated its keys), at
most once per REFRESH_BACKOFF, so tokens with invented kids cannot make
the daemon hammer the provider; and at least every MAX_AGE seconds.
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable

from overlay.contract import settings
from overlay.language import limits
from overlay.language.request import RequestError, parse_name
from overlay.log.ratelog import RateLimitedLog
from overlay.network.loopback import loopback
from overlay.network.tokens import TokenRefused

log = logging.getLogger("plus.oidc")
ALGORITHMS = ("RS256", "ES256")
"""Asymmetric only: a provider's public key can never sign a token here."""
KEY_TYPES = {"RS256": "RSA", "ES256": "EC"}
REFRESH_BACKOFF = 10.0
MAX_AGE = 3600.0
FETCH_TIMEOUT = 5.0
FETCH_BYTES = 1 << 20
LEEWAY = 30
"""Seconds of clock difference with the provider allowed on exp and iat."""


@dataclass(frozen=True)
class OidcSettings:
    issuer: str
    audience: str
    user_claim: str = "preferred_username"
    jwks_uri: str = ""                  # default: the discovery document's
    client_id: str = ""                 # the calendar page's (a public client, PKCE)
    scope: str = "openid"
    ca_cert: str = ""                   # for an https provider with a CA of its own

    @property
    def origin(self) -> str:
        """Where the page calls the provider's token endpoint from the browser."""
        parts = urllib.parse.urlsplit(self.issuer)
        return f"{parts.scheme}://{parts.netloc}"


def _url(value: Any) -> str | None:
    """An https URL, or http to loopback only (as plain HTTP is served)."""
    if not isinstance(value, str):
        return None
    parts = urllib.parse.urlsplit(value)
    if parts.scheme == "https" and parts.hostname:
        return value.rstrip("/")
    if parts.scheme == "http" and parts.hostname and loopback(parts.hostname):
        return value.rstrip("/")
    return None



_URL = settings.Check("an https:// URL (http:// only on loopback)", _url)
CHECKS = {
    "issuer": _URL, "audience": settings.text(), "user_claim": settings.text(),
    "jwks_uri": _URL, "client_id": settings.text(), "scope": settings.text(),
    "ca_cert": settings.path(absolute=False),
}


def load(options: Any, relative: Callable[[str], str]) -> OidcSettings:
    """``http.oidc``'s settings; ValueError naming what is wrong."""
    values = settings.read_section("http.oidc", options, CHECKS)
    for key in ("issuer", "audience"):
        if key not in values:
            raise ValueError(f"http.oidc.{key}: required (the provider's issuer URL and the "
                             "audience its tokens for this API carry)")
    if values.get("ca_cert"):
        values["ca_cert"] = relative(values["ca_cert"])
    return OidcSettings(**values)


class Provider:
    """The provider's keys, fetched and kept, and the user a token names."""

    def __init__(self, chosen: OidcSettings, fetch: Callable[[str], Any] | None = None) -> None:
        self.settings = chosen
        self._fetch = fetch or self._get
        self._keys: dict[str, Any] = {}
        self._discovered: dict | None = None
        self._fetched_at = -MAX_AGE
        self._tried_at = -REFRESH_BACKOFF
        self._lock = threading.Lock()
        self._discovering = threading.Lock()
        self._discovery_tried = -REFRESH_BACKOFF
        self._discovery_error: Exception = OSError("not fetched yet")
        self._warnings = RateLimitedLog(log)
        self._context = ssl.create_default_context(cafile=chosen.ca_cert or None)

    @property
    def issuer(self) -> str:
        return self.settings.issuer

    def user(self, token: str) -> str:
        """The local user name the token's claim gives, or TokenRefused."""
        import jwt
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError as exc:
            raise TokenRefused(f"the token is not valid ({exc})") from None
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in ALGORITHMS:
            raise TokenRefused(f"the identity provider's token is signed with "
                               f"{limits.shown(alg)}; accepted: {', '.join(ALGORITHMS)}")
        if not isinstance(kid, str):
            raise TokenRefused("the identity provider's token names no key (kid)")
        key = self._key(kid)
        if key.key_type != KEY_TYPES[alg]:
            raise TokenRefused(f"the identity provider's key {limits.shown(kid)} is not one for "
                               f"{alg}")
        chosen = self.settings
        try:
            claims = jwt.decode(token, key.key, algorithms=[alg], audience=chosen.audience,
                                issuer=chosen.issuer, leeway=LEEWAY,
                                options={"require": ["exp", "iat", "iss", "aud"]})
        except jwt.ExpiredSignatureError:
            raise TokenRefused("the identity provider's token has expired: sign in again") \
                from None
        except jwt.InvalidTokenError as exc:
            raise TokenRefused(f"the identity provider's token is not valid ({exc})") from None
        name = claims.get(chosen.user_claim)
        if not isinstance(name, str):
            raise TokenRefused(f"the identity provider's token has no {chosen.user_claim} "
                               "claim naming a user (http.oidc.user_claim)")
        try:
            return parse_name(name, chosen.user_claim)
        except RequestError as exc:
            raise TokenRefused(str(exc)) from None

    def sign_in(self) -> dict | None:
        """What the calendar page needs to sign in through the provider;
        None where it has no client id (http.oidc.client_id)."""
        chosen = self.settings
        if not chosen.client_id:
            return None
        found = self._discovery()
        return {"issuer": chosen.issuer, "client_id": chosen.client_id, "scope": chosen.scope,
                "resource": chosen.audience,
                "authorization_endpoint": found.get("authorization_endpoint"),
                "token_endpoint": found.get("token_endpoint")}

    def _key(self, kid: str):
        now = time.monotonic()
        key = self._keys.get(kid)
        if key is not None and now - self._fetched_at < MAX_AGE:
            return key
        with self._lock:
            key = self._keys.get(kid)
            stale = time.monotonic() - self._fetched_at >= MAX_AGE
            if (key is None or stale) and time.monotonic() - self._tried_at >= REFRESH_BACKOFF:
                self._refresh()
            key = self._keys.get(kid)
        if key is None:
            raise TokenRefused(f"the identity provider has no key {limits.shown(kid)} (its keys "
                               f"are fetched again at most every {REFRESH_BACKOFF:g} s)")
        return key

    def _refresh(self) -> None:
        """Fetch the JWKS; on failure keep the keys held (and say so, rate-limited)."""
        import jwt
        self._tried_at = time.monotonic()
        try:
            uri = self.settings.jwks_uri or self._discovery().get("jwks_uri")
            if not isinstance(uri, str) or _url(uri) is None:
                raise ValueError(f"the discovery document names no usable jwks_uri "
                                 f"({limits.shown(uri)})")
            document = self._fetch(uri)
            keys = {}
            for entry in document.get("keys", []) if isinstance(document, dict) else []:
                if isinstance(entry, dict) and isinstance(entry.get("kid"), str) and \
                        entry.get("use", "sig") == "sig":
                    try:
                        keys[entry["kid"]] = jwt.PyJWK(entry)
                    except jwt.PyJWKError:
                        continue            # a key of a kind not taken here
        except (OSError, ValueError, TokenRefused) as exc:
            self._warnings.warning("jwks", "cannot fetch the identity provider's keys: %s", exc)
            return
        self._keys, self._fetched_at = keys, time.monotonic()

    def _discovery(self) -> dict:
        """The provider's discovery document, fetched once it is needed; a
        failed fetch is not tried again for REFRESH_BACKOFF seconds (its
        error is given meanwhile), and one at a time: a page anyone may load
        asks for it."""
        if self._discovered is not None:
            return self._discovered
        if not self._discovering.acquire(blocking=False):
            raise OSError("the identity provider's discovery document is being fetched; try "
                          "again in a moment")
        try:
            if self._discovered is None:
                if time.monotonic() - self._discovery_tried < REFRESH_BACKOFF:
                    raise self._discovery_error
                self._discovery_tried = time.monotonic()
                try:
                    found = self._fetch(f"{self.settings.issuer}/.well-known/openid-configuration")
                    if not isinstance(found, dict) or found.get("issuer") != self.settings.issuer:
                        raise ValueError("the discovery document does not name http.oidc.issuer "
                                         "as its issuer")
                except (OSError, ValueError) as exc:
                    self._discovery_error = exc
                    self._warnings.warning("discovery", "cannot fetch the identity provider's "
                                           "discovery document: %s", exc)
                    raise
                self._discovered = found
            return self._discovered
        finally:
            self._discovering.release()

    def _get(self, url: str) -> Any:
        """A JSON document from the provider: bounded in time and size,
        following no redirect."""
        opener = urllib.request.build_opener(_NoRedirect, urllib.request.HTTPSHandler(
            context=self._context))
        try:
            with opener.open(url, timeout=FETCH_TIMEOUT) as answer:
                raw = answer.read(FETCH_BYTES + 1)
        except urllib.error.HTTPError as exc:
            raise ValueError(f"{url} answered {exc.code}") from None
        except urllib.error.URLError as exc:
            raise OSError(f"{url}: {exc.reason}") from None
        if len(raw) > FETCH_BYTES:
            raise ValueError(f"{url} answered more than {FETCH_BYTES} bytes")
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            raise ValueError(f"{url} answered something that is not JSON") from None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None
