"""The API's browsable documentation at /docs: Swagger UI, installed by
scripts/install.sh into the venv's share/plus/docs and served from here
under the calendar page's Content-Security-Policy (FastAPI's own /docs
loads it from a CDN, with an inline script: blank offline, and no CSP)."""

from __future__ import annotations

import sys
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse

from overlay.network.http.pages import HEADERS, PAGE_DIR, vendor_file

VENDOR_DIR = Path(sys.prefix) / "share" / "plus" / "docs"
VENDOR_FILES = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui.css": "text/css"}


def install(app: FastAPI) -> None:
    """Add /docs and its files to ``app``."""

    @app.get("/docs", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(PAGE_DIR / "docs.html", media_type="text/html", headers=HEADERS)

    @app.get("/docs/docs.js", include_in_schema=False)
    async def script() -> FileResponse:
        return FileResponse(PAGE_DIR / "docs.js", media_type="text/javascript", headers=HEADERS)

    @app.get("/docs/vendor/{name}", include_in_schema=False)
    async def vendor(name: str) -> FileResponse:
        return vendor_file(VENDOR_DIR, VENDOR_FILES, name, "Swagger UI", HEADERS)
