"""The HTTP API: each endpoint is one of the commands' operations, sent
to the daemon's socket with the caller's bearer token, so it has the
commands' semantics, checks and refusal texts. A refusal's kind gives its
status: bad input 400 (422 when the body does not fit the schema), a
missing or bad token 401, not yours or not allowed 403, unknown 404, no
capacity or a race 409, a body over 1 MiB 413, max_advance_reservations
429 (the body carries qrsub's exit status, 25), the store unavailable or
the daemon unreachable 503."""

from __future__ import annotations

import re
import time
from typing import Annotated, Any

from fastapi import FastAPI, Header, Path, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from overlay import fastjson, ggf, limits, protocol
from overlay.http import daemon_client, docs, errors, web
from overlay.http.fairness import Dispatcher
from overlay.http.gate import Gate
from overlay.http.identity import Caller, Who
from overlay.http.refusal import STATUS, Refusal
from overlay.request import MAX_AR_ID, RequestError
from overlay.timespec import TimeSpecError

# Bodies are strict, as the socket is: "1" is not a number, nor true a count.
Epoch = Annotated[StrictInt, Field(ge=0, le=2**40, description="UTC epoch seconds")]
Count = Annotated[StrictInt, Field(ge=1, le=limits.MAX_COUNT)]
ArId = Annotated[int, Path(ge=1, le=MAX_AR_ID, description="the AR's id")]
Text = Annotated[StrictStr, Field(max_length=limits.MAX_ARGUMENT)]
Names = Annotated[list[Text], Field(max_length=limits.MAX_ITEMS)]


class Problem(BaseModel):
    error: str
    status: int = Field(description="the exit status the command would have (qrsub's 25 "
                                    "at max_advance_reservations)")
    kind: str


class ReservationIn(BaseModel):
    """plus_reserve's request (overlay.request.request_wire), -T as
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
    transactional: StrictBool = False


class ModifyIn(BaseModel):
    """plus_modify's changes: a new window, node count or access list."""
    model_config = ConfigDict(extra="forbid")
    start: Epoch | None = None
    end: Epoch | None = None
    duration: Annotated[StrictInt, Field(ge=1, le=limits.MAX_DURATION)] | None = None
    nodes: Count | None = None
    users: Names | None = None
    transactional: StrictBool = False


class GgfQuery(BaseModel):
    """A seed 003 query in the seed's words (overlay.ggf says the forms)."""
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


class ClaimIn(BaseModel):
    """A ResKey claim (overlay.reskey): the AR, a fresh nonce, the time, the
    operation with its payload, and their HMAC-SHA256 keyed with the ResKey;
    never the key itself."""
    model_config = ConfigDict(extra="forbid")
    id: Annotated[StrictInt, Field(ge=1, le=MAX_AR_ID)]
    nonce: Annotated[StrictStr, Field(min_length=16, max_length=64)]
    timestamp: Epoch
    operation: Annotated[StrictStr, Field(max_length=16)]
    payload: dict = {}
    hmac: Annotated[StrictStr, Field(min_length=64, max_length=64)]


BODY_LIMIT = 2 ** 20
REFUSALS = {code: {"model": Problem} for code in (400, 401, 403, 404, 409, 413, 422, 429, 503)}


_PAGE = re.compile(rb'\{"total":(\d+),"items":')


def paged(request: Request, page: bytes, limit: int, offset: int) -> Response:
    """A page of a listing (the daemon's ``{"total", "items"}``, as it wrote
    it): its items, how many match in all, and the next page's URL (RFC
    8288's Link, as GitHub's API gives it)."""
    found = _PAGE.match(page)
    if found is None or not page.endswith(b"}"):
        raise Refusal(503, {"error": "plus_scheduler's answer is not a page", "kind": "unavailable",
                            "status": protocol.EXIT_UNREACHABLE})
    total = int(found.group(1))
    headers = {"X-Total-Count": str(total)}
    if offset + limit < total:
        following = request.url.include_query_params(offset=offset + limit, limit=limit)
        headers["Link"] = f'<{following}>; rel="next"'
    return Response(page[found.end():-1], media_type="application/json", headers=headers)


def served(socket_path: str, timeout: float, provider: str = "") -> Gate:
    """The API as the companion serves it: behind its Gate."""
    return Gate(make_app(socket_path, timeout, provider), BODY_LIMIT)


def make_app(socket_path: str, timeout: float = 5.0, provider: str = "") -> FastAPI:
    """The API, asking the daemon at ``socket_path`` and waiting at most
    ``timeout`` seconds for each answer (then 503); its calendar page may
    sign in at the identity provider's origin ``provider``."""
    app = FastAPI(title="PluS reservations", version="1", description=__doc__,
                  responses=REFUSALS, docs_url=None, redoc_url=None)
    errors.install(app)
    docs.install(app)

    dispatcher = Dispatcher()

    async def ask(who: Caller, op: str, args: dict, passed: bool = False) -> Any:
        """The daemon's answer to ``op`` for the token's user, or (no token)
        for no user: the operation proves what it needs itself; with
        ``passed``, its JSON as the daemon wrote it. Sent in the client's
        turn (overlay.http.fairness), unless the client has gone while it
        waited."""
        message = {"op": op, "args": {k: v for k, v in args.items() if v is not None}}
        if who.token is not None:
            message["token"] = who.token
            if who.acting_for is not None:
                message["as"] = who.acting_for
        async with dispatcher.turn(who.address, who.claimed):
            if await who.request.is_disconnected():
                raise Refusal(503, {"error": "the client went away before its turn",
                                    "status": protocol.EXIT_UNREACHABLE, "kind": "unavailable"})
            try:
                raw = await daemon_client.call(socket_path, message, timeout)
                data = daemon_client.data_of(raw) if passed else None
                if data is not None:
                    return data
                reply = daemon_client.reply_of(raw)
            except protocol.ProtocolError as exc:
                raise Refusal(503, {"error": str(exc), "status": protocol.EXIT_UNREACHABLE,
                                    "kind": "unavailable"}) from None
        if not reply.get("ok"):
            kind = reply.get("kind", "conflict")
            raise Refusal(STATUS.get(kind, 409), {"error": reply.get("error", "refused"),
                                                  "status": reply.get("status", 1), "kind": kind})
        return fastjson.dumps(reply["data"]).encode() if passed else reply["data"]

    @app.get("/whoami", summary="Who the token names, and whether a manager")
    async def whoami(who: Who) -> dict:
        return await ask(who, "ping", {})

    @app.get("/reservations", summary="ARs, as plus_status lists them, a page at a time "
                                      "(X-Total-Count: how many match; Link: the next page)")
    async def reservations(
            who: Who, request: Request,
            owner: Annotated[str | None, Query(max_length=limits.MAX_NAME)] = None,
            start: Annotated[int | None, Query(ge=0, le=2**40)] = None,
            end: Annotated[int | None, Query(ge=0, le=2**40)] = None,
            expired: Annotated[int, Query(ge=0, le=limits.MAX_COUNT)] = 0,
            idempotency_key: Annotated[str | None, Query(max_length=128)] = None,
            limit: Annotated[int, Query(ge=1, le=limits.MAX_PAGE,
                                        description="ARs on this page")] = limits.PAGE,
            offset: Annotated[int, Query(ge=0, le=limits.MAX_COUNT,
                                         description="ARs before this page")] = 0) -> list[dict]:
        page = await ask(who, "status", {"owner": owner, "start": start, "end": end,
                                         "expired": expired or None,
                                         "idempotency_key": idempotency_key,
                                         "limit": limit, "offset": offset}, passed=True)
        return paged(request, page, limit, offset)

    @app.get("/reservations/{ar_id}", summary="One AR, as plus_status -r shows it")
    async def reservation(who: Who, ar_id: ArId) -> dict:
        found = await ask(who, "status", {"id": ar_id})
        if not found:
            raise Refusal(404, {"error": f"AR {ar_id} does not exist", "status": 1,
                                "kind": "unknown"})
        return found[0]

    @app.post("/reservations", status_code=201, summary="Reserve, as plus_reserve")
    async def reserve(who: Who, body: ReservationIn,
                idempotency_key: Annotated[str | None, Header(
                    max_length=128, description="the client's name for this request: a retry "
                    "with the same key and request answers the AR it made")] = None) -> dict:
        return await ask(who, "reserve", {**body.model_dump(), "idempotency_key": idempotency_key})

    @app.patch("/reservations/{ar_id}", summary="Change the window, nodes or users, as plus_modify")
    async def modify(who: Who, ar_id: ArId, body: ModifyIn) -> dict:
        return await ask(who, "modify", {"id": ar_id, **body.model_dump()})

    @app.post("/reservations/{ar_id}/cancel", summary="Cancel, as plus_cancel")
    async def cancel(who: Who, ar_id: ArId, transactional: bool = False) -> dict:
        return (await ask(who, "cancel", {"id": ar_id, "transactional": transactional}))[0]

    @app.delete("/reservations/{ar_id}", summary="Destroy the record, as plus_destroy")
    async def destroy(who: Who, ar_id: ArId, transactional: bool = False) -> dict:
        return (await ask(who, "destroy", {"id": ar_id, "transactional": transactional}))[0]

    @app.post("/reservations/{ar_id}/commit", summary="Make a -T operation take effect")
    async def commit(who: Who, ar_id: ArId) -> dict:
        return await ask(who, "commit", {"id": ar_id})

    @app.post("/reservations/{ar_id}/abort", summary="Drop a -T operation")
    async def abort(who: Who, ar_id: ArId) -> dict:
        return await ask(who, "abort", {"id": ar_id})

    @app.get("/nodes/available", summary="Nodes wholly free over a window, as plus_availnodes")
    async def available(who: Who, start: Annotated[int, Query(ge=0, le=2**40)],
                  end: Annotated[int, Query(ge=0, le=2**40)]) -> dict:
        return await ask(who, "availnodes", {"start": start, "end": end})

    @app.get("/accounting", summary="Each AR's use of its hosts over a period, as plus_account -l")
    async def accounting(who: Who, request: Request,
                         start: Annotated[int | None, Query(ge=0, le=2**40)] = None,
                         end: Annotated[int | None, Query(ge=0, le=2**40)] = None,
                         owner: Annotated[Names | None, Query()] = None,
                         node: Annotated[Names | None, Query()] = None,
                         limit: Annotated[int, Query(ge=1, le=limits.MAX_PAGE)] = limits.PAGE,
                         offset: Annotated[int, Query(ge=0, le=limits.MAX_COUNT)] = 0
                         ) -> list[dict]:
        page = await ask(who, "accounting", {"start": start, "end": end, "owners": owner,
                                             "nodes": node, "limit": limit, "offset": offset},
                         passed=True)
        return paged(request, page, limit, offset)

    async def verb(who: Who, op: str, words: BaseModel, arguments, **extra) -> dict:
        """A seed 003 verb: its words made the daemon's arguments (400 if
        they are bad), asked for the UserID they name."""
        try:
            checked = arguments(words.model_dump(), int(time.time()))
        except (RequestError, TimeSpecError) as exc:
            raise Refusal(400, {"error": str(exc), "status": protocol.EXIT_USAGE,
                                "kind": "invalid"}) from None
        return await ask(who.acting(words.UserID), op, {**checked, **extra})

    async def reserving(who: Who, op: str, words: BaseModel, arguments, **extra) -> dict:
        """SETRES and RESQANDSET: a refusal is SuccessOrNot false too."""
        try:
            view = await verb(who, op, words, arguments, **extra)
        except Refusal as refusal:
            refusal.body.update(SuccessOrNot=False, OtherInfo=refusal.body.get("error"))
            raise
        return {**ggf.reservation_answer(op, view), "reservation": view}

    @app.post("/ggf/query", summary="QUERY (seed 003): when a job of this shape would start "
                                   "if submitted now, without a reservation")
    async def query(who: Who, body: GgfJob) -> dict:
        return ggf.query_answer(await verb(who, "query", body, ggf.query_arguments))

    @app.post("/ggf/resquery", summary="RESQUERY (seed 003): the ranges of start times in "
                                      "which a reservation of this shape could start")
    async def resquery(who: Who, body: GgfQuery) -> dict:
        return ggf.resquery_answer(await verb(who, "resquery", body, ggf.resquery_arguments))

    @app.post("/ggf/resqandset", status_code=201,
              summary="RESQANDSET (seed 003): reserve at the earliest start; the ResKey, once")
    async def resqandset(who: Who, body: GgfQuery) -> dict:
        return await reserving(who, "resqandset", body, ggf.resquery_arguments)

    @app.post("/ggf/setres", status_code=201,
              summary="SETRES (seed 003): reserve at StartTime; the ResKey, once")
    async def setres(who: Who, body: GgfSetres, idempotency_key: Annotated[str | None, Header(
            max_length=128, description="a retry with the same key and request answers the "
                                        "AR it made, and its ResKey")] = None) -> dict:
        return await reserving(who, "setres", body, ggf.setres_arguments,
                         transactional=body.Transactional or None,
                         idempotency_key=idempotency_key)

    web.install(app, ask, provider)

    @app.post("/claims", summary="Act on an AR as its owner with a ResKey claim (submit, "
                                 "cancel, modify)")
    async def claim(who: Who, body: ClaimIn) -> dict:
        return await ask(who, "claim", body.model_dump())

    @app.post("/jobs", status_code=201, summary="Submit a job into an AR with a ResKey claim "
                                                "(operation submit; payload: plus_qsub's fields)")
    async def job(who: Who, body: ClaimIn) -> dict:
        if body.operation != "submit":
            raise Refusal(400, {"error": f"POST /jobs takes claims of operation submit, not "
                                         f"'{limits.shown(body.operation)}'; use POST /claims",
                                "status": protocol.EXIT_USAGE, "kind": "invalid"})
        return await ask(who, "claim", body.model_dump())

    return app
