"""Who the token names (overlay.daemon.services.identities)."""

from __future__ import annotations

from fastapi import APIRouter

from overlay.network.http.identity import Who
from overlay.network.http.routes.base import Ask
from overlay.network.http.schemas import Whoami, answers

router = APIRouter()


@router.get("/whoami", summary="Who the token names, and whether a manager",
            response_model=None, responses=answers(Whoami))
async def whoami(who: Who, ask: Ask) -> dict:
    return await ask(who, "ping", {})
