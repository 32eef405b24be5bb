"""The seams of overlay/daemon/services: the socket's dispatch table is the union
of the families' operations, each wire name once; a plugin cannot take a
core operation's name; and the operations ask the use cases (the
Manager's public methods), never its internals."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from overlay.contract import plugins
from overlay.contract.hookspecs import hookimpl
from overlay.daemon.services import callers, service
from overlay.daemon.services.service import OPERATIONS, Service, dispatch_table
from test_manager import Env

SERVICES = Path(service.__file__).parent
WIRE_NAMES = {
    "reserve", "modify", "cancel", "destroy", "commit", "abort", "status", "availnodes",
    "approve", "deny", "release", "series_status", "series_cancel", "series_modify",
    "query", "resquery", "setres", "resqandset", "claim",
    "ping", "token", "revoke_tokens", "web_link", "web_session", "web_config",
    "calendar", "usage", "ar_usage", "accounting", "shutdown", "daemons", "metrics", "health", "feed",
    "feed_token", "feed_tokens", "revoke_feed_token",
    "events", "event_head", "webhook_add", "webhooks", "webhook_remove",
    "nodes", "jobs", "job", "remove_job"}
"""The operations the commands and the HTTP API send: a name changed here
breaks every client installed."""
MANAGER_INTERNALS = {"ars", "store", "backend", "inside", "refusals", "by_key", "nodes",
                     "planner", "lock", "history", "changed"}
"""(Plugins are asked for their operations through Manager.plugin_operations.)"""


def test_the_dispatch_table_serves_exactly_the_wire_names():
    assert set(OPERATIONS) == WIRE_NAMES


def test_each_family_names_its_operations_by_their_wire_names():
    for family in service.FAMILIES:
        for name, operation in family.OPERATIONS.items():
            assert operation.__name__ == name, f"{family.__name__}: {name}"


def test_a_name_offered_by_two_families_is_refused():
    first = SimpleNamespace(__name__="first", OPERATIONS={"status": print})
    second = SimpleNamespace(__name__="second", OPERATIONS={"status": print})
    with pytest.raises(ValueError, match="'status' is offered twice"):
        dispatch_table((first, second))


def test_the_operations_only_the_peer_may_call_are_served():
    assert callers.PEER_ONLY <= set(OPERATIONS)


class _Squatter:
    @hookimpl
    def plus_client_operations(self, backend, ar_status):
        return {"status": lambda caller, args: []}


def test_a_plugin_may_not_offer_a_core_operation(tmp_path):
    env = Env(tmp_path)
    env.pm.register(_Squatter())
    try:
        with pytest.raises(plugins.PluginError, match="'status' is offered twice"):
            Service(env.manager, lambda ars: None, lambda: None)
    finally:
        env.backend.close()
        env.store.close()


def _manager_fields(path: Path) -> set[str]:
    """The attributes a module reads of anything called ``manager``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute):
            owner = node.value
            name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
            if name == "manager":
                found.add(node.attr)
    return found


@pytest.mark.parametrize("module", sorted(p.name for p in SERVICES.glob("*.py")))
def test_the_operations_ask_the_use_cases_not_their_fields(module):
    fields = _manager_fields(SERVICES / module)
    assert {f for f in fields if f in MANAGER_INTERNALS or f.startswith("_")} == set()


def test_the_check_sees_a_reach_into_the_manager(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f(context):\n    return context.manager.store.x, manager.inside\n")
    assert {"store", "inside"} <= _manager_fields(module)
