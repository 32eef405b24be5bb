"""Seed 003's verbs in the seed's words (overlay.daemon.services.ggf; overlay.network.ggf
says the forms and shapes the answers)."""

from __future__ import annotations

import time
from typing import Annotated, Callable

from fastapi import APIRouter, Header, Response
from pydantic import BaseModel, ConfigDict, StrictBool

from overlay.language.request import RequestError
from overlay.language.timespec import TimeSpecError
from overlay.network import ggf
from overlay.network.http.identity import Who
from overlay.network.http.refusal import Refusal
from overlay.network.http.routes.base import Ask, Epoch, Text, location
from overlay.network.http.schemas import QueryAnswer, ResqueryAnswer, SetresAnswer, answers
from overlay.wire import protocol

router = APIRouter()


class GgfQuery(BaseModel):
    """A seed 003 query in the seed's words (overlay.network.ggf says the forms)."""
    model_config = ConfigDict(extra="forbid")
    UserID: Text
    TimeNeeded: Text
    TimeSpec: Text | None = None
    ResAccess: Text | None = None
    ResourceList: Text


class GgfJob(BaseModel):
    """QUERY in the seed's words: no TimeSpec, no ResAccess."""
    model_config = ConfigDict(extra="forbid")
    UserID: Text
    TimeNeeded: Text
    ResourceList: Text


class GgfSetres(BaseModel):
    """SETRES in the seed's words: StartTime instead of TimeSpec; and,
    beyond the seed, Transactional: the AR waits for its commit (a
    co-allocation's prepare)."""
    model_config = ConfigDict(extra="forbid")
    UserID: Text
    TimeNeeded: Text
    StartTime: Epoch | Text
    ResAccess: Text | None = None
    ResourceList: Text
    Transactional: StrictBool = False


async def _verb(ask: Ask, who: Who, op: str, words: BaseModel,
                arguments: Callable[[dict, int], dict], **extra) -> dict:
    """A seed 003 verb: its words made the daemon's arguments (400 if
    they are bad), asked for the UserID they name."""
    try:
        checked = arguments(words.model_dump(), int(time.time()))
    except (RequestError, TimeSpecError) as exc:
        raise Refusal(400, {"error": str(exc), "status": protocol.EXIT_USAGE,
                            "kind": "invalid"}) from None
    return await ask(who.acting(words.UserID), op, {**checked, **extra})


async def _reserving(ask: Ask, who: Who, response: Response, op: str, words: BaseModel,
                     arguments: Callable[[dict, int], dict], **extra) -> dict:
    """SETRES and RESQANDSET: a refusal is SuccessOrNot false too."""
    try:
        view = await _verb(ask, who, op, words, arguments, **extra)
    except Refusal as refusal:
        refusal.body.update(SuccessOrNot=False, OtherInfo=refusal.body.get("error"))
        raise
    response.headers["Location"] = location(view["id"])
    return {**ggf.reservation_answer(op, view), "reservation": view}


@router.post("/ggf/query", summary="QUERY (seed 003): when a job of this shape would start "
                                   "if submitted now, without a reservation",
             response_model=None, responses=answers(QueryAnswer))
async def ggf_query(who: Who, ask: Ask, body: GgfJob) -> dict:
    return ggf.query_answer(await _verb(ask, who, "query", body, ggf.query_arguments))


@router.post("/ggf/resquery", summary="RESQUERY (seed 003): the ranges of start times in "
                                      "which a reservation of this shape could start",
             response_model=None, responses=answers(ResqueryAnswer))
async def ggf_resquery(who: Who, ask: Ask, body: GgfQuery) -> dict:
    return ggf.resquery_answer(await _verb(ask, who, "resquery", body, ggf.resquery_arguments))


@router.post("/ggf/resqandset", status_code=201,
             summary="RESQANDSET (seed 003): reserve at the earliest start; the ResKey, once",
             response_model=None, responses=answers(SetresAnswer, 201, "the AR made"))
async def ggf_resqandset(who: Who, ask: Ask, body: GgfQuery, response: Response) -> dict:
    return await _reserving(ask, who, response, "resqandset", body, ggf.resquery_arguments)


@router.post("/ggf/setres", status_code=201,
             summary="SETRES (seed 003): reserve at StartTime; the ResKey, once",
             response_model=None, responses=answers(SetresAnswer, 201, "the AR made"))
async def ggf_setres(who: Who, ask: Ask, body: GgfSetres, response: Response,
                     idempotency_key: Annotated[str | None, Header(
        max_length=128, description="a retry with the same key and request answers the "
                                    "AR it made, and its ResKey")] = None) -> dict:
    return await _reserving(ask, who, response, "setres", body, ggf.setres_arguments,
                            transactional=body.Transactional or None,
                            idempotency_key=idempotency_key)
