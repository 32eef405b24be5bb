"""Queues: their attributes as qmgr sets them (types, normalised values) and
as the server reports them, in que_attr_def order with the read-only counts."""

from __future__ import annotations

from . import errors, jobs, values

# que_attr_def order (TORQUE 6.1 queue_attr_def.cpp); resources_* hold resources.
ORDER = ["queue_type", "priority", "hostlist", "rerunnable", "max_queuable",
         "max_user_queuable", "total_jobs", "state_count", "max_report", "max_running",
         "acl_host_enable", "acl_hosts", "acl_user_enable", "acl_users", "from_route_only",
         "resources_max", "resources_min", "resources_default", "acl_group_enable",
         "acl_groups", "acl_logic_or", "acl_group_sloppy", "mtime", "disallowed_types",
         "checkpoint_dir", "checkpoint_min", "checkpoint_defaults", "rendezvous_retry",
         "reserved_expedite", "reserved_sync", "resources_available", "resources_assigned",
         "kill_delay", "max_user_run", "max_group_run", "keep_completed", "is_transit",
         "route_destinations", "alt_router", "route_held_jobs", "route_waiting_jobs",
         "route_retry_time", "route_lifetime", "enabled", "started", "features_required",
         "required_login_property"]
BOOLEAN = {"rerunnable", "acl_host_enable", "acl_user_enable", "from_route_only",
           "acl_group_enable", "acl_logic_or", "acl_group_sloppy", "is_transit", "alt_router",
           "route_held_jobs", "route_waiting_jobs", "enabled", "started"}
LISTS = {"hostlist", "acl_hosts", "acl_users", "acl_groups", "disallowed_types",
         "route_destinations"}
RESOURCES = {"resources_max", "resources_min", "resources_default", "resources_available"}
STRINGS = {"checkpoint_dir", "checkpoint_defaults", "features_required",
           "required_login_property"}
READ_ONLY = {"total_jobs", "state_count", "mtime", "resources_assigned"}
LONGS = set(ORDER) - BOOLEAN - LISTS - RESOURCES - STRINGS - READ_ONLY - {"queue_type"}
TYPES = {"e": "Execution", "r": "Route"}


def get(state: dict, name: str, msg: str | None = None) -> dict:
    if name not in state["queues"]:
        raise errors.PbsError(errors.UNKQUE, msg)
    return state["queues"][name]


def create(state: dict, name: str, now: float) -> dict:
    if name in state["queues"]:
        raise errors.PbsError(errors.QUEEXIST)
    queue = {"attrs": {}, "mtime": now, "assigned_seen": False}
    state["queues"][name] = queue
    return queue


def set_attribute(queue: dict, attr: str, resource: str | None, op: str, value: str) -> None:
    """One 'set queue' item, decoded as the server would."""
    key = attr if resource is None else f"{attr}.{resource}"
    bad = errors.PbsError(errors.BADATVAL, text=errors.TEXT[errors.BADATVAL] + key)
    if attr in READ_ONLY:
        raise errors.PbsError(errors.ATTRRO, text=errors.TEXT[errors.ATTRRO] + key)
    if attr not in ORDER:
        raise errors.PbsError(errors.NOATTR, text=errors.TEXT[errors.NOATTR] + key)
    attrs = queue["attrs"]
    if attr == "queue_type":
        kind = TYPES.get(value.strip()[:1].lower())
        if kind is None or not kind.lower().startswith(value.strip().lower()):
            raise bad
        attrs[key] = kind
    elif attr in BOOLEAN:
        decoded = values.boolean(value, key)
        if attr == "enabled" and decoded == "True" and "queue_type" not in attrs:
            raise errors.PbsError(errors.QUENOEN)
        attrs[key] = decoded
    elif attr in LISTS:
        items = values.split_list(value)
        current = values.split_list(attrs.get(key, ""))
        if op == "+=":
            items = current + [item for item in items if item not in current]
        elif op == "-=":
            items = [item for item in current if item not in items]
        if items:
            attrs[key] = ",".join(items)
        else:
            attrs.pop(key, None)
    elif attr in RESOURCES:
        if resource is None:
            raise bad
        attrs[key] = values.resource(resource, value)
    elif attr in LONGS:
        number = int(values.long(value, key))
        if op in ("+=", "-=") and key in attrs:
            number = int(attrs[key]) + (number if op == "+=" else -number)
        attrs[key] = str(number)
    else:
        attrs[key] = value


def unset_attribute(queue: dict, key: str) -> None:
    queue["attrs"].pop(key, None)


def state_count(state: dict, name: str) -> tuple[int, str]:
    """The queue's job count and its state_count string (with TORQUE's trailing space)."""
    counts = {state_: 0 for state_ in ("T", "Q", "H", "W", "R", "E", "C")}
    for job in state["jobs"].values():
        if job["queue"] == name:
            counts[job["state"]] += 1
    text = ("Transit:{T} Queued:{Q} Held:{H} Waiting:{W} Running:{R} Exiting:{E} "
            "Complete:{C} ").format(**counts)
    return sum(counts.values()), text


def attributes(state: dict, name: str, public_only: bool = False) -> list[tuple[str, str]]:
    """(name[.resource], value) as 'qstat -Q -f' and 'qmgr list' report them;
    ``public_only`` keeps what 'print server' writes back (no read-only ones)."""
    queue = state["queues"][name]
    items = list(queue["attrs"].items())
    if not public_only:
        total, counts = state_count(state, name)
        items += [("total_jobs", str(total)), ("state_count", counts),
                  ("mtime", str(int(queue["mtime"])))]
        if queue["assigned_seen"]:
            assigned = sum(int(jobs.resource(job, "nodect") or 1)
                           for job in state["jobs"].values()
                           if job["queue"] == name and job["state"] in jobs.ON_NODE)
            items.append(("resources_assigned.nodect", str(assigned)))
    rank = {key: index for index, (key, _) in enumerate(items)}
    return sorted(items, key=lambda item: (ORDER.index(item[0].split(".")[0]), rank[item[0]]))


def acl_allows(queue: dict, user: str, groups: list[str]) -> bool:
    """The submit-time user and group ACLs (a user entry may carry @host)."""
    attrs = queue["attrs"]
    if values.is_true(attrs.get("acl_user_enable")):
        entries = values.split_list(attrs.get("acl_users", ""))
        if not any(entry.split("@")[0] in (user, "*") for entry in entries):
            return False
    return not (values.is_true(attrs.get("acl_group_enable"))
                and not set(values.split_list(attrs.get("acl_groups", ""))) & set(groups))


def started(queue: dict) -> bool:
    return values.is_true(queue["attrs"].get("started"))


def enabled(queue: dict) -> bool:
    return values.is_true(queue["attrs"].get("enabled"))
