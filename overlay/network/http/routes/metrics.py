"""This daemon's figures for Prometheus (overlay.daemon.services.metrics),
in its text format. Each daemon answers for itself: a site scrapes every
daemon serving its store. Who may scrape is the daemon's to say
(``http.metrics``): the bearer token here is the scrapers' secret, not a
user's token, and goes to the daemon as an argument."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_LATEST

from overlay.network.http.exposition import rendered
from overlay.network.http.identity import MAX_TOKEN, Anyone
from overlay.network.http.routes.base import Ask

router = APIRouter()
_SECRET = HTTPBearer(auto_error=False, scheme_name="metrics",
                     description="the scrapers' secret (http.metrics_token) under "
                                 "http.metrics: token")


@router.get("/metrics", summary="This daemon's figures, in Prometheus' text format",
            response_class=Response,
            responses={200: {"content": {CONTENT_TYPE_LATEST: {}},
                             "description": "the exposition, as Prometheus scrapes it"}})
async def metrics(anyone: Anyone, ask: Ask,
                  bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_SECRET)]
                  ) -> Response:
    secret = bearer.credentials.strip() if bearer is not None else ""
    credential = secret if 0 < len(secret) <= MAX_TOKEN else None
    figures = await ask(anyone, "metrics", {"http": True, "credential": credential})
    return Response(rendered(figures), media_type=CONTENT_TYPE_LATEST)
