"""Every node with its state, slots, attributes and ARs now
(overlay.daemon.services.nodes), a page at a time."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from overlay.language import limits
from overlay.network.http.identity import Who
from overlay.network.http.routes.base import Ask, Limit, Names, Offset, paged
from overlay.network.http.schemas import Node, answers

router = APIRouter()


@router.get("/nodes", summary="Every node with its state, slots, attributes and the ARs "
                              "holding it now, a page at a time (X-Total-Count, Link)",
            response_model=None, responses=answers(list[Node]))
async def list_nodes(
        who: Who, ask: Ask, request: Request,
        state: Annotated[Names | None, Query(description="down, reserved, busy or idle; "
                                                         "repeated: any of them")] = None,
        property: Annotated[Names | None, Query(description="NAME=PATTERN as plus_reserve -l "
                                                            "matches a node's properties; "
                                                            "repeated: every one")] = None,
        limit: Limit = limits.PAGE, offset: Offset = 0) -> Response:
    page = await ask(who, "nodes", {"states": state, "properties": property, "limit": limit,
                                    "offset": offset}, passed=True)
    return paged(request, page, limit, offset)
