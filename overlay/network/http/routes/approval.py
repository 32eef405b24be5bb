"""A manager's decision on an AR held for approval (state h), as
plus_approve and plus_deny: anyone else is answered 403."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict

from overlay.network.http.identity import Who
from overlay.network.http.routes.base import ArId, Ask, Text
from overlay.network.http.schemas import Reservation, answers

router = APIRouter()


class DenyIn(BaseModel):
    """plus_deny's -reason: one line, at most 512 characters (the daemon checks it)."""
    model_config = ConfigDict(extra="forbid")
    reason: Text = ""


@router.post("/reservations/{ar_id}/approve",
             summary="Approve an AR awaiting a manager's approval, as plus_approve (managers "
                     "only): it is granted and enforced",
             response_model=None, responses=answers(Reservation))
async def approve_reservation(who: Who, ask: Ask, ar_id: ArId) -> dict:
    return (await ask(who, "approve", {"ids": [ar_id]}))[0]


@router.post("/reservations/{ar_id}/deny",
             summary="Deny an AR awaiting a manager's approval, as plus_deny (managers only): "
                     "it ends in state d, its owner told why",
             response_model=None, responses=answers(Reservation))
async def deny_reservation(who: Who, ask: Ask, ar_id: ArId, body: DenyIn | None = None) -> dict:
    reason = body.reason if body is not None else ""
    return (await ask(who, "deny", {"ids": [ar_id], "reason": reason}))[0]
