"""The reservation commands' endpoints (overlay.daemon.services.reservations):
plus_status, plus_reserve, plus_modify, plus_cancel, plus_destroy,
plus_commit, plus_abort and plus_availnodes."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from overlay.language import limits
from overlay.language.leads import LEAD_FORMS
from overlay.language.release import IDLE_FORMS
from overlay.language.request import MAX_AR_ID
from overlay.network.http.identity import Who
from overlay.network.http.refusal import Refusal
from overlay.network.http.routes.base import (
    ArId,
    Ask,
    Count,
    Epoch,
    Limit,
    Names,
    Offset,
    Text,
    location,
    paged,
)
from overlay.network.http.schemas import AvailableNodes, Reservation, answers

router = APIRouter()

RepairMode = Annotated[Text, Field(description="when a reserved node that goes down is "
                                   "replaced by a free one: none, before (the window) or always")]
"""-repair, checked by the daemon's codec with the commands' words."""
Leads = Annotated[list[Annotated[StrictInt, Field(ge=0, le=2**40)]], Field(
    max_length=limits.MAX_ITEMS, description=f"notice leads, seconds before the start or end: "
                                             f"{LEAD_FORMS}; [] none, absent the site's")]

IdleRelease = Annotated[StrictInt, Field(ge=0, le=2**40, description=f"seconds the open AR may "
                                         f"run no job before it is released: {IDLE_FORMS}; "
                                         "0 never, absent the site's")]


class ReservationIn(BaseModel):
    """plus_reserve's request (overlay.language.request.request_wire), -T as
    ``transactional``."""
    model_config = ConfigDict(extra="forbid")
    start: Epoch
    end: Epoch
    nodes: Count
    users: Names = []
    slots_per_node: Count | None = None
    memory_mb: Annotated[StrictInt, Field(ge=1, le=limits.MAX_MEMORY_MB)] | None = None
    ncpus: Count | None = None
    arch: Text | None = None
    os: Text | None = None
    attributes: Annotated[list[tuple[Text, Text]], Field(max_length=limits.MAX_ITEMS)] = []
    queues: Names = []
    name: Text = ""
    hard_error: StrictBool = False
    mail_options: Text = ""
    mail_list: Names = []
    res_access: Annotated[list[Annotated[StrictInt, Field(ge=1, le=MAX_AR_ID)]],
                          Field(max_length=limits.MAX_ITEMS)] = []
    repair: RepairMode = "before"
    notify_start: Leads | None = None
    notify_end: Leads | None = None
    idle_release: IdleRelease | None = None
    release_when_done: StrictBool = False
    maint: StrictBool = Field(False, description="managers only: reserve for maintenance")
    clear_notice: Leads | None = None
    force: StrictBool = Field(False, description="with maint: over other ARs, which go to W/E")
    transactional: StrictBool = False
    repeat: Text | None = Field(None, description="a recurring series: an RFC 5545 RRULE, its "
                                "first occurrence at start (plus_reserve --repeat)")
    except_: Names = Field([], alias="except", description="with repeat: dates YYYY-MM-DD or "
                           "local starts YYYY-MM-DDTHH:MM left out (--except)")


class ChangeIn(BaseModel):
    """What a change may set of an AR and of a series' occurrences alike
    (routes/series.py)."""
    model_config = ConfigDict(extra="forbid")
    duration: Annotated[StrictInt, Field(ge=1, le=limits.MAX_DURATION)] | None = None
    nodes: Count | None = None
    users: Names | None = None
    repair: RepairMode | None = None
    notify_start: Leads | None = None
    notify_end: Leads | None = None


class ModifyIn(ChangeIn):
    """plus_modify's changes: a new window, node count or access list."""
    start: Epoch | None = None
    end: Epoch | None = None
    idle_release: IdleRelease | None = None
    release_when_done: StrictBool | None = None
    clear_notice: Leads | None = None
    transactional: StrictBool = False


@router.get("/reservations", summary="ARs, as plus_status lists them, a page at a time "
                                     "(X-Total-Count: how many match; Link: the next page)",
            response_model=None, responses=answers(list[Reservation]))
async def list_reservations(
        who: Who, ask: Ask, request: Request,
        owner: Annotated[str | None, Query(max_length=limits.MAX_NAME)] = None,
        start: Annotated[int | None, Query(ge=0, le=2**40)] = None,
        end: Annotated[int | None, Query(ge=0, le=2**40)] = None,
        expired: Annotated[int, Query(ge=0, le=limits.MAX_COUNT)] = 0,
        idempotency_key: Annotated[str | None, Query(max_length=128)] = None,
        state: Annotated[str | None, Query(
            min_length=1, max_length=16, pattern="^[a-zA-Z]+$",
            description="state letters, any of them (rW: running or waiting with a warning)")
        ] = None,
        name: Annotated[str | None, Query(max_length=limits.MAX_NAME,
                                          description="a name, or a pattern (* ? [])")] = None,
        node: Annotated[str | None, Query(max_length=limits.MAX_NAME,
                                          description="ARs holding this node")] = None,
        access: Annotated[str | None, Query(
            max_length=limits.MAX_NAME,
            description="ARs whose access list lets this user in (by name or group)")] = None,
        sort: Annotated[str | None, Query(
            max_length=128, description="fields to sort by, comma-separated, each with - "
            "before it for descending: id, name, owner, state, start, end, "
            "submission_time (default id)")] = None,
        limit: Limit = limits.PAGE, offset: Offset = 0) -> Response:
    page = await ask(who, "status", {"owner": owner, "start": start, "end": end,
                                     "expired": expired or None,
                                     "idempotency_key": idempotency_key, "states": state,
                                     "name": name, "node": node, "access": access,
                                     "sort": sort, "limit": limit, "offset": offset},
                     passed=True)
    return paged(request, page, limit, offset)


@router.get("/reservations/{ar_id}", summary="One AR, as plus_status -r shows it",
            response_model=None, responses=answers(Reservation))
async def get_reservation(who: Who, ask: Ask, ar_id: ArId) -> dict:
    found = await ask(who, "status", {"id": ar_id})
    if not found:
        raise Refusal(404, {"error": f"AR {ar_id} does not exist", "status": 1,
                            "kind": "unknown"})
    return found[0]


@router.post("/reservations", status_code=201, summary="Reserve, as plus_reserve",
             response_model=None, responses=answers(Reservation, 201, "the AR made"))
async def create_reservation(who: Who, ask: Ask, body: ReservationIn, response: Response,
                  idempotency_key: Annotated[str | None, Header(
                      max_length=128, description="the client's name for this request: a retry "
                      "with the same key and request answers the AR it made")] = None) -> dict:
    made = await ask(who, "reserve", {**body.model_dump(by_alias=True),
                                      "idempotency_key": idempotency_key})
    response.headers["Location"] = location(made["id"])
    return made


@router.patch("/reservations/{ar_id}",
              summary="Change the window, nodes or users, as plus_modify",
              response_model=None, responses=answers(Reservation))
async def modify_reservation(who: Who, ask: Ask, ar_id: ArId, body: ModifyIn) -> dict:
    return await ask(who, "modify", {"id": ar_id, **body.model_dump()})


@router.post("/reservations/{ar_id}/cancel", summary="Cancel, as plus_cancel",
             response_model=None, responses=answers(Reservation))
async def cancel_reservation(who: Who, ask: Ask, ar_id: ArId, transactional: bool = False) -> dict:
    return (await ask(who, "cancel", {"id": ar_id, "transactional": transactional}))[0]


@router.delete("/reservations/{ar_id}", summary="Destroy the record, as plus_destroy",
               response_model=None, responses=answers(Reservation))
async def destroy_reservation(who: Who, ask: Ask, ar_id: ArId, transactional: bool = False) -> dict:
    return (await ask(who, "destroy", {"id": ar_id, "transactional": transactional}))[0]


@router.post("/reservations/{ar_id}/commit", summary="Make a -T operation take effect",
             response_model=None, responses=answers(Reservation))
async def commit_reservation(who: Who, ask: Ask, ar_id: ArId) -> dict:
    return await ask(who, "commit", {"id": ar_id})


@router.post("/reservations/{ar_id}/abort", summary="Drop a -T operation",
             response_model=None, responses=answers(Reservation))
async def abort_reservation(who: Who, ask: Ask, ar_id: ArId) -> dict:
    return await ask(who, "abort", {"id": ar_id})


@router.get("/nodes/available", summary="Nodes wholly free over a window, as plus_availnodes",
            response_model=None, responses=answers(AvailableNodes))
async def available_nodes(who: Who, ask: Ask, start: Annotated[int, Query(ge=0, le=2**40)],
                    end: Annotated[int, Query(ge=0, le=2**40)]) -> dict:
    return await ask(who, "availnodes", {"start": start, "end": end})
