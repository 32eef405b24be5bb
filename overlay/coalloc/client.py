"""One site's HTTP API as the coordinator uses it, every call bounded by a
timeout. Whatever goes wrong is a SiteError whose ``kind`` says what:
``down`` (no connection), ``timeout``, ``token`` (401), ``refused`` (the
site said no: 4xx), ``garbage`` (an answer that is not the API's)."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

from overlay.coalloc.sites import Site
from overlay.limits import shown

MAX_ANSWER = 8 << 20


class SiteError(Exception):
    def __init__(self, site: str, kind: str, message: str, status: int | None = None) -> None:
        super().__init__(f"site {site}: {message}")
        self.site, self.kind, self.status = site, kind, status


class SiteClient:
    def __init__(self, site: Site, timeout: float = 10.0) -> None:
        self.site, self.timeout = site, timeout

    def _call(self, method: str, path: str, body: dict | None = None,
              headers: dict | None = None):
        request = urllib.request.Request(
            self.site.url + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.site.token}",
                     "Content-Type": "application/json", **(headers or {})})
        name = self.site.name
        try:
            with urllib.request.urlopen(request, timeout=self.timeout,
                                        context=self.site.context) as response:
                raw = response.read(MAX_ANSWER + 1)
        except urllib.error.HTTPError as exc:
            try:
                error = json.loads(exc.read(MAX_ANSWER)).get("error") or exc.reason
            except (ValueError, AttributeError, OSError):
                error = exc.reason
            kind = "token" if exc.code == 401 else "refused" if exc.code < 500 else "down"
            raise SiteError(name, kind, f"{exc.code} {shown(str(error))}", exc.code) from None
        except TimeoutError:
            raise SiteError(name, "timeout", f"no answer within {self.timeout:g} s") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            kind = "timeout" if isinstance(reason, TimeoutError) else "down"
            raise SiteError(name, kind, f"unreachable ({shown(str(reason))})") from None
        try:
            if len(raw) > MAX_ANSWER:
                raise ValueError("too long")
            return json.loads(raw)
        except ValueError:
            raise SiteError(name, "garbage", "answered something that is not the API's JSON") \
                from None

    def _expect(self, answer, check, what: str):
        try:
            if check(answer):
                return answer
        except (KeyError, TypeError, IndexError):
            pass
        raise SiteError(self.site.name, "garbage", f"answered {what} without its fields")

    def resquery(self, needed: int, earliest: int, latest: int, resources: str) -> list[tuple[int, int]]:
        answer = self._call("POST", "/ggf/resquery", {
            "UserID": self.site.user, "TimeNeeded": f"{needed}s",
            "TimeSpec": f"{earliest},{latest}", "ResourceList": resources})
        self._expect(answer, lambda a: all(isinstance(r["STime"], int) and
                                           isinstance(r["EndSTime"], int) for r in a["ranges"]),
                     "RESQUERY")
        return [(r["STime"], r["EndSTime"]) for r in answer["ranges"]]

    def prepare(self, needed: int, start: int, resources: str, key: str) -> dict:
        """A pending (-T) reservation at ``start``, made once whatever the retries."""
        answer = self._call("POST", "/ggf/setres", {
            "UserID": self.site.user, "TimeNeeded": f"{needed}s", "StartTime": str(start),
            "ResourceList": resources, "Transactional": True}, {"Idempotency-Key": key})
        return self._expect(answer, lambda a: isinstance(a["reservation"]["id"], int) and
                            isinstance(a["ResKey"], str), "SETRES")

    def find(self, key: str) -> dict | None:
        """The reservation this user made there with ``key``, if any."""
        answer = self._call("GET", "/reservations?" + urllib.parse.urlencode(
            {"idempotency_key": key, "user": self.site.user}))
        found = self._expect(answer, lambda a: isinstance(a, list) and len(a) <= 1, "a listing")
        return found[0] if found else None

    def act(self, ar_id: int, action: str) -> dict:
        """commit, abort or cancel."""
        answer = self._call("POST", f"/reservations/{ar_id}/{action}?" + urllib.parse.urlencode(
            {"user": self.site.user}))
        return self._expect(answer, lambda a: a["id"] == ar_id, action)

    def move(self, ar_id: int, start: int) -> dict:
        """A pending (-T) move of the AR's window to ``start``, its length kept."""
        answer = self._call("PATCH", f"/reservations/{ar_id}?" + urllib.parse.urlencode(
            {"user": self.site.user}), {"start": start, "transactional": True})
        return self._expect(answer, lambda a: a["id"] == ar_id, "a modify")

    def show(self, ar_id: int) -> dict:
        answer = self._call("GET", f"/reservations/{ar_id}?" + urllib.parse.urlencode(
            {"user": self.site.user}))
        return self._expect(answer, lambda a: a["id"] == ar_id, "an AR")
