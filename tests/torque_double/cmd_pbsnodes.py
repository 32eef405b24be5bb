"""pbsnodes: list nodes (-a text, -x one-line XML, -l the down/offline ones)
and mark them (-o offline, -c clear, -N note, -N n clears it). A change the
server rejects is reported on stderr, yet pbsnodes exits 0, as recorded."""

from __future__ import annotations

import getopt

from . import errors, formats, nodes

USAGE = ("usage:\tpbsnodes [-{c|d|l|o|p|r}] [-s server] [-n] [-N \"note\"] [-q] node ...\n"
         "\tpbsnodes [-{a|x}] [-s server] [-q] [node]\n")


def run(ctx, args: list[str]) -> int:
    try:
        options, names = getopt.gnu_getopt(args, "acdlopqrs:xN:n")
    except getopt.GetoptError:
        ctx.err(USAGE)
        return 1
    mode, xml, note, quiet = "list", False, None, False
    for flag, value in options:
        if flag in ("-o", "-c"):
            mode = flag
        elif flag == "-l":
            mode = "-l"
        elif flag == "-x":
            mode, xml = "list", True
        elif flag == "-N":
            note = "" if value == "n" else value
        elif flag == "-q":
            quiet = True
        elif flag in ("-d", "-p", "-n", "-s", "-r"):
            return ctx.unsupported(f"pbsnodes {flag} is not simulated")
    if any(not name for name in names):
        ctx.err(USAGE)
        return 1
    if mode == "list" and note is None:
        return _list(ctx, names, xml)
    if mode == "-l":
        return _list_marked(ctx, names)
    for name in names:
        _mark(ctx, name, mode, note, quiet)
    return 0


def _list(ctx, names: list[str], xml: bool) -> int:
    for name in names:
        if name not in ctx.state["nodes"]:
            ctx.err("pbsnodes: Unknown node  MSG=cannot locate specified node\n")
            return 1
    chosen = names or list(ctx.state["nodes"])
    if not chosen:
        ctx.err("pbsnodes: No nodes found\n")
        return 2
    if xml:
        body = "".join(
            "<Node>" + formats.xml_element("name", name)
            + "".join(formats.xml_element(key, value)
                      for key, value in nodes.attributes(ctx.state, name, ctx.now))
            + "</Node>" for name in chosen)
        ctx.write(f"<Data>{body}</Data>\n")
        return 0
    for name in chosen:
        lines = "".join(f"     {key} = {value}\n"
                        for key, value in nodes.attributes(ctx.state, name, ctx.now))
        ctx.write(f"{name}\n{lines}\n")
    return 0


def _list_marked(ctx, names: list[str]) -> int:
    for name in names or list(ctx.state["nodes"]):
        if name not in ctx.state["nodes"]:
            ctx.err("pbsnodes: Unknown node  MSG=cannot locate specified node\n")
            return 1
        state = nodes.display_state(ctx.state, name, ctx.now)
        if "down" in state or "offline" in state or "unknown" in state:
            ctx.write(f"{name:<20.20} {state}\n")
    return 0


def _mark(ctx, name: str, mode: str, note: str | None, quiet: bool) -> None:
    """-N first (as pbsnodes sends it first), then the state change; a failed
    note leaves the node alone."""
    if note is not None and not _change(ctx, name, "setting note attribute for", quiet,
                                        lambda node: node.update(note=note)):
        return
    if mode in ("-o", "-c"):
        offline = mode == "-o"
        _change(ctx, name, "marking node", quiet, lambda node: node.update(offline=offline))


def _change(ctx, name: str, what: str, quiet: bool, change) -> bool:
    try:
        if not ctx.manager:
            raise errors.PbsError(errors.PERM)
        change(nodes.modifiable(ctx.state, name))
    except errors.PbsError as error:
        if not quiet:
            ctx.err(f"Error {what} {name} - {error.text}\n")
        return False
    return True
