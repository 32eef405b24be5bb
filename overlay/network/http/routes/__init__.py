"""The API's endpoints by family, mirroring the daemon's operations
(overlay/daemon/services): each module holds one APIRouter and the bodies it
takes. ``ROUTERS`` is the order make_app includes them in: a path is
matched route by route in that order (within web.py, /web/config comes
before /web/{name})."""

from __future__ import annotations

from overlay.network.http.routes import (
    claims,
    feeds,
    ggf,
    identities,
    reports,
    reservations,
    web,
)

ROUTERS = tuple(family.router for family in (identities, reservations, reports, ggf, web, claims,
                                             feeds))
