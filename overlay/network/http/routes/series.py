"""Recurring series' endpoints (overlay.daemon.services.series): what
plus_status -series, plus_modify -series and plus_cancel -series do. A
series is made by POST /reservations with ``repeat`` (and ``except``);
each of its occurrences is an AR under /reservations."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from overlay.language import limits
from overlay.network.http.identity import Who
from overlay.network.http.routes.base import Ask
from overlay.network.http.routes.reservations import ChangeIn
from overlay.network.http.schemas import Series, answers
from overlay.persistence.series import MAX_SERIES_ID

router = APIRouter()

SeriesId = Annotated[int, Path(ge=1, le=MAX_SERIES_ID, description="the series' id")]


class SeriesChangeIn(ChangeIn):
    """plus_modify -series: what changes for the occurrences not started and those to come."""


@router.get("/series", summary="Recurring series, as plus_status -series lists them",
            response_model=None, responses=answers(list[Series]))
async def list_series(who: Who, ask: Ask, owner: Annotated[
        str | None, Query(max_length=limits.MAX_NAME)] = None) -> list:
    return await ask(who, "series_status", {"owner": owner})


@router.get("/series/{series_id}", summary="One series with its occurrences and those refused",
            response_model=None, responses=answers(Series))
async def get_series(who: Who, ask: Ask, series_id: SeriesId) -> dict:
    return (await ask(who, "series_status", {"series": series_id}))[0]


@router.patch("/series/{series_id}", summary="Change the occurrences not started and to come, "
                                            "as plus_modify -series",
              response_model=None, responses=answers(Series))
async def modify_series(who: Who, ask: Ask, series_id: SeriesId, body: SeriesChangeIn) -> dict:
    return await ask(who, "series_modify", {"series": series_id, **body.model_dump()})


@router.delete("/series/{series_id}", summary="Stop the series and cancel its open "
                                             "occurrences, as plus_cancel -series",
               response_model=None, responses=answers(Series))
async def cancel_series(who: Who, ask: Ask, series_id: SeriesId) -> dict:
    return await ask(who, "series_cancel", {"series": series_id})
