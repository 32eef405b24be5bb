"""What the API answers on success, as typed schemas for the OpenAPI
document, so that a generated client gets classes, not untyped objects.
The daemon writes the answers (overlay.daemon.services.views and the
operations); these models describe them and are not run on each answer
(a listing of 1,000 ARs is passed through as the daemon wrote it).
``tests/test_http_fuzz.py`` checks every answer against them, and the
models forbid fields they do not name, so a field added to a view
without its schema fails there."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Shown(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Whoami(_Shown):
    user: str
    manager: bool


class Allocation(_Shown):
    """A node the AR holds: its slots, the queue instance's queue (qrsub's
    ARs), and the AR they are inside (ResAccess)."""
    node: str
    slots: int
    queue: str | None = None
    within: int | None = None


class RequestShown(_Shown):
    """What was asked, every field of plus_reserve's (or qrsub's) request."""
    start: int
    end: int
    nodes: int
    users: list[str]
    slots_per_node: int | None
    memory_mb: int | None
    ncpus: int | None
    arch: str | None
    os: str | None
    attributes: list[list[str]] = Field(description="-l's [name, value] pairs")
    queues: list[str]
    name: str
    hard_error: bool
    mail_options: str
    mail_list: list[str]
    res_access: list[int]
    pe: str
    pe_range: list[list[int]] = Field(description="-pe's [low, high] ranges")
    alloc_rule: str
    master_queues: list[str]
    ckpt: str
    interactive: bool
    account: str
    kind: str | None = Field(description="nodes or slots")
    repair: str = Field("before", description="-repair: none, before or always")
    notify_start: list[int] | None = Field(None, description="notice leads (seconds) before "
                                           "the start; null: the site's")
    notify_end: list[int] | None = Field(None, description="notice leads (seconds) before "
                                         "the end; null: the site's")
    idle_release: int | None = Field(None, description="seconds the open AR may run no job "
                                     "before it is released; 0 never, null the site's")
    release_when_done: bool = Field(False, description="released once its jobs have all ended")
    maint: bool = Field(False, description="a maintenance AR (--maint)")
    clear_notice: list[int] | None = Field(None, description="leads (seconds) before the start "
                                           "at which owners of jobs in the way are told; "
                                           "null: the site's")


class Pending(_Shown):
    """A -T operation waiting for commit or abort."""
    operation: str
    since: int | None
    expires: int | None
    start: int | None
    end: int | None
    allocations: list[Allocation]


class Approval(_Shown):
    """An AR held for a manager's approval (state h)."""
    due: int = Field(description="when it lapses unless a manager decides first")
    reason: str = Field(description="the policy's answer: why it waits")


class RefusedChange(_Shown):
    """The AR's last refused plus_modify."""
    time: int
    operation: str
    reason: str


class SeriesRefusal(_Shown):
    """An occurrence of a series that was not granted, and why."""
    start: int
    end: int
    reason: str


class SeriesOccurrence(_Shown):
    """An occurrence of a series: an AR of its own."""
    id: int
    start: int
    end: int
    state: str


class SeriesNotModified(_Shown):
    id: int
    reason: str


class Series(_Shown):
    """A recurring series (plus_reserve --repeat), as plus_status -series shows it."""
    id: int
    owner: str
    name: str
    rule: str = Field(description="the RFC 5545 RRULE")
    zone: str = Field(description="the zone its wall times are kept in")
    first_start: int
    duration: int
    nodes: int
    users: list[str]
    exceptions: list[str]
    state: str = Field(description="active (occurrences still to be granted), complete (every one granted or refused) or cancelled")
    handled: int = Field(description="occurrences granted or refused so far")
    granted: int
    next_start: int | None
    next_due: int | None = Field(description="when the next occurrence is granted")
    refused: list[SeriesRefusal]
    occurrences: list[SeriesOccurrence]
    cancelled: list["Reservation"] | None = None
    modified: list[int] | None = None
    not_modified: list[SeriesNotModified] | None = None


class Reservation(_Shown):
    """An AR as plus_status -r shows it."""
    id: int
    name: str
    owner: str
    group: str
    state: str = Field(description="plus_status's state letter")
    submission_time: int
    start: int
    end: int
    duration: int
    acl: list[str]
    account: str
    message: str
    released: int | None = Field(None, description="when it was released early (its nodes "
                                 "freed before its end): what it is charged until")
    granted_pe: str
    allocations: list[Allocation]
    inner: list[int] = Field(description="ARs inside this one (ResAccess)")
    request: RequestShown
    job_runtime_limit: int | None
    submit_hint: str
    idempotency_key: str | None
    pending: Pending | None
    approval: Approval | None = None
    refusal: RefusedChange | None
    warnings: list[str]
    series: int | None = Field(None, description="the series it is an occurrence of")
    series_made: Series | None = Field(None, description="the series a reserve with repeat made")


class AvailableNodes(_Shown):
    start: int
    end: int
    count: int
    nodes: list[str]


class AccountingRecord(_Shown):
    """An AR's use of its hosts within the period asked, as plus_account -l."""
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    id: int
    owner: str
    name: str
    state: str
    from_: int = Field(alias="from")
    to: int
    seconds: int
    node_seconds: int
    slot_seconds: int
    asked_node_seconds: int = Field(description="node-seconds its window asked for")
    used_node_seconds: int = Field(description="node-seconds its jobs used (acct records)")
    released_node_seconds: int = Field(description="node-seconds asked but given back by an "
                                       "early release or a cancel; node_seconds is what it held, "
                                       "and is charged")
    hosts: dict[str, int] = Field(description="slots held on each host")


class Calendar(_Shown):
    """A window of the calendar page: rows as compact as the page polls
    them. ``ars``: [id, name, owner, state, start, end, nodes joined by
    commas], ended and cancelled ones too; ``jobs``: [id, owner, kind,
    start, end, nodes joined by commas]; ``slots`` and ``properties``: each
    node's (nodes without properties left out). While no AR changed since
    ``since``: ``unchanged``, and the jobs only."""
    revision: int
    unchanged: bool | None = None
    now: int | None = None
    nodes: list[str] | None = None
    slots: dict[str, int] | None = None
    properties: dict[str, dict[str, Any]] | None = None
    ars: list[list[int | str]] | None = None
    jobs: list[list[int | str]]


class Span(_Shown):
    """Node-hours as a span: an owner's ``nodes`` from ``start`` to ``end``."""
    owner: str
    start: int
    end: int
    nodes: int


class Usage(_Shown):
    reserved: list[Span] = Field(description="each AR's hold on its hosts")
    used: list[Span] = Field(description="each job in an AR")


class ARUsage(_Shown):
    id: int
    now: int = Field(description="when the figures were taken (epoch seconds)")
    start: int
    end: int
    nodes: int
    reserved: int = Field(description="node-seconds reserved since the start")
    used: int = Field(description="node-seconds its jobs have used: ended (the reporting "
                                  "file) and running")
    busy: int = Field(description="its nodes running its jobs now: used grows by this many "
                                  "node-seconds a second until a job starts or ends")


class QueryAnswer(_Shown):
    UserID: str
    StartTime: int
    OtherInfo: str


class StartRange(_Shown):
    STime: int
    EndSTime: int


class ResqueryAnswer(_Shown):
    UserID: str
    ranges: list[StartRange]
    OtherInfo: str | None = None


class ReservationWithKey(Reservation):
    """The AR a seed verb made, with its ResKey (given this once)."""
    reskey: str


class SetresAnswer(_Shown):
    """SETRES's answer (RESQANDSET's adds StartTime), and the AR made."""
    SuccessOrNot: bool
    StartTime: int | None = None
    ResKey: str
    OtherInfo: str = Field(description="the AR as ResAccess names it, R<id>")
    reservation: ReservationWithKey


class JobSubmitted(BaseModel):
    """A job submitted with a claim: its id, and what the batch system said
    (each backend may add fields)."""
    model_config = ConfigDict(extra="allow")
    id: int | str


class Node(_Shown):
    """A node as GET /nodes lists it, the same at every daemon (its load
    within the inventory's step)."""
    name: str
    state: str = Field(description="down, reserved (an AR in its window holds it), busy "
                                   "(running jobs) or idle: the first that holds")
    slots: int
    reserved_slots: int = Field(description="slots the ARs in their window hold now")
    running_jobs: int
    runs_jobs: bool = Field(description="false for a host that only takes reservations "
                                        "(the native backend's exec: none)")
    memory_mb: int
    ncpus: int
    arch: str
    os: str
    properties: dict[str, str]
    queues: list[str]
    queue_states: list[list[str]] = Field(description="[queue, state] of each queue instance "
                                                      "that runs no jobs now")
    load: float | None
    ars: list[int] = Field(description="the ARs holding it now (in their window)")


class Job(_Shown):
    """A job of the batch system, as the backend lists it: the native
    scheduler's every job as plus_qstat shows it; Grid Engine's and
    TORQUE's running jobs, from the leader's last look (null: not known)."""
    id: str
    owner: str
    state: str = Field(description="the batch system's letters: qw, hqw, Eqw, t, r, dr, ...")
    nodes: list[str]
    ar: int | None
    name: str | None
    slots: int | None
    queue: str | None = Field(description="the master queue instance of a running job")
    priority: float | None
    submit_time: int | None
    start_time: int | None
    runtime_limit_end: int | None = Field(description="when its run time limit (h_rt, "
                                                      "walltime) ends")


class JobDeleted(_Shown):
    id: str
    owner: str
    messages: list[str] = Field(description="the batch system's answer, as its qdel prints it")


class WebConfig(_Shown):
    oidc: dict[str, Any] | None
    timezone: str = Field(description="the site's zone (plus.yaml's timezone), in which the "
                                      "page shows times unless its user chooses another")
    why: str | None = None


class WebSession(_Shown):
    token: str
    user: str
    expires: int


class FeedTokenShown(_Shown):
    """A calendar feed token as its owner lists it: never the secret."""
    id: str
    owner: str
    label: str
    created: int


class FeedUrls(_Shown):
    user: str
    queue: str = Field(description="a queue's feed: put the queue's name for QUEUE")
    maintenance: str = Field(description="the site's maintenance windows")


class FeedTokenMade(FeedTokenShown):
    """A new feed token, its secret shown this once, and the feeds' URLs with it."""
    token: str
    feeds: FeedUrls


class FeedTokenRevoked(_Shown):
    revoked: str
    owner: str


class Health(_Shown):
    """Whether this daemon serves, and how."""
    serving: bool = Field(description="its store answers")
    role: str = Field(description="leader or standby")
    store: str = Field(description="ok or unreachable")
    lag: int | None = Field(description="revisions its memory is behind the store")
    batch_system: str = Field(description="ok, not heard from (no look at the nodes for "
                                          "5 minutes), or unknown (none yet)")
    observed_seconds_ago: int | None


class WebhookShown(_Shown):
    """A webhook as its owner lists it: never its secret. ``cursor``: the
    last event its receiver took; ``failures``: deliveries failed in a row."""
    id: str
    owner: str
    url: str
    every: bool
    types: list[str]
    ending_soon: int | None
    created: int
    cursor: int
    delivered: int
    failures: int
    last_error: str


class WebhookMade(WebhookShown):
    """A new webhook and its signing secret, shown this once."""
    secret: str


class WebhookDeleted(_Shown):
    deleted: str


def answers(model: Any, status: int = 200, description: str = "") -> dict:
    """A route's ``responses`` entry for its success ``model``."""
    return {status: {"model": model, "description": description or "success"}}
