"""The HTTP API: each endpoint is one of the commands' operations, sent
to the daemon's socket with the caller's bearer token, so it has the
commands' semantics, checks and refusal texts. A refusal's kind gives its
status: bad input 400 (422 when the body does not fit the schema), a
missing or bad token 401, not yours or not allowed 403, unknown 404, no
capacity, a race or a site limit (max_advance_reservations: the body
carries qrsub's exit status, 25) 409, a body over 1 MiB 413, too many
requests at once 429, the store unavailable or the daemon unreachable
503; 429 and 503 say Retry-After, since trying again later may succeed,
which a limit will not until the caller releases ARs. Every path is
under /v1; the first paths, without it, stay as aliases."""

from __future__ import annotations

from fastapi import Depends, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from pydantic import BaseModel, Field

from overlay.network.http import docs, errors, pages
from overlay.network.http.etags import ETags
from overlay.network.http.eventhub import EventHub
from overlay.network.http.gate import Gate
from overlay.network.http.parameters import known_parameters
from overlay.network.http.routes import API_ROUTERS, FIXED_ROUTERS
from overlay.network.http.routes.base import VERSION, Asker


class Problem(BaseModel):
    error: str
    status: int = Field(description="the exit status the command would have (qrsub's 25 "
                                    "at max_advance_reservations)")
    kind: str


BODY_LIMIT = 2 ** 20
STREAM_SLACK = 20
"""Seconds an event stream lasts beyond the daemon's answer time: within
the time a client has to take an answer (overlay.network.http.server's
RESPONSE_SLACK beyond it), after which the connection is reset."""
REFUSALS = {code: {"model": Problem} for code in (400, 401, 403, 404, 409, 413, 422, 429, 503)}


CORS_HEADERS = ("Authorization", "Content-Type", "Idempotency-Key", "If-None-Match",
                "Last-Event-ID")
"""What a portal's page on another origin may send."""
CORS_EXPOSED = ("ETag", "Link", "Location", "Retry-After", "X-Total-Count")
"""What its script may read of an answer."""


def served(socket_path: str, timeout: float, provider: str = "",
           cors_origins: tuple[str, ...] = ()) -> Gate:
    """The API as the companion serves it: behind its Gate."""
    return Gate(make_app(socket_path, timeout, provider, cors_origins), BODY_LIMIT)


def make_app(socket_path: str, timeout: float = 5.0, provider: str = "",
             cors_origins: tuple[str, ...] = ()) -> FastAPI:
    """The API, asking the daemon at ``socket_path`` and waiting at most
    ``timeout`` seconds for each answer (then 503); its calendar page may
    sign in at the identity provider's origin ``provider``; pages from
    ``cors_origins`` may call it (CORS: off unless named, since a bearer
    token in a page's script is the portal's to guard), and every JSON
    read is tagged for conditional GETs (etags)."""
    app = FastAPI(title="PluS reservations", version=VERSION[1:], description=__doc__,
                  responses=REFUSALS, docs_url=None, redoc_url=None,
                  generate_unique_id_function=lambda route: route.name)
    app.state.asker = Asker(socket_path, timeout)
    app.state.events = EventHub(socket_path, timeout)
    app.state.stream_seconds = timeout + STREAM_SLACK
    app.state.page_headers = pages.headers(provider)
    errors.install(app)
    docs.install(app)
    checked = [Depends(known_parameters)]      # not the page's: a sign-in returns to it with
    for router in API_ROUTERS:                  # the identity provider's code and state
        app.include_router(router, prefix=f"/{VERSION}", dependencies=checked)
    for router in API_ROUTERS:                  # the first paths, aliases of the first version
        app.include_router(router, include_in_schema=False, dependencies=checked)
    for router in FIXED_ROUTERS:
        app.include_router(router)
    app.add_middleware(ETags)
    if cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=list(cors_origins),
                           allow_methods=["GET", "POST", "PATCH", "DELETE"],
                           allow_headers=list(CORS_HEADERS), expose_headers=list(CORS_EXPOSED),
                           max_age=600)
    return app
