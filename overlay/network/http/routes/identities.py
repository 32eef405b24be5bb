"""Who the token names (overlay.daemon.services.identities)."""

from __future__ import annotations

from fastapi import APIRouter

from overlay.network.http.identity import Who
from overlay.network.http.routes.base import Ask

router = APIRouter()


@router.get("/whoami", summary="Who the token names, and whether a manager")
async def whoami(who: Who, ask: Ask) -> dict:
    return await ask(who, "ping", {})
