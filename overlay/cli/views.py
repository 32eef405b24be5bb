"""How ARs look on a terminal and in XML: qrstat's table and detail view,
and XML valid against qrstat's schema (seed 000, Appendix 3) extended with
PluS's fields (overlay/schemas/qrstat.xsd)."""

from __future__ import annotations

import time

from overlay.language.leads import shown_leads
from overlay.language.limits import printable
from overlay.language.release import shown_idle_release
from overlay.language.timespec import (
    duration_formatter,
    format_ctime,
    format_duration,
    format_iso,
    time_formatter,
)

TYPE_CHECKING = False       # typing costs a command 3 ms to import
if TYPE_CHECKING:
    import xml.etree.ElementTree as ET
    from typing import Callable

TABLE_HEADER = ("AR-ID   name       owner        state start at            "
                "end at              duration")
RULE = "-" * 87
DETAIL_RULE = "=" * 62


def queue_name(view: dict) -> str:
    """The per-AR queue of PluS's queue-based mode: R<id>."""
    return f"R{view['id']}"


def granted_slots(view: dict) -> str:
    return ",".join(f"{queue_name(view)}@{a['node']}={a['slots']}" for a in view["allocations"])


def resource_pairs(view: dict) -> list[tuple[str, str]]:
    """What the AR asked for, as name=value pairs (nodes always first)."""
    request = view["request"]
    pairs = [("nodes", str(request["nodes"]))]
    for key, label in (("slots_per_node", "slots_per_node"), ("memory_mb", "mem_mb"),
                       ("ncpus", "ncpu"), ("arch", "arch"), ("os", "os")):
        if request.get(key) is not None:
            pairs.append((label, str(request[key])))
    pairs += [(name, value) for name, value in request.get("attributes", [])]
    if request.get("queues"):
        pairs.append(("sgeq", ",".join(request["queues"])))
    return pairs


def table(rows: list[list], show_nodes: bool = False, explain: bool = False) -> str:
    """qrstat's table from summary rows [id, name, owner, state, start, end,
    nodes(, message)]; with ``explain``, an AR's error reason below it."""
    header = TABLE_HEADER + ("  nodes" if show_nodes else "")
    when, length = time_formatter(), duration_formatter()
    lines = [header, RULE + ("-" * 7 if show_nodes else "")]
    columns: dict[tuple[str, str, str], str] = {}     # a listing repeats names, owners, states
    for ar_id, name, owner, state, start, end, nodes, *message in rows:
        who = columns.get((name, owner, state))
        if who is None:
            who = columns[name, owner, state] = (f"{printable(name[:10]):<10} "
                                                 f"{printable(owner[:12]):<12} {state:<5}")
        lines.append(f"{ar_id:>7} {who} {when(start)} {when(end)} {length(end - start)}"
                     f"{'  ' + nodes if show_nodes else ''}")
        if explain and message and message[0]:
            lines.append(f"       {printable(message[0])}")
    return "\n".join(lines)


def detail(view: dict) -> str:
    """qrstat -ar's block, with PluS's additions after Grid Engine's fields."""
    fields = [
        ("id", view["id"]), ("ar_name", view["name"]),
        ("submission_time", format_ctime(view["submission_time"])),
        ("owner", view["owner"]), ("group", view["group"]), ("state", view["state"]),
        ("acl_list", ",".join(view["acl"])),
        ("start_time", format_ctime(view["start"])), ("end_time", format_ctime(view["end"])),
        ("duration", format_duration(view["duration"])),
        ("granted_slots", granted_slots(view)),
        ("resource_list", ",".join(f"{k}={v}" for k, v in resource_pairs(view))),
        ("reserved_nodes", ",".join(a["node"] for a in view["allocations"])),
        ("job_runtime_limit", format_duration(view["job_runtime_limit"])),
        ("error_handling", "hard" if view["request"].get("hard_error") else "soft"),
        ("mail_options", (view["request"].get("mail_options") or "n")),
    ]
    if view["request"].get("mail_list"):
        fields.append(("mail_list", ",".join(view["request"]["mail_list"])))
    if view["request"].get("maint"):
        fields.append(("maintenance", "yes"))
    if view["request"].get("kind") != "slots":
        fields.append(("repair", view["request"].get("repair") or "before"))
    fields += [(name, shown_leads(view["request"][name]))
               for name in ("notify_start", "notify_end", "clear_notice")
               if view["request"].get(name) is not None]  # else the site's
    if view["request"].get("idle_release") is not None:
        fields.append(("idle_release", shown_idle_release(view["request"]["idle_release"])))
    if view["request"].get("release_when_done"):
        fields.append(("release_when_done", "yes"))
    outers = sorted({a["within"] for a in view["allocations"] if a.get("within")})
    if outers:
        fields.append(("inside", ",".join(f"R{outer}" for outer in outers)))
    if view.get("inner"):
        fields.append(("holds_inside", ",".join(f"R{inner}" for inner in view["inner"])))
    if view.get("series"):
        fields.append(("series", view["series"]))
    if view.get("message"):
        fields.append(("message", view["message"]))
    fields += [("warning", warning) for warning in view.get("warnings", ())]
    if view.get("submit_hint") and not view.get("approval"):   # held: it takes no job yet
        fields.append(("submit", view["submit_hint"]))
    refusal = view.get("refusal")
    if refusal:
        fields.append(("last_refusal", f"{format_ctime(refusal['time'])} "
                                       f"{refusal['operation']}: {refusal['reason']}"))
    if view.get("approval"):
        fields.append(("approval", f"awaited: plus_approve or plus_deny by a manager before "
                                   f"{format_ctime(view['approval']['due'])}, else it lapses"))
    pending = view.get("pending")
    if pending:
        fields.append(("pending_operation", f"{pending['operation']} (plus_commit or plus_abort "
                                            f"before {format_ctime(pending['expires'])})"))
        if pending.get("start") is not None:
            fields.append(("pending_window", f"{format_ctime(pending['start'])} - "
                                             f"{format_ctime(pending['end'])}"))
            fields.append(("pending_nodes", ",".join(a["node"] for a in pending["allocations"])))
    return "\n".join([DETAIL_RULE] + [f"{label + ':':<28}{printable(str(value))}"
                                      for label, value in fields])


SERIES_HEADER = ("SERIES  owner        state     rule                           "
                 "next start          granted refused")


def series_granted(series: dict) -> str:
    """plus_reserve --repeat's answer: the series, its ARs, its refusals."""
    granted = [str(o["id"]) for o in series["occurrences"]]
    lines = [f"Your advance reservation series {series['id']} has been granted: "
             f"{len(granted)} occurrence(s) so far ({', '.join(granted)})"]
    lines += [f"occurrence at {format_ctime(r['start'])} refused: {printable(r['reason'])}"
              for r in series["refused"]]
    if series["next_start"] is not None:
        when = (f"from {format_ctime(series['next_due'])} on" if series["next_due"] > time.time()
                else "by the leader's next passes (within the depth already)")
        lines.append(f"next occurrence {format_ctime(series['next_start'])}, granted {when}")
    return "\n".join(lines)


def series_table(listed: list[dict]) -> str:
    """plus_status -series: a line per series."""
    when = time_formatter()
    lines = [SERIES_HEADER, "-" * len(SERIES_HEADER)]
    for series in listed:
        upcoming = when(series["next_start"]) if series["next_start"] is not None else "-" * 19
        lines.append(f"{series['id']:>6}  {printable(series['owner'][:12]):<12} "
                     f"{series['state']:<9} {printable(series['rule'][:30]):<30} {upcoming} "
                     f"{series['granted']:>7} {len(series['refused']):>7}")
    return "\n".join(lines)


def series_detail(series: dict) -> str:
    """plus_status -series ID: the series, its occurrences and refusals."""
    fields = [("series", series["id"]), ("name", series["name"]), ("owner", series["owner"]),
              ("state", series["state"]), ("rule", series["rule"]), ("zone", series["zone"]),
              ("first_start", format_ctime(series["first_start"])),
              ("duration", format_duration(series["duration"])), ("nodes", series["nodes"]),
              ("exceptions", ",".join(series["exceptions"]) or "none"),
              ("granted", series["granted"]), ("handled", series["handled"])]
    if series["next_start"] is not None:
        fields += [("next_start", format_ctime(series["next_start"])),
                   ("next_granted_at", format_ctime(series["next_due"]))]
    fields += [("occurrence", f"R{o['id']} {format_ctime(o['start'])} - "
                              f"{format_ctime(o['end'])} {o['state']}")
               for o in series["occurrences"]]
    fields += [("refused", f"{format_ctime(r['start'])}: {r['reason']}")
               for r in series["refused"]]
    return "\n".join([DETAIL_RULE] + [f"{label + ':':<28}{printable(str(value))}"
                                      for label, value in fields])


def text_element(parent: "ET.Element", tag: str, value: object) -> "ET.Element":
    import xml.etree.ElementTree as ET  # only XML output pays for it
    element = ET.SubElement(parent, tag)
    element.text = printable(str(value))
    return element


def summary_element(view: dict) -> "ET.Element":
    """One <ar_summary> in ar_summary_t's element order, then PluS's fields."""
    import xml.etree.ElementTree as ET
    ar = ET.Element("ar_summary")
    text_element(ar, "id", view["id"])
    if view["name"]:
        text_element(ar, "name", view["name"])
    if view["account"]:
        text_element(ar, "account", view["account"])
    text_element(ar, "owner", view["owner"])
    text_element(ar, "submission_time", format_iso(view["submission_time"]))
    text_element(ar, "start_time", format_iso(view["start"]))
    text_element(ar, "end_time", format_iso(view["end"]))
    text_element(ar, "duration", view["duration"])
    text_element(ar, "state", view["state"])
    if view.get("message"):
        text_element(ar, "message", view["message"])
    resources = ET.SubElement(ar, "resource_list")
    for name, value in resource_pairs(view):
        ET.SubElement(resources, "resource", name=printable(name), type=printable(value))
    slots = ET.SubElement(ar, "granted_slots")
    for allocation in view["allocations"]:
        ET.SubElement(slots, "granted_slots", queue_instance=f"{queue_name(view)}@{allocation['node']}",
                      slots=str(allocation["slots"]))
    text_element(ar, "mail_options", (view["request"].get("mail_options") or "n"))
    if view["request"].get("mail_list"):
        mails = ET.SubElement(ar, "mail_list")
        for address in view["request"]["mail_list"]:
            user, _, host = address.partition("@")
            ET.SubElement(mails, "mail", user=printable(user), host=printable(host) or "NONE")
    if view["acl"]:
        acl = ET.SubElement(ar, "acl_list")
        for user in view["acl"]:
            ET.SubElement(acl, "acl", user=printable(user))
    text_element(ar, "group", view["group"])
    nodes = ET.SubElement(ar, "reserved_nodes")
    for allocation in view["allocations"]:
        text_element(nodes, "node", allocation["node"])
    text_element(ar, "job_runtime_limit", view["job_runtime_limit"])
    refusal = view.get("refusal")
    if refusal:
        text_element(ar, "last_refusal", refusal["reason"]).attrib.update(
            time=format_iso(refusal["time"]), operation=refusal["operation"])
    pending = view.get("pending")
    if pending:
        element = ET.SubElement(ar, "pending_operation", operation=pending["operation"],
                                expires=format_iso(pending["expires"]))
        if pending.get("start") is not None:
            element.set("start_time", format_iso(pending["start"]))
            element.set("end_time", format_iso(pending["end"]))
            for allocation in pending["allocations"]:
                text_element(element, "node", allocation["node"])
    return ar


def document(root: "ET.Element") -> str:
    import xml.etree.ElementTree as ET
    ET.indent(root)
    return "<?xml version='1.0' encoding='UTF-8'?>\n" + ET.tostring(root, encoding="unicode")


def status_xml(views: list[dict], summary: Callable[[dict], "ET.Element"] = summary_element) -> str:
    """A <qrstat> document of one <ar_summary> per AR (``summary`` makes each)."""
    import xml.etree.ElementTree as ET
    root = ET.Element("qrstat")
    root.extend(summary(view) for view in views)
    return document(root)


def availnodes_xml(data: dict) -> str:
    import xml.etree.ElementTree as ET
    root = ET.Element("plus_availnodes")
    text_element(root, "start_time", format_iso(data["start"]))
    text_element(root, "end_time", format_iso(data["end"]))
    text_element(root, "count", data["count"])
    for name in data["nodes"]:
        text_element(root, "node", name)
    return document(root)
