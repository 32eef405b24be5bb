"""A real OpenID provider for the tests (node-oidc-provider, installed by
scripts/test-oidc.sh, run with tests/oidc/provider.mjs), its keys made
here, and a user's sign-in through its development login form, as a
browser would go through it (authorization code with PKCE)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urljoin, urlparse

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

MODULE = "/opt/plus-oidc/node_modules/oidc-provider/lib/index.js"
SCRIPT = Path(__file__).with_name("oidc") / "provider.mjs"
CLIENT = "plus-calendar"


def new_key(alg: str, kid: str):
    """A private key for ``alg`` (RS256 or ES256), and its private JWK."""
    key = (rsa.generate_private_key(public_exponent=65537, key_size=2048) if alg == "RS256"
           else ec.generate_private_key(ec.SECP256R1()))
    algorithm = jwt.algorithms.RSAAlgorithm if alg == "RS256" else jwt.algorithms.ECAlgorithm
    jwk = json.loads(algorithm.to_jwk(key))
    jwk.pop("key_ops", None)              # the provider signs and verifies with it
    jwk.update(kid=kid, alg=alg, use="sig")
    return key, jwk


class Provider:
    """One provider on a loopback port: ``issuer``, its ``keys`` by kid."""

    def __init__(self, port: int, resource: str, redirect_uris: list[str],
                 origins: list[str], ttl: int = 600, alg: str = "RS256") -> None:
        if not os.path.exists(MODULE):
            raise RuntimeError(f"{MODULE} is missing: the test command installs it "
                               "(scripts/test-oidc.sh)")
        self.port, self.issuer = port, f"http://127.0.0.1:{port}"
        self.resource, self.redirect_uris, self.origins = resource, redirect_uris, origins
        self.ttl, self.alg = ttl, alg
        self.dir = Path(tempfile.mkdtemp(prefix="plus-oidc-"))
        self.keys: dict[str, object] = {}
        self.jwks: list[dict] = []
        self.process: subprocess.Popen | None = None
        self.rotate()

    def rotate(self) -> None:
        """New signing keys (an RSA and an EC one, new kids): the provider
        signs with them from its next start."""
        self.keys.clear()
        self.jwks = []
        for alg in ("RS256", "ES256"):
            kid = f"{alg.lower()}-{secrets.token_hex(4)}"
            key, jwk = new_key(alg, kid)
            self.keys[kid] = key
            self.jwks.append(jwk)
        if self.alg == "ES256":
            self.jwks.reverse()

    def kid(self, alg: str) -> str:
        return next(jwk["kid"] for jwk in self.jwks if jwk["alg"] == alg)

    def start(self) -> "Provider":
        config = self.dir / "config.json"
        config.write_text(json.dumps({
            "module": MODULE, "issuer": self.issuer, "port": self.port, "keys": self.jwks,
            "client_id": CLIENT, "redirect_uris": self.redirect_uris, "resource": self.resource,
            "origins": self.origins, "ttl": self.ttl, "alg": self.alg}))
        self.log = open(self.dir / "provider.log", "a")
        self.process = subprocess.Popen(["node", str(SCRIPT), str(config)], stdout=self.log,
                                        stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(self.issuer + "/.well-known/openid-configuration",
                          timeout=2).raise_for_status()
                return self
            except httpx.HTTPError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((self.dir / "provider.log").read_text()) from None
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.log.close()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def sign_in(self, user: str, redirect_uri: str | None = None) -> str:
        """``user``'s access token, through the authorization endpoint, the
        login and consent forms and the token endpoint, with PKCE."""
        redirect = redirect_uri or self.redirect_uris[0]
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
        state = secrets.token_urlsafe(16)
        with httpx.Client(timeout=10) as browser:
            answer = browser.get(self.issuer + "/auth?" + urlencode({
                "response_type": "code", "client_id": CLIENT, "redirect_uri": redirect,
                "scope": "openid", "state": state, "resource": self.resource,
                "code_challenge": challenge.rstrip(b"=").decode(),
                "code_challenge_method": "S256"}))
            for _ in range(8):                     # login, consent, back to the page
                if answer.is_redirect:
                    target = urljoin(str(answer.url), answer.headers["location"])
                    if target.startswith(redirect):
                        break
                    answer = browser.get(target)
                    continue
                form = answer.text
                action = re.search(r'<form[^>]* action="([^"]+)"', form)
                assert action, form[-2000:]
                fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"',
                                         form))
                if 'name="login"' in form:
                    fields.update(login=user, password="any")
                answer = browser.post(urljoin(str(answer.url), action.group(1)), data=fields)
            query = parse_qs(urlparse(target).query)
            assert query["state"] == [state], target
            token = httpx.post(self.issuer + "/token", data={
                "grant_type": "authorization_code", "code": query["code"][0],
                "redirect_uri": redirect, "client_id": CLIENT, "code_verifier": verifier,
                "resource": self.resource})
            token.raise_for_status()
            return token.json()["access_token"]

    def mint(self, alg: str = "RS256", kid: str | None = None, **claims) -> str:
        """A token signed with one of this provider's keys, with the claims
        a real one carries unless given: for the edge cases (expired, another
        audience, a system account) without waiting for them."""
        kid = kid or self.kid(alg)
        now = int(time.time())
        body = {"iss": self.issuer, "aud": self.resource, "iat": now, "exp": now + 300,
                "jti": secrets.token_hex(8), "sub": "plusu1", "preferred_username": "plusu1",
                "client_id": CLIENT, "scope": "openid", **claims}
        return jwt.encode({k: v for k, v in body.items() if v is not None}, self.keys[kid],
                          algorithm=alg, headers={"kid": kid, "typ": "at+jwt"})
