"""The API's static pages, the reservations calendar and /docs: their
files, served only by name from their folders, under a
Content-Security-Policy that lets them run their own scripts and call only
this API (and the identity provider's token endpoint, for signing in).

The pages are static: what a user may see and do is decided by the daemon
for each API call the page makes with the user's token, as for any other
client. vis-timeline is installed by scripts/install.sh into the venv's
share/plus/web (no CDN: the page works offline).
"""

from __future__ import annotations

import sys
from pathlib import Path

from fastapi.responses import FileResponse

from overlay.language import limits
from overlay.network.http.refusal import Refusal

PAGE_DIR = Path(__file__).with_name("static")
VENDOR_DIR = Path(sys.prefix) / "share" / "plus" / "web"
VENDOR_FILES = {"vis-timeline-graph2d.min.js": "text/javascript",
                "vis-timeline-graph2d.min.css": "text/css"}
"""vis-timeline's standalone build (vis-data and its other dependencies inside)."""
PAGE_FILES = {"calendar.js": "text/javascript", "live.js": "text/javascript",
              "calendar.css": "text/css"}


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
