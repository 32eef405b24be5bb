"""A load balancer's question (overlay.daemon.services.control): may users
be sent to this daemon? 200 while its store answers (503 otherwise); with
``role``, only while it leads (or stands by). Asked without a token, at a
fixed path, as load balancers do."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from overlay.network.http.identity import Anyone
from overlay.network.http.routes.base import Ask
from overlay.network.http.schemas import Health, answers

router = APIRouter()


@router.get("/health", summary="Whether this daemon serves: leader or standby, lag, store "
                               "and batch system (503 when it should get no users)",
            response_model=None,
            responses={**answers(Health), 503: {"model": Health, "description": "not serving "
                                                "(or not in the role asked)"}})
async def health(anyone: Anyone, ask: Ask, role: Annotated[
        Literal["leader", "standby"] | None,
        Query(description="serving only in this role (a load balancer that sends writes "
                          "to the leader)")] = None) -> JSONResponse:
    answer = await ask(anyone, "health", {})
    serving = answer["serving"] and (role is None or answer["role"] == role)
    return JSONResponse(answer, 200 if serving else 503)
