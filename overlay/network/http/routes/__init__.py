"""The API's endpoints by family, mirroring the daemon's operations
(overlay/daemon/services): each module holds one APIRouter and the bodies it
takes. ``API_ROUTERS`` are the API's, served under /v1 (``base.VERSION``) and,
as aliases of it, at their first paths; ``FIXED_ROUTERS`` the calendar
page's own, /metrics and /health (where scrapers and load balancers
look), unversioned. A path is matched route by route in the order
make_app includes them (within web.py, /web/config comes before
/web/{name})."""

from __future__ import annotations

from overlay.network.http.routes import (
    approval,
    claims,
    events,
    feeds,
    ggf,
    health,
    identities,
    jobs,
    metrics,
    nodes,
    release,
    reports,
    reservations,
    series,
    web,
)

API_ROUTERS = tuple(family.router for family in (identities, reservations, release, approval,
                                                   series, reports, ggf, claims, feeds, events,
                                                   nodes, jobs))
FIXED_ROUTERS = (web.router, metrics.router, health.router)
