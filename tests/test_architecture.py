"""The house rules of the layout, checked on every module: the core never
imports a plugin, and a plugin reaches the core only through its front
door (never the use cases in overlay.manager, nor the daemon's clock or
server) and never another plugin."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
with open(REPO / "pyproject.toml", "rb") as _handle:
    PLUGINS = tomllib.load(_handle)["tool"]["setuptools"]["package-dir"]
"""Import name -> folder, e.g. overlay_native -> plugins/native."""
BEHIND_THE_DOOR = ("overlay.manager", "overlay.lifecycle", "overlay.daemon")


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


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_a_plugin_imports_neither_the_use_cases_nor_another_plugin(plugin):
    offending = {}
    for path in (REPO / PLUGINS[plugin]).rglob("*.py"):
        bad = sorted(m for m in _imports(path)
                     if any(m == inner or m.startswith(inner + ".") for inner in BEHIND_THE_DOOR)
                     or (_package(m) in PLUGINS and _package(m) != plugin))
        if bad:
            offending[str(path.relative_to(REPO))] = bad
    assert offending == {}


def test_the_check_sees_what_it_looks_for(tmp_path):
    """The rule's own test: a function-level import of the manager is found."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from overlay.manager import Manager\n    import overlay_sge\n")
    assert {"overlay.manager", "overlay.manager.Manager", "overlay_sge"} <= _imports(module)
