"""Identities from the site's OpenID provider (issue 27): a real provider
(node-oidc-provider, OpenID Certified) signs users in with the
authorization code and PKCE, and the API takes its JWT access tokens,
finding the key by kid in the provider's JWKS, again after the provider
rotates its keys. Refused, each by name: another issuer, another audience,
an algorithm other than RS256 and ES256 (HS256 with the public key as its
secret, none), an expired token, an unknown user, and a token naming root,
a system account or a manager. The calendar page signs in through the
provider in Chromium."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import time

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from daemon_harness import Daemon
from http_harness import answering, auth, free_port, window
from oidc_harness import CLIENT, Provider

RESOURCE = "https://plus.example.org/api"
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def site():
    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    provider = Provider(free_port(), RESOURCE, [origin + "/web/"], [origin]).start()
    daemon = Daemon(f"http: {{address: '127.0.0.1:{port}', oidc: {{issuer: '{provider.issuer}', "
                    f"audience: '{RESOURCE}', client_id: {CLIENT}}}}}\n")
    try:
        daemon.start()
        yield daemon, answering(daemon, port), provider
    finally:
        daemon.cleanup()
        provider.cleanup()


def whoami(url: str, bearer: str) -> httpx.Response:
    return httpx.get(url + "/whoami", headers=auth(bearer))


def test_a_user_signed_in_at_the_provider_uses_the_api_as_themselves(site):
    daemon, url, provider = site
    bearer = provider.sign_in("plusu1")
    assert jwt.get_unverified_header(bearer)["alg"] == "RS256"
    assert whoami(url, bearer).json() == {"user": "plusu1", "manager": False}
    made = httpx.post(url + "/reservations", headers=auth(bearer), json={**window(5), "nodes": 1})
    assert made.status_code == 201 and made.json()["owner"] == "plusu1"
    daemon.ok("plusu1", "plus_destroy", "-r", str(made.json()["id"]))


def test_an_es256_token_is_taken_too(site):
    _, url, provider = site
    assert whoami(url, provider.mint("ES256", preferred_username="plusu2")).json()["user"] == \
        "plusu2"


def test_keys_the_provider_rotates_are_fetched_again(site):
    _, url, provider = site
    before = provider.sign_in("plusu1")
    assert whoami(url, before).status_code == 200      # the old keys are held now
    provider.stop()
    provider.rotate()
    provider.start()
    after = provider.sign_in("plusu1")
    assert jwt.get_unverified_header(after)["kid"] != jwt.get_unverified_header(before)["kid"]
    deadline = time.monotonic() + 30      # fetched again at most every 10 s
    while (answer := whoami(url, after)).status_code != 200:
        assert answer.status_code == 401 and "has no key" in answer.json()["error"]
        assert time.monotonic() < deadline, answer.text
        time.sleep(0.5)
    gone = whoami(url, before)
    assert gone.status_code == 401 and "has no key" in gone.json()["error"]


def _other_provider_token(provider: Provider) -> str:
    """Signed by a key the provider never published, under its issuer."""
    other = Provider(free_port(), RESOURCE, provider.redirect_uris, provider.origins)
    try:
        kid = other.kid("RS256")
        return jwt.encode({"iss": provider.issuer, "aud": RESOURCE, "iat": int(time.time()),
                           "exp": int(time.time()) + 300, "preferred_username": "plusu1"},
                          other.keys[kid], algorithm="RS256", headers={"kid": kid})
    finally:
        other.cleanup()


def _hs256(header: dict, claims: dict, secret: bytes) -> str:
    """The algorithm-confusion attack: HS256 keyed with the provider's public
    key (PyJWT refuses to make one, so it is made by hand)."""
    def part(value: object) -> bytes:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=")
    signed = part(header) + b"." + part(claims)
    mac = hmac.new(secret, signed, hashlib.sha256).digest()
    return (signed + b"." + base64.urlsafe_b64encode(mac).rstrip(b"=")).decode()


def test_tokens_the_provider_did_not_issue_for_this_api_are_refused(site):
    _, url, provider = site
    now = int(time.time())
    public = provider.keys[provider.kid("RS256")].public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    confused = _hs256({"alg": "HS256", "kid": provider.kid("RS256")},
                      {"iss": provider.issuer, "aud": RESOURCE, "exp": now + 300, "iat": now,
                       "preferred_username": "plusu1"}, public)
    unsigned = jwt.encode({"iss": provider.issuer, "aud": RESOURCE, "exp": now + 300,
                           "iat": now, "preferred_username": "plusu1"}, None, algorithm="none")
    cases = [
        (provider.mint(iss="https://idp.elsewhere.example"),
         "the token's issuer https://idp.elsewhere.example is neither this plus_scheduler nor "
         "the site's identity provider"),
        (provider.mint(aud="https://another.example/api"), "Audience doesn't match"),
        (confused, "signed with HS256; accepted: RS256, ES256"),
        (unsigned, "signed with none; accepted: RS256, ES256"),
        (provider.mint(iat=now - 7200, exp=now - 3600), "has expired: sign in again"),
        (provider.mint(exp=None), 'Token is missing the "exp" claim'),
        (provider.mint(preferred_username=None), "has no preferred_username claim"),
        (_other_provider_token(provider), "the identity provider has no key"),
        ("not.a.token", "the token is not valid"),
    ]
    for bearer, why in cases:
        answer = whoami(url, bearer)
        assert answer.status_code == 401 and why in answer.json()["error"], (why, answer.text)


@pytest.mark.parametrize("name, why", [
    ("root", "root or a system account (uid 0, below min_uid 1000)"),
    ("daemon", "root or a system account (uid 1, below min_uid 1000)"),
    ("nobody", "root or a system account (uid 65534, below min_uid 1000)"),
    ("plusmgr", "a manager"),
])
def test_a_token_naming_root_a_system_account_or_a_manager_is_refused(site, name, why):
    _, url, provider = site
    for bearer in (provider.sign_in(name), provider.mint(preferred_username=name)):
        answer = whoami(url, bearer)
        assert answer.status_code == 403
        assert answer.json()["error"] == (f"the identity provider's token names {name}, {why}: "
                                          "such accounts act only on this host (plus_token)")


def test_a_token_naming_a_user_unknown_here_is_refused(site):
    _, url, provider = site
    answer = whoami(url, provider.sign_in("nosuchuser"))
    assert answer.status_code == 403
    assert answer.json()["error"] == "user nosuchuser is not known on this host"


def test_the_page_is_told_how_to_sign_in_and_may_call_only_the_providers_origin(site):
    _, url, provider = site
    config = httpx.get(url + "/web/config").json()["oidc"]
    assert config["client_id"] == CLIENT and config["resource"] == RESOURCE
    assert config["authorization_endpoint"].startswith(provider.issuer)
    page = httpx.get(url + "/web/")
    assert f"connect-src 'self' {provider.issuer};" in page.headers["content-security-policy"]


def test_the_calendar_page_signs_in_through_the_provider(site):
    playwright = pytest.importorskip("playwright.sync_api", reason="the test command installs "
                                     "Playwright (bash scripts/test.sh)")
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: the test command installs Debian's chromium")
    _, url, _ = site
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(url + "/web/")
            page.click("#provider-sign-in")
            page.fill("input[name=login]", "plusu2")
            page.fill("input[name=password]", "any")
            page.click("button[type=submit]")
            page.click("button[type=submit]")               # consent
            page.wait_for_selector("body[data-ready=yes]", timeout=15000)
            assert page.locator("#who").inner_text() == "plusu2"
            assert page.url == url + "/web/"                  # the code left the address
        finally:
            browser.close()
