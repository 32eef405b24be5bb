"""Bearer tokens for the HTTP API: JSON Web Tokens (HS256, PyJWT), as
slurmrestd's, naming a user.

plus_token asks the daemon over its socket, which knows the caller from
the peer credentials; the daemon signs with a key only its own user reads
(state_dir/token.key, mode 0600, made at the first start). A token proves
who holds it until it expires or its user revokes every token issued so
far (plus_token -R), which the daemon keeps as a per-user 'not before'
time (state_dir/token-revocations.json), so revoking costs nothing per
token.
"""

from __future__ import annotations

import os
import secrets
import threading
import time

from overlay import statefile

ISSUER = "plus_scheduler"
_ALGORITHM = "HS256"


class TokenRefused(Exception):
    """A token that does not prove its user: the text says why."""


class Tokens:
    def __init__(self, state_path: str) -> None:
        self.key = statefile.secret_key(os.path.join(state_path, "token.key"), "token signing key")
        self.revocations_path = os.path.join(state_path, "token-revocations.json")
        self.not_before: dict[str, float] = statefile.load(self.revocations_path,
                                                           "token revocations")
        self.lock = threading.Lock()

    def issue(self, user: str, lifespan: int) -> tuple[str, int]:
        """A token for ``user``, valid ``lifespan`` seconds; and when it expires."""
        import jwt  # only a daemon whose API is used pays for PyJWT and cryptography
        now = time.time()
        expires = int(now) + lifespan
        claims = {"iss": ISSUER, "sub": user, "iat": now, "exp": expires,
                  "jti": secrets.token_hex(12)}
        return jwt.encode(claims, self.key, algorithm=_ALGORITHM), expires

    def user(self, token: str) -> str:
        """The user a token proves, or TokenRefused."""
        import jwt
        try:
            claims = jwt.decode(token, self.key, algorithms=[_ALGORITHM], issuer=ISSUER,
                                options={"require": ["exp", "iat", "sub", "iss"]})
        except jwt.ExpiredSignatureError:
            raise TokenRefused("the token has expired: get a new one with plus_token") from None
        except jwt.InvalidTokenError as exc:
            raise TokenRefused(f"the token is not valid ({exc})") from None
        user = claims["sub"]
        if not isinstance(user, str) or not isinstance(claims["iat"], (int, float)):
            raise TokenRefused("the token is not valid (its subject or issue time is malformed)")
        if claims["iat"] < self.not_before.get(user, 0):
            raise TokenRefused(f"the token was revoked (plus_token -R by or for {user})")
        return user

    def revoke(self, user: str) -> None:
        """Every token of ``user`` issued until now stops working."""
        with self.lock:
            self.not_before[user] = time.time()
            statefile.save(self.revocations_path, self.not_before, mode=0o600)
