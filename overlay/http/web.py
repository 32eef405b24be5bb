"""The reservations calendar page, served by the HTTP API: its files, the
exchange of plus_web's one-time code for a session token, and the two
reads the page makes beside the API's own endpoints (the calendar of a
window, and usage for a period).

The page is static: what a user may see and do is decided by the daemon
for each API call the page makes with the user's token, as for any other
client. vis-timeline is installed by scripts/install.sh into the venv's
share/plus/web (no CDN: the page works offline).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Awaitable, Callable

from fastapi import FastAPI, Query
from fastapi.responses import FileResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from overlay import limits
from overlay.http.identity import Anyone, Who
from overlay.http.refusal import Refusal

PAGE_DIR = Path(__file__).with_name("static")
VENDOR_DIR = Path(sys.prefix) / "share" / "plus" / "web"
VENDOR_FILES = {"vis-timeline-graph2d.min.js": "text/javascript",
                "vis-timeline-graph2d.min.css": "text/css"}
"""vis-timeline's standalone build (vis-data and its other dependencies inside)."""
PAGE_FILES = {"calendar.js": "text/javascript", "calendar.css": "text/css"}
def headers(provider: str = "") -> dict[str, str]:
    """The page runs only its own scripts (vis-timeline sets styles on its
    elements, hence 'unsafe-inline' for styles only), is never framed, and
    calls only this API, and the identity provider's token endpoint at
    ``provider`` (an origin) when it signs in there."""
    connect = f"'self' {provider}".strip()
    return {
        "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' "
                                   f"'unsafe-inline'; img-src 'self' data:; connect-src {connect}; "
                                   "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-cache",
    }


HEADERS = headers()
Epoch = Annotated[int, Query(ge=0, le=2**40, description="UTC epoch seconds")]


class SessionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: Annotated[str, Field(min_length=16, max_length=4096)]


Ask = Callable[..., Awaitable[Any]]


def install(app: FastAPI, ask: Ask, provider: str = "") -> None:
    """Add the page's routes to the API's ``app``: ``ask`` sends an
    operation to the daemon with the caller's token (or none); the page
    may call the identity provider at the origin ``provider``."""
    page_headers = headers(provider)

    @app.get("/web/config", summary="How the calendar page signs in: the site's identity "
                                    "provider, if one is set up")
    async def config(anyone: Anyone) -> dict:
        return await ask(anyone, "web_config", {})

    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse("/web/")

    @app.get("/web/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(PAGE_DIR / "index.html", media_type="text/html",
                            headers=page_headers)

    @app.get("/web/{name}", include_in_schema=False)
    async def page_file(name: str) -> FileResponse:
        if name not in PAGE_FILES:
            return missing(name)
        return FileResponse(PAGE_DIR / name, media_type=PAGE_FILES[name], headers=page_headers)

    @app.get("/web/vendor/{name}", include_in_schema=False)
    async def vendor(name: str) -> FileResponse:
        return vendor_file(VENDOR_DIR, VENDOR_FILES, name, "vis-timeline", page_headers)

    @app.post("/web/session", summary="Exchange plus_web's one-time code for a session token")
    async def session(anyone: Anyone, body: SessionIn) -> dict:
        return await ask(anyone, "web_session", {"code": body.code})

    @app.get("/calendar", summary="The calendar of a window: nodes, ARs and jobs, for the page")
    async def calendar(caller: Who, start: Epoch, end: Epoch,
                       since: Annotated[int | None, Query(ge=0, le=2**62)] = None) -> dict:
        return Response(await ask(caller, "calendar", {"start": start, "end": end,
                                                       "since": since}, passed=True),
                        media_type="application/json")

    @app.get("/usage", summary="Reserved and used node-hours of a period, as spans per owner")
    async def usage(caller: Who, start: Epoch, end: Epoch,
                    owner: Annotated[str | None, Query(max_length=limits.MAX_NAME)] = None) -> dict:
        return Response(await ask(caller, "usage", {"start": start, "end": end, "owner": owner},
                                  passed=True), media_type="application/json")


def vendor_file(folder: Path, files: dict[str, str], name: str, library: str,
                page_headers: dict[str, str]) -> FileResponse:
    """One of ``files`` (name: type) of a ``library`` that scripts/install.sh
    put in ``folder``; 404 for any other name, or saying it is not installed."""
    path = folder / name
    if name not in files:
        return missing(name)
    if not path.is_file():
        return missing(name, f"{library} is not installed: run scripts/install.sh, which puts "
                             f"it in {folder}")
    return FileResponse(path, media_type=files[name], headers=page_headers)


def missing(name: str, why: str = "") -> FileResponse:
    """Refuse (404) a page file that is not there, saying ``why`` if known."""
    hint = f" ({why})" if why else ""
    raise Refusal(404, {"error": f"no page file {limits.shown(name)}{hint}", "status": 1,
                        "kind": "unknown"})
