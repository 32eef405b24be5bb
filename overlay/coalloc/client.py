"""One site's HTTP API as the coordinator uses it. Each call, whole
(connect, request, every byte of the answer), ends within ``timeout``: a
site that drips its answer is cut off at the deadline, not waited for read
by read. No redirect is followed: the token is for the site alone.
Whatever goes wrong is a SiteError whose ``kind`` says what: ``down`` (no
connection, or a 5xx), ``timeout``, ``token`` (401), ``refused`` (the site
said no: 4xx), ``garbage`` (an answer that is not the API's: not HTTP, not
its JSON, too long, nested too deeply, a redirect)."""

from __future__ import annotations

import email.utils
import http.client
import io
import json
import socket
import time
import urllib.parse

from overlay.coalloc.sites import Site
from overlay.language.limits import shown

MAX_AHEAD = 3600
"""Seconds a site's clock may run ahead of ours (its answers' Date); a site
further ahead is refused, for a window it would move or hold elsewhere."""
MAX_ANSWER = 8 << 20
MAX_RANGES = 100_000
"""RESQUERY ranges taken from one site; a site answering more is refused
(a narrower window asks for fewer)."""


class SiteError(Exception):
    def __init__(self, site: str, kind: str, message: str, status: int | None = None) -> None:
        super().__init__(f"site {site}: {message}")
        self.site, self.kind, self.status = site, kind, status


def _left(deadline: float) -> float:
    """Seconds until ``deadline``; TimeoutError once it has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


class _Deadline(io.RawIOBase):
    """A connected socket (plain or TLS) as http.client uses it, whose every
    read and write may wait only until the call's deadline. The call closes
    the socket itself: http.client closes its own as soon as it has read
    the headers of an answer that ends with the connection."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self.sock, self.deadline = sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        self.sock.settimeout(_left(self.deadline))
        return self.sock.recv_into(buffer)

    def sendall(self, data: bytes) -> None:
        self.sock.settimeout(_left(self.deadline))
        self.sock.sendall(data)

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(self)

    def close(self) -> None:
        pass


def _json(raw: bytes):
    """The answer's JSON; ValueError if it is not JSON, longer than
    MAX_ANSWER or nested deeper than the parser's recursion bound."""
    if len(raw) > MAX_ANSWER:
        raise ValueError(f"longer than {MAX_ANSWER} bytes")
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _is_ar(answer) -> bool:
    """An AR as the API shows it, with the fields the coordinator reads."""
    pending = answer["pending"]
    return (isinstance(answer["id"], int) and isinstance(answer["state"], str)
            and (pending is None or isinstance(pending["operation"], str)))


def _ahead(date: str | None) -> int:
    """Whole seconds the clock that wrote an HTTP Date header (RFC 9110)
    runs ahead of ours; 0 without one, or with one that cannot be read."""
    try:
        return max(0, int(email.utils.parsedate_to_datetime(date).timestamp() - time.time()))
    except (TypeError, ValueError, IndexError, OverflowError):
        return 0


class SiteClient:
    def __init__(self, site: Site, timeout: float = 10.0) -> None:
        self.site, self.timeout = site, timeout
        self.ahead = 0
        """How far the site's clock ran ahead of ours at its last RESQUERY:
        a common start must lie ahead of its clock too, or the site would
        move it to its now."""
        parts = urllib.parse.urlsplit(site.url)
        self.host, self.base = parts.hostname, parts.path
        self.port = parts.port or (443 if parts.scheme == "https" else 80)

    def _exchange(self, method: str, path: str, body: bytes | None,
                  headers: dict) -> tuple[http.client.HTTPResponse, bytes]:
        """The response to one request and its first MAX_ANSWER + 1 bytes,
        all of it by the deadline."""
        deadline = time.monotonic() + self.timeout
        sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        try:
            if self.site.context is not None:
                sock.settimeout(_left(deadline))
                sock = self.site.context.wrap_socket(sock, server_hostname=self.host)
            connection = http.client.HTTPConnection(self.host, self.port)
            connection.sock = _Deadline(sock, deadline)
            connection.request(method, self.base + path, body, headers)
            response = connection.getresponse()
            return response, response.read(MAX_ANSWER + 1)
        finally:
            sock.close()

    def _call(self, method: str, path: str, body: dict | None = None,
              headers: dict | None = None, dates: list[str | None] | None = None):
        """The site's answer; ``dates`` gets its Date header."""
        name = self.site.name
        try:
            response, raw = self._exchange(
                method, path, None if body is None else json.dumps(body).encode(),
                {"Authorization": f"Bearer {self.site.token}",
                 "Content-Type": "application/json", **(headers or {})})
        except TimeoutError:
            raise SiteError(name, "timeout", f"no answer within {self.timeout:g} s") from None
        except OSError as exc:
            raise SiteError(name, "down", f"unreachable ({shown(str(exc))})") from None
        except http.client.HTTPException as exc:
            raise SiteError(name, "garbage", f"answered something that is not HTTP "
                                             f"({type(exc).__name__})") from None
        status = response.status
        if dates is not None:
            dates.append(response.getheader("Date"))
        if 300 <= status < 400:
            raise SiteError(name, "garbage", f"answered {status} redirecting to "
                            f"'{shown(response.getheader('Location') or '')}'; no redirect is "
                            "followed (the token is for the site alone): put the site's own "
                            "URL in the sites file", status)
        try:
            answer = _json(raw)
        except ValueError as exc:
            if status < 400:
                raise SiteError(name, "garbage", "answered something that is not the API's "
                                                 f"JSON ({shown(str(exc))})") from None
            answer = None
        if status >= 400:
            error = answer.get("error") if isinstance(answer, dict) else None
            kind = "token" if status == 401 else "refused" if status < 500 else "down"
            raise SiteError(name, kind, f"{status} {shown(str(error or response.reason))}",
                            status)
        return answer

    def _expect(self, answer, check, what: str):
        try:
            if check(answer):
                return answer
        except (KeyError, TypeError, IndexError):
            pass
        raise SiteError(self.site.name, "garbage", f"answered {what} without its fields")

    def resquery(self, needed: int, earliest: int, latest: int, resources: str) -> list[tuple[int, int]]:
        dates: list[str | None] = []
        answer = self._call("POST", "/ggf/resquery", {
            "UserID": self.site.user, "TimeNeeded": f"{needed}s",
            "TimeSpec": f"{earliest},{latest}", "ResourceList": resources}, dates=dates)
        self.ahead = _ahead(dates[0])
        if self.ahead > MAX_AHEAD:
            raise SiteError(self.site.name, "garbage", f"its clock runs {self.ahead} s ahead of "
                            f"ours (at most {MAX_AHEAD} s are taken): set its clock right")
        self._expect(answer, lambda a: isinstance(a["ranges"], list), "RESQUERY")
        if len(answer["ranges"]) > MAX_RANGES:
            raise SiteError(self.site.name, "garbage", f"answered RESQUERY with "
                            f"{len(answer['ranges'])} ranges; at most {MAX_RANGES} are taken "
                            "(a later -s or an earlier -E asks for fewer)")
        self._expect(answer, lambda a: all(isinstance(r["STime"], int) and
                                           isinstance(r["EndSTime"], int) and
                                           r["STime"] <= r["EndSTime"] for r in a["ranges"]),
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
        found = self._expect(answer, lambda a: isinstance(a, list) and len(a) <= 1 and
                             all(map(_is_ar, a)), "a listing")
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
        return self._expect(answer, lambda a: a["id"] == ar_id and _is_ar(a), "an AR")
