"""TORQUE's ``-l nodes=`` specification: bound to an AR's node property,
read for placement in self-scheduling mode and for what could land on a
reserved node.

``nodes=2:ppn=4:bigmem+n5:ppn=2`` is parts joined by ``+``; each part is a
node count or a host name, then ``:ppn=N`` and properties. A job is kept on
an AR's nodes by giving every part the AR's property (the recorded way:
``qalter -l nodes=1:R1``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Part:
    count: int                      # nodes wanted (1 for a named host)
    host: str | None                # a named host, or None for any node
    ppn: int
    properties: tuple[str, ...]


def parse(spec: str | None) -> list[Part]:
    """The parts of a nodes spec; None or empty is TORQUE's default, one node."""
    parts = []
    for text in (spec or "1").split("+"):
        fields = [f for f in text.split(":") if f]
        if not fields:
            continue
        head, rest = fields[0], fields[1:]
        ppn, properties = 1, []
        for item in rest:
            key, sep, value = item.partition("=")
            if sep and key == "ppn" and value.isdigit():
                ppn = max(1, int(value))
            elif not sep:
                properties.append(item)
        if head.isdigit():
            parts.append(Part(max(1, int(head)), None, ppn, tuple(properties)))
        else:
            parts.append(Part(1, head, ppn, tuple(properties)))
    return parts or [Part(1, None, 1, ())]


def bound(spec: str | None, prop: str) -> str:
    """``spec`` with ``prop`` required by every part (unchanged if it is)."""
    pieces = []
    for text in (spec or "1").split("+"):
        fields = text.split(":")
        if prop not in fields[1:]:
            text = f"{text}:{prop}"
        pieces.append(text)
    return "+".join(pieces)


def is_bound(spec: str | None, prop: str) -> bool:
    return bound(spec, prop) == (spec or "")


def slots(spec: str | None) -> int:
    return sum(part.count * part.ppn for part in parse(spec))


def node_count(spec: str | None) -> int:
    return sum(part.count for part in parse(spec))


def could_land(spec: str | None, nodes: Iterable) -> bool:
    """Whether a job of ``spec`` could be put on any of ``nodes`` (each with
    ``name``, ``np`` and ``properties``)."""
    parts = parse(spec)
    return any(part.host in (None, node.name) and part.ppn <= node.np
               and all(p in node.properties for p in part.properties)
               for part in parts for node in nodes)
