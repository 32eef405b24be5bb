"""What the HTTP API answers when the daemon says no: the status for each
kind of refusal, and the body, as the commands would say it."""

from __future__ import annotations

STATUS = {"invalid": 400, "token": 401, "forbidden": 403, "unknown": 404, "capacity": 409,
          "conflict": 409, "limit": 409, "busy": 429, "unavailable": 503, "internal": 500,
          "unsupported": 501}


class Refusal(Exception):
    """The daemon said no (or could not be asked): the status and body."""

    def __init__(self, status: int, body: dict) -> None:
        super().__init__(body.get("error"))
        self.status, self.body = status, body
