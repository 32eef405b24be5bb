"""Slurm's host lists (``snode[1-3,7],gpu[01-02]``), read within bounds.

Every node list Slurm prints is compressed this way; the backend reads
them from scontrol and squeue and writes plain comma lists back, which
every Slurm command accepts."""

from __future__ import annotations

import re

MAX_HOSTS = 100_000
"""A list naming more hosts than this is refused, not expanded."""

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


class HostlistError(ValueError):
    """A host list Slurm would not print."""


def _split_top(text: str) -> list[str]:
    """The list's items: commas outside brackets separate them."""
    items, depth, begun = [], 0, 0
    for index, char in enumerate(text):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in host list {text!r}")
        elif char == "," and depth == 0:
            items.append(text[begun:index])
            begun = index + 1
    if depth:
        raise HostlistError(f"unbalanced '[' in host list {text!r}")
    items.append(text[begun:])
    return [item for item in items if item]


def _expand_item(item: str, budget: int) -> list[str]:
    opened = item.find("[")
    if opened < 0:
        return [item]
    closed = item.index("]", opened)
    prefix, inside, rest = item[:opened], item[opened + 1:closed], item[closed + 1:]
    tails = _expand_item(rest, budget) if rest else [""]
    names: list[str] = []
    for part in inside.split(","):
        match = _RANGE.match(part)
        if not match:
            raise HostlistError(f"bad range {part!r} in host list item {item!r}")
        first, last = match.group(1), match.group(2) or match.group(1)
        low, high = int(first), int(last)
        if high < low:
            raise HostlistError(f"range {part!r} runs backwards in {item!r}")
        if len(names) + (high - low + 1) * len(tails) > budget:
            raise HostlistError(f"host list names more than {MAX_HOSTS} hosts")
        width = len(first) if first.startswith("0") else 0
        names += [f"{prefix}{number:0{width}d}{tail}"
                  for number in range(low, high + 1) for tail in tails]
    return names


def expand(text: str) -> list[str]:
    """The hosts a Slurm host list names, in its order; "" and "(null)"
    name none."""
    text = text.strip()
    if text in ("", "(null)", "None"):
        return []
    hosts: list[str] = []
    for item in _split_top(text):
        hosts += _expand_item(item, MAX_HOSTS - len(hosts))
    return hosts
