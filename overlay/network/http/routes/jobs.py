"""The batch system's jobs as the backend lists them, and deleting one's
own (overlay.daemon.services.jobs). Submitting a job is a ResKey claim's
(POST /jobs, routes/claims.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response

from overlay.language import limits
from overlay.language.request import MAX_AR_ID
from overlay.network.http.identity import Who
from overlay.network.http.routes.base import Ask, Limit, Names, Offset, paged
from overlay.network.http.schemas import Job, JobDeleted, answers

router = APIRouter()
JobId = Annotated[str, Path(max_length=128, description="the batch system's job id")]
_UNSUPPORTED = {501: {"description": "this site's backend deletes no jobs for the API (Grid "
                                     "Engine, TORQUE): the refusal names the command to use",
                      "content": {"application/json": {
                          "schema": {"$ref": "#/components/schemas/Problem"}}}}}


@router.get("/jobs", summary="Jobs of the batch system, as plus_qstat lists them, a page at "
                             "a time (X-Total-Count, Link)",
            response_model=None, responses=answers(list[Job]))
async def list_jobs(
        who: Who, ask: Ask, request: Request,
        owner: Annotated[str | None, Query(max_length=limits.MAX_NAME,
                                           description="whose jobs: yours by default, * for "
                                                       "everyone's")] = None,
        state: Annotated[Names | None, Query(description="pending, held, running, suspended, "
                                                         "deleting or error; repeated: any "
                                                         "of them")] = None,
        ar: Annotated[int | None, Query(ge=1, le=MAX_AR_ID,
                                        description="only jobs in this AR")] = None,
        limit: Limit = limits.PAGE, offset: Offset = 0) -> Response:
    page = await ask(who, "jobs", {"owner": owner, "states": state, "ar": ar, "limit": limit,
                                   "offset": offset}, passed=True)
    return paged(request, page, limit, offset)


@router.get("/jobs/{job_id}", summary="One job, as plus_qstat lists it",
            response_model=None, responses=answers(Job))
async def get_job(who: Who, ask: Ask, job_id: JobId) -> dict:
    return await ask(who, "job", {"id": job_id})


@router.delete("/jobs/{job_id}", summary="Delete one's own job (a manager: anyone's), as "
                                         "plus_qdel; a backend that cannot answers 501",
               response_model=None, responses={**answers(JobDeleted), **_UNSUPPORTED})
async def delete_job(who: Who, ask: Ask, job_id: JobId) -> dict:
    return await ask(who, "remove_job", {"id": job_id})
