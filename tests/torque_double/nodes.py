"""Nodes as pbs_server keeps them: the state string, the mom's stale status
report, creation (down until the mom reports in) and the 6.1-dev bug: once
'properties -=' empties a node's list, every later change to it fails until the
node is deleted and created again."""

from __future__ import annotations

import random

from . import errors, jobs, nodespec

# The mom's status report as recorded; the figures after 'uname' are this
# host's, frozen (only rectime and jobs follow the simulation).
STATUS = ("opsys=linux,uname=Linux {name} 6.18.44-fc-v669 #1 SMP PREEMPT_DYNAMIC @0 x86_64,"
          "sessions=5209 25258,nsessions=2,nusers=2,idletime=191138,totmem=24684084kb,"
          "availmem=24254444kb,physmem=24684084kb,ncpus=2,loadave=0.81,gres=,"
          "netload=122197492,state=free,varattr= ,cpuclock=Fixed,version=6.1-dev,"
          "rectime={rectime},jobs={jobs}")


def creating(node: dict) -> bool:
    return node["created_at"] is not None


def usable(node: dict) -> bool:
    """Can pbs_sched or qrun put a job there now?"""
    return node["mom_up"] and not node["offline"] and not creating(node)


def free_slots(state: dict) -> dict[str, list[int]]:
    """node -> its free slots, for the nodes that can take jobs now."""
    used = jobs.occupancy(state)
    return {name: [slot for slot in range(node["np"]) if slot not in used.get(name, {})]
            for name, node in state["nodes"].items() if usable(node)}


def display_state(state: dict, name: str, now: float) -> str:
    """pbsnodes' state: 'free', 'offline', 'down', 'job-exclusive' when every slot is busy, and
    'down,offline,MOM-list-not-sent' in the first half of a new node's wait for its mom."""
    node = state["nodes"][name]
    if creating(node):
        half = node["created_at"] + state["settings"]["mom_report_delay"] / 2
        if now < half:
            return "down,offline,MOM-list-not-sent"
    words = []
    if not node["mom_up"] or creating(node):
        words.append("down")
    if node["offline"]:
        words.append("offline")
    if not words and len(jobs.occupancy(state).get(name, {})) >= node["np"]:
        words.append("job-exclusive")
    return ",".join(words) or "free"


def job_list(state: dict, name: str) -> str:
    """pbsnodes' <jobs>: 'slot/jobid' (slot ranges per job), by slot."""
    by_job: dict[str, list[int]] = {}
    for slot, job_id in sorted(jobs.occupancy(state).get(name, {}).items()):
        by_job.setdefault(job_id, []).append(slot)
    entries = sorted(by_job.items(), key=lambda item: item[1][0])
    return ",".join(f"{nodespec.ranges(slots)}/{job_id}" for job_id, slots in entries)


def attributes(state: dict, name: str, now: float) -> list[tuple[str, str]]:
    """The node's attributes in pbsnodes order; empty ones left out."""
    node = state["nodes"][name]
    attrs = [("state", display_state(state, name, now)), ("power_state", "Running"),
             ("np", str(node["np"]))]
    if node["properties"]:
        attrs.append(("properties", ",".join(node["properties"])))
    attrs.append(("ntype", "cluster"))
    running = job_list(state, name)
    if running:
        attrs.append(("jobs", running))
    if node["status_time"] is not None:
        attrs.append(("status", STATUS.format(name=name, rectime=int(node["status_time"]),
                                               jobs=node["status_jobs"])))
    if node["note"]:
        attrs.append(("note", node["note"]))
    attrs += [("mom_service_port", "15002"), ("mom_manager_port", "15003")]
    return attrs


def mom_report(state: dict, name: str, now: float) -> None:
    """The mom reports in: the node is up and its status fresh."""
    node = state["nodes"][name]
    node["mom_up"] = True
    node["created_at"] = None
    node["report_at"] = None
    node["status_time"] = now
    node["status_jobs"] = " ".join(sorted(set(jobs.occupancy(state).get(name, {}).values())))


def create(state: dict, name: str, np: int, props: list[str], now: float) -> None:
    """qmgr 'create node': down until its mom reports in, mom_report_delay later."""
    if name in state["nodes"]:
        raise errors.PbsError(errors.NODEEXIST)
    node = {"np": np, "properties": props, "note": "", "offline": False, "mom_up": False,
            "created_at": now, "report_at": now + state["settings"]["mom_report_delay"],
            "status_time": None, "status_jobs": "", "bugged": False}
    state["nodes"][name] = node


def get(state: dict, name: str) -> dict:
    if name not in state["nodes"]:
        raise errors.PbsError(errors.UNKNODE)
    return state["nodes"][name]


def modifiable(state: dict, name: str) -> dict:
    """The node, if the server will change it now (the empty-list bug)."""
    node = get(state, name)
    if node["bugged"]:
        raise errors.PbsError(errors.SYSTEM, text=errors.TEXT[errors.SYSTEM]
                              + random.choice(errors.BUG_ERRNO_TEXTS))
    return node


def change_properties(node: dict, op: str, items: list[str]) -> None:
    """'=' replaces the list; '+=' appends (duplicates kept); '-=' removes one
    copy of each item, absent ones silently. Emptying the list by '-=' sets
    off the bug."""
    if op == "=":
        node["properties"] = list(items)
        return
    if op == "+=":
        node["properties"] += items
        return
    had = bool(node["properties"])
    for item in items:
        if item in node["properties"]:
            node["properties"].remove(item)
    if had and not node["properties"]:
        node["bugged"] = True
