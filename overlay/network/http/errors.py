"""Every refusal of the API in one form, ``{"error", "status", "kind"}``
(Problem), whoever makes it: the daemon (Refusal), the schema (422, with
where and what was expected, never the value sent), routing (404, 405)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from overlay.language import limits
from overlay.network.http.refusal import Refusal
from overlay.wire import protocol

SHOWN_ERRORS = 3
"""Schema errors one refusal lists."""


def text(value: object) -> str:
    """A client's value as a refusal may quote it: bounded, printable, and
    encodable whatever it held."""
    return limits.shown(value).encode("utf-8", "backslashreplace").decode("utf-8")


def body(error: str, status: int, kind: str) -> dict:
    return {"error": error, "status": status, "kind": kind}


def _unfit(errors: list[dict]) -> str:
    """Where a request did not fit the schema, and what was expected."""
    parts = []
    for error in errors[:SHOWN_ERRORS]:
        where = ".".join(text(part) for part in error.get("loc", ()))
        parts.append(f"{where}: {text(error.get('msg', 'invalid'))}")
    more = len(errors) - SHOWN_ERRORS
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "") + \
        " (the schema is at /openapi.json)"


def install(app: FastAPI) -> None:
    """Answer every refusal of ``app`` as a Problem."""

    @app.exception_handler(Refusal)
    def refused(_request: Request, exc: Refusal) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else {}
        if exc.body.get("kind") in ("busy", "unavailable"):
            headers["Retry-After"] = "1"        # worth trying again; a limit is not
        return JSONResponse(exc.body, exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    def unfit(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(body(_unfit(list(exc.errors())), protocol.EXIT_USAGE, "invalid"), 422)

    @app.exception_handler(HTTPException)
    def routed(request: Request, exc: HTTPException) -> JSONResponse:
        where = f"{request.method} {text(request.url.path)}"
        if exc.status_code == 404:
            answer = body(f"no such endpoint: {where} (the endpoints are listed at "
                          "/openapi.json)", protocol.EXIT_USAGE, "unknown")
        elif exc.status_code == 405:
            allowed = (exc.headers or {}).get("Allow", "")
            answer = body(f"{where}: the method is not allowed here; allowed: {allowed}",
                          protocol.EXIT_USAGE, "invalid")
        else:
            answer = body(f"{where}: {text(exc.detail)}", protocol.EXIT_USAGE, "invalid")
        return JSONResponse(answer, exc.status_code, headers=exc.headers)
