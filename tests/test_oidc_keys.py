"""overlay.network.oidc's fetching on its own, with the provider's documents
stubbed: a page anyone may load, or tokens with invented key ids, must not
make the daemon fetch from the provider more than once per REFRESH_BACKOFF
(tests/test_oidc.py runs a real provider)."""

from __future__ import annotations

import json

import jwt
import pytest

from oidc_harness import new_key
from overlay.network import oidc
from overlay.network.oidc import OidcSettings, Provider
from overlay.network.tokens import TokenRefused

ISSUER = "https://idp.example.org"


class Documents:
    """The provider's documents, counting fetches; ``down`` makes each fail."""

    def __init__(self, jwks: list[dict]) -> None:
        self.jwks, self.down, self.fetched = jwks, False, []

    def __call__(self, url: str):
        self.fetched.append(url)
        if self.down:
            raise OSError(f"{url}: connection refused")
        if url.endswith("/.well-known/openid-configuration"):
            return {"issuer": ISSUER, "jwks_uri": ISSUER + "/jwks",
                    "authorization_endpoint": ISSUER + "/auth", "token_endpoint": ISSUER + "/token"}
        return {"keys": self.jwks}


def provider(documents: Documents) -> Provider:
    return Provider(OidcSettings(ISSUER, "api", client_id="page"), fetch=documents)


@pytest.fixture()
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(oidc.time, "monotonic", lambda: now[0])
    return now


def test_a_failing_discovery_is_fetched_again_only_after_the_backoff(clock):
    documents = Documents([])
    documents.down = True
    idp = provider(documents)
    for _ in range(50):
        with pytest.raises(OSError, match="connection refused"):
            idp.sign_in()
    assert len(documents.fetched) == 1
    clock[0] += oidc.REFRESH_BACKOFF
    documents.down = False
    assert idp.sign_in()["token_endpoint"] == ISSUER + "/token"
    assert len(documents.fetched) == 2


def test_invented_key_ids_fetch_the_keys_at_most_once_per_backoff(clock):
    key, jwk = new_key("RS256", "real")
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    documents = Documents([{**public, "kid": "real", "use": "sig"}])
    idp = provider(documents)
    good = jwt.encode({"iss": ISSUER, "aud": "api", "iat": 1, "exp": 2 ** 40,
                       "preferred_username": "plusu1"}, key, algorithm="RS256",
                      headers={"kid": "real"})
    assert idp.user(good) == "plusu1"
    keys_fetched = documents.fetched.count(ISSUER + "/jwks")
    for n in range(200):
        invented = jwt.encode({"iss": ISSUER}, key, algorithm="RS256", headers={"kid": f"k{n}"})
        with pytest.raises(TokenRefused, match="has no key"):
            idp.user(invented)
    assert documents.fetched.count(ISSUER + "/jwks") == keys_fetched     # within the backoff
    clock[0] += oidc.REFRESH_BACKOFF
    with pytest.raises(TokenRefused, match="has no key"):
        idp.user(invented)
    assert documents.fetched.count(ISSUER + "/jwks") == keys_fetched + 1
    assert idp.user(good) == "plusu1"                 # a known key needs no fetch
