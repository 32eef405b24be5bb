"""What each side of the qrsub differential test answered, reduced to the
fields compared: exit status, decision, class of a refusal, and for a grant
its slot total, window, PE and placement (from qrstat -ar -xml, Grid
Engine's or plus_qrstat's)."""

from __future__ import annotations

import calendar
import re
import subprocess
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass

REFUSAL_CLASSES = (
    ("unknown queue", r"unknown queue"),
    ("unknown PE", r"parallel environment .* does not exist"),
    ("unknown resource", r"unknown resource"),
    ("unknown user or list", r"not known as a user|unknown (user|group|access list)"),
    ("not in arusers", r"must be manager or in userset"),
    ("no suitable queues", r"no suitable queues"),
    ("bad option", r"invalid|unrecognized|Numerical value|time format|expected|must be|argument"),
)
"""Refusal class -> a pattern of either side's message; the first that
matches names it."""


def refusal_class(text: str) -> str:
    for name, pattern in REFUSAL_CLASSES:
        if re.search(pattern, text, re.IGNORECASE):
            return name
    return "other" if text.strip() else "silent"


@dataclass
class Answer:
    """One side's answer to one request."""
    exit: int
    stdout: str
    stderr: str
    ar_id: str = ""

    @property
    def decision(self) -> str:
        if self.ar_id:
            return "grant"
        if re.search(r"verification: found (suitable queue|possible assignment)", self.stdout):
            return "verified"
        if "verification: no suitable queues" in self.stdout:
            return "verified none"
        return "deny" if self.exit else "nothing"

    def text(self) -> str:
        return " | ".join(part.strip() for part in (self.stdout, self.stderr) if part.strip())


GRANTED = re.compile(r"Your advance reservation (\d+) has been granted")


def answer(result: subprocess.CompletedProcess) -> Answer:
    """A finished qrsub's answer, with the AR id it was granted."""
    found = GRANTED.search(result.stdout)
    return Answer(result.returncode, result.stdout, result.stderr,
                  found.group(1) if found else "")


@dataclass
class Grant:
    """An AR as qrstat -ar -xml shows it."""
    start: int
    end: int
    placement: dict[str, int]
    pe: str

    @property
    def slots(self) -> int:
        return sum(self.placement.values())


def _epoch(text: str) -> int:
    """qrstat's times: Grid Engine's are local, plus_qrstat's UTC with Z."""
    if text.endswith("Z"):
        return calendar.timegm(time.strptime(text[:-1], "%Y-%m-%dT%H:%M:%S"))
    return int(time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S")))


def grants(document: str) -> dict[str, Grant]:
    """AR id -> its grant, from either side's qrstat -xml (the two name
    the list element differently: granted_slots_list and granted_slots)."""
    shown = {}
    for summary in ElementTree.fromstring(document).iter("ar_summary"):
        placement = {item.get("queue_instance"): int(item.get("slots"))
                     for item in summary.iter("granted_slots") if item.get("queue_instance")}
        pe = summary.find("granted_parallel_environment")
        pe_text = "" if pe is None else \
            f"{pe.findtext('parallel_environment', '')} {pe.findtext('slots', '')}".strip()
        shown[summary.findtext("id")] = Grant(_epoch(summary.findtext("start_time")),
                                              _epoch(summary.findtext("end_time")),
                                              placement, pe_text)
    return shown


FIELDS = ("exit", "decision", "class", "slots", "window", "pe", "placement")


def fields(reply: Answer, grant: Grant | None, forced: bool) -> dict[str, object]:
    """The compared fields of one side's answer (None: not applicable)."""
    denied = reply.decision in ("deny", "verified none", "nothing")
    return {
        "exit": reply.exit,
        "decision": reply.decision,
        "class": refusal_class(reply.text()) if denied else None,
        "slots": grant.slots if grant else None,
        "window": (grant.start, grant.end) if grant else None,
        "pe": grant.pe if grant else None,
        "placement": dict(sorted(grant.placement.items())) if grant and forced else None,
    }
