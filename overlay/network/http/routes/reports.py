"""What the ARs and jobs add up to (overlay.daemon.services.reports):
plus_account -l's records, and the calendar page's reads: the calendar of
a window, usage for a period, and one AR's usage so far while it runs."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from overlay.language import limits
from overlay.network.http.identity import Who
from overlay.network.http.routes.base import ArId, Ask, Limit, Names, Offset, paged
from overlay.network.http.schemas import AccountingRecord, ARUsage, Calendar, Usage, answers

router = APIRouter()
EpochQuery = Annotated[int, Query(ge=0, le=2**40, description="UTC epoch seconds")]


@router.get("/accounting",
            summary="Each AR's use of its hosts over a period, as plus_account -l",
            response_model=None, responses=answers(list[AccountingRecord]))
async def list_accounting(who: Who, ask: Ask, request: Request,
                     start: Annotated[int | None, Query(ge=0, le=2**40)] = None,
                     end: Annotated[int | None, Query(ge=0, le=2**40)] = None,
                     owner: Annotated[Names | None, Query()] = None,
                     node: Annotated[Names | None, Query()] = None,
                     limit: Limit = limits.PAGE, offset: Offset = 0) -> Response:
    page = await ask(who, "accounting", {"start": start, "end": end, "owners": owner,
                                         "nodes": node, "limit": limit, "offset": offset},
                     passed=True)
    return paged(request, page, limit, offset)


@router.get("/calendar",
            summary="The calendar of a window: nodes, ARs and jobs, for the page",
            response_model=None, responses=answers(Calendar))
async def get_calendar(caller: Who, ask: Ask, start: EpochQuery, end: EpochQuery,
                   since: Annotated[int | None, Query(ge=0, le=2**62)] = None) -> Response:
    return Response(await ask(caller, "calendar", {"start": start, "end": end,
                                                   "since": since}, passed=True),
                    media_type="application/json")


@router.get("/usage", summary="Reserved and used node-hours of a period, as spans per owner",
            response_model=None, responses=answers(Usage))
async def get_usage(caller: Who, ask: Ask, start: EpochQuery, end: EpochQuery,
                owner: Annotated[str | None, Query(max_length=limits.MAX_NAME)] = None) -> Response:
    return Response(await ask(caller, "usage", {"start": start, "end": end, "owner": owner},
                              passed=True), media_type="application/json")


@router.get("/usage/{ar_id}",
            summary="An AR's node-hours reserved and used so far while it runs (its owner, "
                    "its users and managers)",
            response_model=None, responses=answers(ARUsage))
async def get_ar_usage(caller: Who, ask: Ask, ar_id: ArId) -> Response:
    return Response(await ask(caller, "ar_usage", {"id": ar_id}, passed=True),
                    media_type="application/json")
