"""The reservations calendar page (overlay.daemon.services.web): its files, how it
signs in (through the site's identity provider, or by exchanging
plus_web's one-time code for a session token). Its reads of the calendar
and of usage are reports (routes/reports.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, RedirectResponse
from pydantic import BaseModel, ConfigDict, Field

from overlay.network.http.identity import Anyone
from overlay.network.http.pages import (
    PAGE_DIR,
    PAGE_FILES,
    VENDOR_DIR,
    VENDOR_FILES,
    missing,
    vendor_file,
)
from overlay.network.http.routes.base import Ask
from overlay.network.http.schemas import WebConfig, WebSession, answers

router = APIRouter()


class SessionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: Annotated[str, Field(min_length=16, max_length=4096)]


async def _page_headers(request: Request) -> dict[str, str]:
    return request.app.state.page_headers


PageHeaders = Annotated[dict[str, str], Depends(_page_headers)]
"""The page's headers (pages.headers), which allow the identity provider's
origin make_app was given."""


@router.get("/web/config", summary="How the calendar page signs in: the site's identity "
                                   "provider, if one is set up",
            response_model=None, responses=answers(WebConfig))
async def web_config(anyone: Anyone, ask: Ask) -> dict:
    return await ask(anyone, "web_config", {})


@router.get("/", include_in_schema=False)
async def root() -> RedirectResponse:
    return RedirectResponse("/web/")


@router.get("/web/", include_in_schema=False)
async def page(page_headers: PageHeaders) -> FileResponse:
    return FileResponse(PAGE_DIR / "index.html", media_type="text/html", headers=page_headers)


@router.get("/web/{name}", include_in_schema=False)
async def page_file(name: str, page_headers: PageHeaders) -> FileResponse:
    if name not in PAGE_FILES:
        return missing(name)
    return FileResponse(PAGE_DIR / name, media_type=PAGE_FILES[name], headers=page_headers)


@router.get("/web/vendor/{name}", include_in_schema=False)
async def vendor(name: str, page_headers: PageHeaders) -> FileResponse:
    return vendor_file(VENDOR_DIR, VENDOR_FILES, name, "vis-timeline", page_headers)


@router.post("/web/session", summary="Exchange plus_web's one-time code for a session token",
             response_model=None, responses=answers(WebSession))
async def web_session(anyone: Anyone, ask: Ask, body: SessionIn) -> dict:
    return await ask(anyone, "web_session", {"code": body.code})
