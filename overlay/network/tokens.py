"""Bearer tokens for the HTTP API: JSON Web Tokens (HS256, PyJWT), as
slurmrestd's, naming a user.

plus_token asks the daemon over its socket, which knows the caller from
the peer credentials; the daemon signs with a key only its own user reads
(state_dir/token.key, mode 0600, made at the first start). A token proves
who holds it until it expires or its user revokes every token issued so
far (plus_token -R), which the daemon keeps as a per-user 'not before'
time (state_dir/token-revocations.json), so revoking costs nothing per
token.

plus_web's sign-in link carries a one-time code: a token of its own use,
valid five minutes, only with the daemon process that issued it (a restart
forgets which codes were used, so it refuses the old ones), exchanged once
for a session token by the page.
"""

from __future__ import annotations

import os
import secrets
import threading
import time

from overlay.kit import statefile

ISSUER = "plus_scheduler"
API, LOGIN = "api", "login"
LOGIN_LIFESPAN = 300
"""How long plus_web's sign-in link works: time to open it, and stale by
the time it is found in a scrollback or a shell history."""
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
        self.boot = secrets.token_hex(8)
        self._redeemed: dict[str, int] = {}     # sign-in codes used, until they expire

    def issue(self, user: str, lifespan: int, use: str = API) -> tuple[str, int]:
        """A token for ``user``, valid ``lifespan`` seconds; and when it
        expires. ``use`` LOGIN makes plus_web's one-time sign-in code, good
        only with this daemon process and only once."""
        import jwt  # only a daemon whose API is used pays for PyJWT and cryptography
        now = time.time()
        expires = int(now) + lifespan
        claims = {"iss": ISSUER, "sub": user, "iat": now, "exp": expires,
                  "jti": secrets.token_hex(12)}
        if use == LOGIN:
            claims.update(use=LOGIN, boot=self.boot)
        return jwt.encode(claims, self.key, algorithm=_ALGORITHM), expires

    def user(self, token: str) -> str:
        """The user a token proves, or TokenRefused."""
        claims = self._claims(token, "the token", "get a new one with plus_token")
        if claims.get("use", API) != API:
            raise TokenRefused("a sign-in code is not a token: open the link plus_web printed "
                               "in a browser")
        return claims["sub"]

    def redeem(self, code: str) -> str:
        """The user of plus_web's one-time sign-in code, which stops working."""
        claims = self._claims(code, "the sign-in link", "run plus_web again for a new one")
        if claims.get("use") != LOGIN:
            raise TokenRefused("the sign-in link does not carry a sign-in code: run plus_web")
        if claims.get("boot") != self.boot:
            raise TokenRefused("the sign-in link is from before plus_scheduler restarted: run "
                               "plus_web again for a new one")
        with self.lock:
            now = time.time()
            for used, expires in list(self._redeemed.items()):
                if expires < now:
                    del self._redeemed[used]
            if claims["jti"] in self._redeemed:
                raise TokenRefused("the sign-in link was used already: run plus_web again for "
                                   "a new one")
            self._redeemed[claims["jti"]] = claims["exp"]
        return claims["sub"]

    def _claims(self, token: str, what: str, renew: str) -> dict:
        """A token's checked claims, or TokenRefused naming ``what`` it is."""
        import jwt
        try:
            claims = jwt.decode(token, self.key, algorithms=[_ALGORITHM], issuer=ISSUER,
                                options={"require": ["exp", "iat", "sub", "iss", "jti"]})
        except jwt.ExpiredSignatureError:
            raise TokenRefused(f"{what} has expired: {renew}") from None
        except jwt.InvalidTokenError as exc:
            raise TokenRefused(f"{what} is not valid ({exc})") from None
        user = claims["sub"]
        if not isinstance(user, str) or not isinstance(claims["iat"], (int, float)) or \
                not isinstance(claims["jti"], str):
            raise TokenRefused(f"{what} is not valid (its subject, issue time or id is malformed)")
        if claims["iat"] < self.not_before.get(user, 0):
            raise TokenRefused(f"{what} was revoked (plus_token -R by or for {user})")
        return claims

    def revoke(self, user: str) -> None:
        """Every token of ``user`` issued until now stops working."""
        with self.lock:
            self.not_before[user] = time.time()
            statefile.save(self.revocations_path, self.not_before, mode=0o600)
