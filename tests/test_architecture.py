"""The house rules of the layout, checked on every module: the core never
imports a plugin, and a plugin reaches the core only through its front
door, overlay.api (an allow-list: overlay.api.plugin in the daemon,
overlay.api.commands in a plugin's commands), and never another plugin."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
with open(REPO / "pyproject.toml", "rb") as _handle:
    PLUGINS = tomllib.load(_handle)["tool"]["setuptools"]["package-dir"]
"""Import name -> folder, e.g. overlay_native -> plugins/native."""
FRONT_DOOR = ("overlay.api", "overlay.api.plugin", "overlay.api.commands")
"""All a plugin may import from the core."""
COMMANDS_DOOR = ("overlay.api", "overlay.api.commands")
"""All a plugin's commands may: standard library only, quick to start."""


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _package(module: str) -> str:
    return module.split(".", 1)[0]


def test_the_core_never_imports_a_plugin():
    offending = {str(path.relative_to(REPO)): sorted(m for m in _imports(path) if _package(m) in PLUGINS)
                 for path in (REPO / "overlay").rglob("*.py")}
    assert {file: modules for file, modules in offending.items() if modules} == {}


def _outside(modules: set[str], door: tuple[str, ...], plugin: str) -> list[str]:
    """The core modules (and other plugins) imported past the door; a name
    imported from the door (overlay.api.plugin.Backend) is the door's."""
    modules_of_door = tuple(m for m in door if m != "overlay.api")
    return sorted(m for m in modules
                  if (_package(m) == "overlay" and m not in door
                      and m.rpartition(".")[0] not in modules_of_door)
                  or (_package(m) in PLUGINS and _package(m) != plugin))


def _is_command(path: Path) -> bool:
    return "cli" in path.parts or path.name == "submitfilter.py"


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_a_plugin_imports_only_the_front_door_and_never_another_plugin(plugin):
    offending = {}
    for path in (REPO / PLUGINS[plugin]).rglob("*.py"):
        door = COMMANDS_DOOR if _is_command(path) else FRONT_DOOR
        bad = _outside(_imports(path), door, plugin)
        if bad:
            offending[str(path.relative_to(REPO))] = bad
    assert offending == {}


def test_the_front_door_names_what_it_lets_through():
    """Everything overlay.api re-exports is importable and listed in __all__."""
    from overlay.api import commands, plugin
    for door in (plugin, commands):
        assert sorted(door.__all__) == sorted(n for n in vars(door) if not n.startswith("_")
                                              and n != "annotations")


def test_the_check_sees_what_it_looks_for(tmp_path):
    """The rule's own test: a function-level import of the manager is found
    and refused; the door's names pass, and a command may not use the
    daemon's door."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from overlay.usecases.manager import Manager\n"
                      "    import overlay_sge\nfrom overlay.api.plugin import Backend\n")
    found = _imports(module)
    assert {"overlay.usecases.manager", "overlay.usecases.manager.Manager", "overlay_sge"} <= found
    assert _outside(found, FRONT_DOOR, "overlay_native") == [
        "overlay.usecases.manager", "overlay.usecases.manager.Manager", "overlay_sge"]
    assert "overlay.api.plugin" in _outside(found, COMMANDS_DOOR, "overlay_native")
