"""Ending an open AR now (overlay.daemon.services.release): the calendar's
End now button, for its owner and managers."""

from __future__ import annotations

from fastapi import APIRouter

from overlay.network.http.identity import Who
from overlay.network.http.routes.base import ArId, Ask
from overlay.network.http.schemas import Reservation, answers

router = APIRouter()


@router.post("/reservations/{ar_id}/release",
             summary="End an open AR now, freeing its nodes (as plus_modify -e now): "
                     "released early, charged until now",
             response_model=None, responses=answers(Reservation))
async def release_reservation(who: Who, ask: Ask, ar_id: ArId) -> dict:
    return await ask(who, "release", {"id": ar_id})
