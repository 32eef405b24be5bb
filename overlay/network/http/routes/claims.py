"""A ResKey's holder acting on the AR as its owner (overlay.daemon.services.claims):
a claim, and a job submitted with one."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from overlay.language import limits
from overlay.language.request import MAX_AR_ID
from overlay.network.http.identity import Who
from overlay.network.http.refusal import Refusal
from overlay.network.http.routes.base import Ask, Epoch
from overlay.network.http.schemas import JobSubmitted, Reservation, answers
from overlay.wire import protocol

router = APIRouter()


class ClaimIn(BaseModel):
    """A ResKey claim (overlay.network.reskey): the AR, a fresh nonce, the time, the
    operation with its payload, and their HMAC-SHA256 keyed with the ResKey;
    never the key itself."""
    model_config = ConfigDict(extra="forbid")
    id: Annotated[StrictInt, Field(ge=1, le=MAX_AR_ID)]
    nonce: Annotated[StrictStr, Field(min_length=16, max_length=64)]
    timestamp: Epoch
    operation: Annotated[StrictStr, Field(max_length=16)]
    payload: dict = {}
    hmac: Annotated[StrictStr, Field(min_length=64, max_length=64)]


@router.post("/claims", summary="Act on an AR as its owner with a ResKey claim (submit, "
                                "cancel, modify)", response_model=None,
             responses=answers(Reservation | JobSubmitted, description="the AR as the claim "
                               "left it, or (submit) the job submitted"))
async def claim_reservation(who: Who, ask: Ask, body: ClaimIn) -> dict:
    return await ask(who, "claim", body.model_dump())


@router.post("/jobs", status_code=201, summary="Submit a job into an AR with a ResKey claim "
                                               "(operation submit; payload: plus_qsub's fields)",
             response_model=None, responses=answers(JobSubmitted, 201, "the job submitted"))
async def submit_claimed_job(who: Who, ask: Ask, body: ClaimIn) -> dict:
    if body.operation != "submit":
        raise Refusal(400, {"error": f"POST /jobs takes claims of operation submit, not "
                                     f"'{limits.shown(body.operation)}'; use POST /claims",
                            "status": protocol.EXIT_USAGE, "kind": "invalid"})
    return await ask(who, "claim", body.model_dump())
