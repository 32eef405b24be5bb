"""qmgr -c '<one request>': create, delete, set and unset queues, nodes and
the server; list a queue or node; print the server or a queue. Every error
exits 2 with 'qmgr obj=<name> svr=default: <server text>'."""

from __future__ import annotations

from . import errors, formats, nodes, queues, simulate, values
from .qmgr_parse import SyntaxProblem, parse

SERVER_BOOLEANS = {"scheduling", "poll_jobs", "down_on_error", "mom_job_sync",
                   "moab_array_compatible", "note_append_on_error", "query_other_jobs",
                   "acl_host_enable", "allow_node_submit", "auto_node_np"}
SERVER_LONGS = {"log_events", "scheduler_iteration", "node_check_rate", "tcp_timeout",
                "job_stat_rate", "keep_completed", "next_job_number", "nppcu",
                "timeout_for_job_delete", "timeout_for_job_requeue", "max_running",
                "max_user_run", "np_default"}
SERVER_LISTS = {"acl_hosts", "managers", "operators", "submit_hosts"}
SERVER_STRINGS = {"default_queue", "mail_from", "default_node"}
SERVER_RESOURCES = {"resources_default", "resources_max"}
SERVER_ATTRIBUTES = (SERVER_BOOLEANS | SERVER_LONGS | SERVER_LISTS | SERVER_STRINGS
                     | SERVER_RESOURCES)
NODE_ATTRIBUTES = {"np", "properties", "note", "state", "ntype", "power_state"}
ATTRIBUTE_NAMES = {"server": SERVER_ATTRIBUTES, "queue": set(queues.ORDER),
                   "node": NODE_ATTRIBUTES}


def run(ctx, args: list[str]) -> int:
    if len(args) != 2 or args[0] != "-c":
        return ctx.unsupported("qmgr is only simulated as: qmgr -c '<request>'")
    text = args[1]
    try:
        request = parse(text, ATTRIBUTE_NAMES)
    except SyntaxProblem as problem:
        ctx.err(str(problem))
        return 2
    if request.operation in ("quit", "exit"):
        return 0
    handler = HANDLERS.get((request.operation, request.object))
    if handler is None or (request.name is None and request.object != "server"):
        return ctx.unsupported(f"qmgr request not simulated: {text}")
    try:
        handler(ctx, request)
    except errors.PbsError as error:
        ctx.err(f"qmgr obj={request.name or ''} svr=default: {error.text}\n")
        return 2
    return 0


def _manager(ctx) -> None:
    if not ctx.manager:
        raise errors.PbsError(errors.PERM)


def _create_queue(ctx, request) -> None:
    _manager(ctx)
    queue = queues.create(ctx.state, request.name, ctx.now)
    try:
        for name, resource, op, value in request.attributes:
            queues.set_attribute(queue, name, resource, op, value)
    except errors.PbsError:
        del ctx.state["queues"][request.name]
        raise


def _delete_queue(ctx, request) -> None:
    _manager(ctx)
    queues.get(ctx.state, request.name)
    if any(job["queue"] == request.name for job in ctx.state["jobs"].values()):
        raise errors.PbsError(errors.QUEBUSY)
    del ctx.state["queues"][request.name]


def _set_queue(ctx, request) -> None:
    _manager(ctx)
    queue = queues.get(ctx.state, request.name)
    trial = {"attrs": dict(queue["attrs"])}
    for name, resource, op, value in request.attributes:
        if request.operation == "unset":
            queues.unset_attribute(trial, name if resource is None else f"{name}.{resource}")
        else:
            queues.set_attribute(trial, name, resource, op, value)
    queue["attrs"] = trial["attrs"]
    queue["mtime"] = ctx.now


def _set_server(ctx, request) -> None:
    _manager(ctx)
    settings = dict(ctx.state["server"])
    kicked = False
    for name, resource, op, value in request.attributes:
        key = name if resource is None else f"{name}.{resource}"
        if name not in SERVER_ATTRIBUTES:
            raise errors.PbsError(errors.NOATTR, text=errors.TEXT[errors.NOATTR] + key)
        if request.operation == "unset":
            settings.pop(key, None)
        elif name in SERVER_BOOLEANS:
            settings[key] = values.boolean(value, key)
            kicked |= name == "scheduling" and settings[key] == "True"
        elif name in SERVER_LONGS:
            settings[key] = values.long(value, key)
        elif name in SERVER_LISTS:
            items = values.split_list(value)
            current = values.split_list(settings.get(key, ""))
            if op == "+=":
                items = current + [item for item in items if item not in current]
            elif op == "-=":
                items = [item for item in current if item not in items]
            settings[key] = ",".join(items)
        elif name in SERVER_RESOURCES:
            settings[key] = values.resource(resource or "", value)
        else:
            settings[key] = value
    ctx.state["server"] = settings
    if kicked:
        if ctx.state["next_cycle"] <= ctx.now:
            ctx.state["next_cycle"] = ctx.now + simulate.iteration(ctx.state)
        simulate.kick(ctx.state, ctx.now)


def _create_node(ctx, request) -> None:
    _manager(ctx)
    np, props = 1, []
    for name, _resource, _op, value in request.attributes:
        if name == "np":
            np = int(values.long(value, name))
        elif name == "properties":
            props = values.split_list(value)
        elif name not in NODE_ATTRIBUTES:
            raise errors.PbsError(errors.UNKNODEATR, text=errors.TEXT[errors.UNKNODEATR] + name)
    nodes.create(ctx.state, request.name, np, props, ctx.now)


def _delete_node(ctx, request) -> None:
    _manager(ctx)
    nodes.get(ctx.state, request.name)
    del ctx.state["nodes"][request.name]


def _set_node(ctx, request) -> None:
    _manager(ctx)
    node = nodes.modifiable(ctx.state, request.name)
    trial = dict(node, properties=list(node["properties"]))
    for name, _resource, op, value in request.attributes:
        if name == "properties":
            nodes.change_properties(trial, op, values.split_list(value))
        elif name == "np":
            trial["np"] = int(values.long(value, name))
        elif name == "note":
            trial["note"] = value
        elif name == "state" and value in ("offline", "free"):
            trial["offline"] = value == "offline"
        else:
            raise errors.PbsError(errors.UNKNODEATR, text=errors.TEXT[errors.UNKNODEATR] + name)
    node.update(trial)


def _list_queue(ctx, request) -> None:
    queues.get(ctx.state, request.name, f"cannot locate queue {request.name}")
    out = [f"Queue {request.name}\n"]
    for key, value in queues.attributes(ctx.state, request.name):
        if key == "mtime":
            value = formats.ctime(float(value))
            out.append(f"\t{key} = {value}\n")
        else:
            out.append(formats.qmgr_list_line(key, value))
    ctx.write("".join(out) + "\n")


def _list_node(ctx, request) -> None:
    if request.name not in ctx.state["nodes"]:
        raise errors.PbsError(errors.UNKNODE, "cannot locate specified node")
    out = [f"Node {request.name}\n"]
    for key, value in nodes.attributes(ctx.state, request.name, ctx.now):
        out.append(formats.qmgr_list_line(key, value))
    ctx.write("".join(out) + "\n")


def _print_sets(target: str, items: list[tuple[str, str]]) -> str:
    out = []
    for key, value in items:
        for index, item in enumerate(value.split(",")):
            out.append(f"set {target} {key} {'=' if index == 0 else '+='} {item}\n")
    return "".join(out)


def _print_queues(ctx, names: list[str]) -> str:
    out = ["#\n# Create queues and set their attributes.\n#\n"]
    for name in names:
        out.append(f"#\n# Create and define queue {name}\n#\ncreate queue {name}\n")
        out.append(_print_sets(f"queue {name}",
                               queues.attributes(ctx.state, name, public_only=True)))
    return "".join(out)


def _print_server(ctx, request) -> None:
    ctx.write(_print_queues(ctx, list(ctx.state["queues"]))
              + "#\n# Set server attributes.\n#\n"
              + _print_sets("server", list(ctx.state["server"].items())))


def _print_queue(ctx, request) -> None:
    queues.get(ctx.state, request.name, f"cannot locate queue {request.name}")
    ctx.write(_print_queues(ctx, [request.name]))


HANDLERS = {
    ("create", "queue"): _create_queue,
    ("delete", "queue"): _delete_queue,
    ("set", "queue"): _set_queue,
    ("unset", "queue"): _set_queue,
    ("set", "server"): _set_server,
    ("unset", "server"): _set_server,
    ("create", "node"): _create_node,
    ("delete", "node"): _delete_node,
    ("set", "node"): _set_node,
    ("list", "queue"): _list_queue,
    ("list", "node"): _list_node,
    ("print", "server"): _print_server,
    ("print", "queue"): _print_queue,
}
