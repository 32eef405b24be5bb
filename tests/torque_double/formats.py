"""The output primitives of TORQUE's clients, copied in behaviour: qstat's
prt_attr (80-column wrapping at commas, long values broken with newline-tab),
ctime() dates, the MXML writer (no escaping, one line), qmgr's list layout."""

from __future__ import annotations

import time

LINESIZE = 77          # qstat's linesize; -1 lifts it
UNLIMITED = 65536


def ctime(epoch: float) -> str:
    """C's ctime() without the newline: 'Sat Nov 21 23:52:15 2026'."""
    return time.asctime(time.localtime(int(epoch)))


def started_comment(epoch: float) -> str:
    """pbs_sched's comment for a job it started."""
    return time.strftime("Job started on %a %b %d at %H:%M", time.localtime(int(epoch)))


def prt_attr(name: str, resource: str | None, value: str, linesize: int = LINESIZE) -> str:
    """qstat's prt_attr(): '    name[.resource] = value', broken at commas when
    a piece would pass the line size, long pieces cut every ~70 columns."""
    out = ["    ", name]
    start = len(name) + 7
    if resource is not None:
        start += len(resource) + 1
        out.append("." + resource)
    out.append(" = ")
    pieces = [piece for piece in value.split(",") if piece]   # strtok skips empties
    first = True
    for index, piece in enumerate(pieces):
        if len(piece) + start < linesize:
            out.append(piece)
            start += len(piece)
        else:
            if not first:
                out.append("\n\t")
                start = 9
            for char in piece:
                out.append(char)
                start += 1
                if start > linesize:
                    start = 8
                    out.append("\n\t")
        if index + 1 < len(pieces):
            first = False
            out.append(",")
    return "".join(out)


def xml_element(name: str, value: str) -> str:
    return f"<{name}>{value}</{name}>"


def xml_attributes(attributes: list[tuple[str, str | None, str]]) -> str:
    """(name, resource, value) triples as MXML writes them: a resource's
    values nested in one element per run of the same attribute name."""
    out = []
    parent = None
    children: list[str] = []
    for name, resource, value in attributes:
        if resource is not None and name == parent:
            children.append(xml_element(resource, value))
            continue
        if parent is not None:
            out.append(xml_element(parent, "".join(children)))
            parent, children = None, []
        if resource is not None:
            parent, children = name, [xml_element(resource, value)]
        else:
            out.append(xml_element(name, value))
    if parent is not None:
        out.append(xml_element(parent, "".join(children)))
    return "".join(out)


def qmgr_list_line(name: str, value: str) -> str:
    """One attribute of qmgr's 'list': tab indent, a break before an item of a
    comma list only when the line would reach 80 columns."""
    length = len(name) + 8 + 3
    indent = length
    out = [f"\t{name} = "]
    for index, item in enumerate(value.split(",")):
        length += len(item) + 1
        if index and length >= 80:
            out.append("\n" + " " * indent)
            length = len(item) + indent
            item = item.lstrip()
        out.append(item)
        if index + 1 < len(value.split(",")):
            out.append(",")
    return "".join(out) + "\n"
