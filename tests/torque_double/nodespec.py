"""Node specifications (-l nodes=2:ppn=2:prop+host:ppn=1) and where a job fits:
whether any node could ever meet a spec (the rule pbs_sched and qsub use to
reject or delete a job) and which free slots it gets now."""

from __future__ import annotations


class Part:
    """One '+'-separated piece: ``count`` nodes (or the node ``host``) with
    ``ppn`` free slots each and every property in ``props``."""

    __slots__ = ("count", "host", "ppn", "props")

    def __init__(self, count: int, host: str | None, ppn: int, props: list[str]):
        self.count, self.host, self.ppn, self.props = count, host, ppn, props


def parse(spec: str) -> list[Part]:
    """The spec's parts; a bare number is a node count, any other word a host name."""
    parts = []
    for text in spec.split("+"):
        tokens = text.split(":")
        head = tokens[0]
        count, host = (int(head), None) if head.isdigit() else (1, head)
        ppn = 1
        props = []
        for token in tokens[1:]:
            if token.startswith("ppn=") and token[4:].isdigit():
                ppn = int(token[4:])
            elif "=" not in token and token:
                props.append(token)
        parts.append(Part(count, host, ppn, props))
    return parts


def node_count(spec: str) -> int:
    return sum(part.count for part in parse(spec))


def properties(spec: str) -> list[str]:
    return [prop for part in parse(spec) for prop in part.props]


def _matches(name: str, node: dict, part: Part) -> bool:
    return ((part.host is None or part.host == name)
            and node["np"] >= part.ppn
            and all(prop in node["properties"] for prop in part.props))


def feasible(spec: str, nodes: dict) -> bool:
    """Could some node set ever run it, whatever the nodes' state now?"""
    capacity = {name: node["np"] for name, node in nodes.items()}
    return _choose(parse(spec), capacity, nodes) is not None


def place(spec: str, nodes: dict, free: dict[str, list[int]]) -> list[list] | None:
    """[[node, [slots]], ...] for the spec on the given free slots (only the
    nodes that can take jobs now), lowest nodes and slots first; None if it
    does not fit now."""
    chosen = _choose(parse(spec), {name: len(slots) for name, slots in free.items()}, nodes)
    if chosen is None:
        return None
    return [[name, free[name][:ppn]] for name, ppn in chosen]


def _choose(parts: list[Part], capacity: dict[str, int],
            nodes: dict) -> list[tuple[str, int]] | None:
    """Distinct nodes, first fit in node order, one per wanted node of each
    part, with the part's ppn within ``capacity``; (node, ppn) pairs."""
    taken: list[tuple[str, int]] = []
    used = set()
    for part in parts:
        for _ in range(part.count):
            name = next((name for name in capacity
                         if name not in used and capacity[name] >= part.ppn
                         and _matches(name, nodes[name], part)), None)
            if name is None:
                return None
            used.add(name)
            taken.append((name, part.ppn))
    return taken


def ranges(slots: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5', as exec_host and pbsnodes write slot lists."""
    out = []
    start = previous = None
    for slot in sorted(slots):
        if previous is not None and slot == previous + 1:
            previous = slot
            continue
        if start is not None:
            out.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = slot
    if start is not None:
        out.append(str(start) if start == previous else f"{start}-{previous}")
    return ",".join(out)


def exec_host(placement: list[list]) -> str:
    return "+".join(f"{name}/{ranges(slots)}" for name, slots in placement)
