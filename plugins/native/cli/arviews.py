"""How plus_qrstat shows ARs: Son of Grid Engine 8.1.9's qrstat table and
detail view, and XML valid against seed 000's qrstat schema (Appendix 3)
as it stands; PluS's own fields are plus_status -x's, not these."""

from __future__ import annotations

from overlay.api.commands import (
    DEFAULT_ACCOUNT,
    format_iso,
    format_pe_range,
    printable,
    status_xml,
    text_element,
)

TYPE_CHECKING = False       # typing costs a command 3 ms to import
if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

TABLE_HEADER = ("ar-id   name       owner        state start at             end at               "
                "duration")
TABLE_RULE = "-" * 90
DETAIL_RULE = "-" * 80


SGE_STATES = {"h": "hw"}
"""PluS's states Grid Engine lacks, in the letters its users read: an AR
held for a manager's approval is waiting on a hold someone else releases
(qstat's h, as in hqw)."""


def sge_state(letter: str) -> str:
    return SGE_STATES.get(letter, letter)


def _when(epoch: int) -> str:
    import time
    return time.strftime("%m/%d/%Y %H:%M:%S", time.localtime(epoch))


def _length(seconds: int) -> str:
    """qrstat's duration: HH:MM:SS (hours beyond 99 as they are)."""
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def table(rows: list[list], explain: bool = False) -> str:
    """The summary: rows [id, name, owner, state, start, end, nodes(, message)];
    with ``explain``, each AR's error reason on the line below it."""
    lines = [TABLE_HEADER, TABLE_RULE]
    for row in rows:
        ar_id, name, owner, state, start, end = row[:6]
        lines.append(f"{ar_id:>7} {printable(name[:10]):<10} {printable(owner[:12]):<12} "
                     f"{sge_state(state):<5} {_when(start)}  {_when(end)}  {_length(end - start)}")
        if explain and len(row) > 7 and row[7]:
            lines.append(f"       {printable(row[7])}")
    return "\n".join(lines)


def granted_slots(view: dict) -> str:
    return ",".join(f"{a.get('queue') or 'R' + str(view['id'])}@{a['node']}={a['slots']}"
                    for a in view["allocations"])


def resources(view: dict) -> list[tuple[str, str]]:
    """What the AR asked for: its -l requests, or for PluS's node ARs the
    nodes and what they must offer."""
    request = view["request"]
    pairs = [(name, value) for name, value in request.get("attributes", [])]
    if request["nodes"]:
        pairs.insert(0, ("nodes", str(request["nodes"])))
        if request.get("slots_per_node"):
            pairs.insert(1, ("slots_per_node", str(request["slots_per_node"])))
    return pairs


def _pe(view: dict) -> str | None:
    """8.1.9's line: the PE and the slot range as requested (-pe 'mp*' 2-6
    shows mp* slots 2-6); -xml's has the PE granted and its slots."""
    if not view.get("granted_pe"):
        return None
    request = view["request"]
    ranges = tuple(tuple(pair) for pair in request.get("pe_range") or ())
    return f"{request.get('pe') or view['granted_pe']} slots {format_pe_range(ranges)}"


def _acl(view: dict) -> list[str]:
    """acl_list as 8.1.9 shows it: what qrsub -u gave (the owner, who may
    always use the AR, only if -u named them); a node AR's whole list."""
    request = view["request"]
    return request["users"] if request.get("nodes") == 0 else view["acl"]


def detail(view: dict) -> str:
    """qrstat -ar's block, in 8.1.9's order; fields without a value left out
    but the name (shown empty, as qrstat does)."""
    request = view["request"]
    fields = [("id", view["id"]), ("name", view["name"]), ("owner", view["owner"]),
              ("state", sge_state(view["state"])), ("start_time", _when(view["start"])),
              ("end_time", _when(view["end"])), ("duration", _length(view["duration"])),
              ("message", view.get("message")), ("submission_time", _when(view["submission_time"])),
              ("group", view["group"]), ("account", view.get("account") or DEFAULT_ACCOUNT),
              ("resource_list", ", ".join(f"{k}={v}" for k, v in resources(view))),
              ("error_handling", "true" if request.get("hard_error") else None),
              ("granted_slots_list", granted_slots(view)),
              ("granted_parallel_environment", _pe(view)),
              ("checkpoint_name", request.get("ckpt")),
              ("mail_options", request.get("mail_options")),
              ("mail_list", ",".join(request.get("mail_list") or ())),
              ("acl_list", ",".join(_acl(view)))]
    lines = [DETAIL_RULE]
    for label, value in fields:
        if value or label == "name":
            lines.append(f"{label:<31}{printable(str(value))}")
    return "\n".join(lines)


def summary(view: dict) -> "ET.Element":
    """One <ar_summary> with ar_summary_t's elements in its order, each
    of its type (duration in seconds, times as xs:dateTime)."""
    import xml.etree.ElementTree as ET
    request = view["request"]
    ar = ET.Element("ar_summary")
    text_element(ar, "id", view["id"])
    if view["name"]:
        text_element(ar, "name", view["name"])
    text_element(ar, "account", view.get("account") or DEFAULT_ACCOUNT)
    text_element(ar, "owner", view["owner"])
    text_element(ar, "submission_time", format_iso(view["submission_time"]))
    text_element(ar, "start_time", format_iso(view["start"]))
    text_element(ar, "end_time", format_iso(view["end"]))
    text_element(ar, "duration", view["duration"])
    text_element(ar, "state", sge_state(view["state"]))
    if view.get("message"):
        text_element(ar, "message", view["message"])
    listed = ET.SubElement(ar, "resource_list")
    pairs = resources(view) or [("slots", str(sum(a["slots"] for a in view["allocations"])))]
    for name, value in pairs:
        ET.SubElement(listed, "resource", name=printable(name), type=printable(value))
    slots = ET.SubElement(ar, "granted_slots")
    for a in view["allocations"] or [{"node": "NONE", "slots": 0}]:
        ET.SubElement(slots, "granted_slots", slots=str(a["slots"]),
                      queue_instance=f"{a.get('queue') or 'R' + str(view['id'])}@{a['node']}")
    if view.get("granted_pe"):
        pe = ET.SubElement(ar, "granted_parallel_environment")
        text_element(pe, "parallel_environment", request.get("pe") or view["granted_pe"])
        text_element(pe, "slots", sum(a["slots"] for a in view["allocations"]))
    if request.get("ckpt"):
        text_element(ar, "checkpoint_name", request["ckpt"])
    text_element(ar, "mail_options", request.get("mail_options") or "n")
    if request.get("mail_list"):
        mails = ET.SubElement(ar, "mail_list")
        for address in request["mail_list"]:
            user, _, host = address.partition("@")
            ET.SubElement(mails, "mail", user=printable(user), host=printable(host) or "NONE")
    if _acl(view):
        acl = ET.SubElement(ar, "acl_list")
        for user in _acl(view):
            ET.SubElement(acl, "acl", user=printable(user))
    return ar


def document(views: list[dict]) -> str:
    return status_xml(views, summary)
