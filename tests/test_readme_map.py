"""The README's map of rooms shows every room: each module and package of
the core and of the native backend is named in its table, and the map
names nothing that is not there."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()


def _table(heading: str) -> str:
    """The markdown table whose header row starts with ``heading``."""
    start = README.index(heading)
    end = README.index("\n\n", start)
    return README[start:end]


def _named(table: str) -> set[str]:
    """The modules and folders a table's second column names."""
    names = set()
    for row in table.splitlines()[2:]:
        cells = row.split("|")
        names.update(re.findall(r"`([\w/.]+)`", cells[2]))
    return names


def _rooms(folder: Path) -> set[str]:
    return {p.name + ("/" if p.is_dir() else "") for p in folder.iterdir()
            if (p.suffix == ".py" and p.name != "__init__.py")
            or (p.is_dir() and (p / "__init__.py").exists())}


def test_the_core_map_names_every_module_and_package():
    named = _named(_table("| room (core) |"))
    assert _rooms(REPO / "overlay") - named == set()
    below = {p.name + ("/" if p.is_dir() else "") for p in (REPO / "overlay").rglob("*")}
    assert {n.rpartition("/")[2] or n.rstrip("/").rpartition("/")[2] + "/"
            for n in named if n.endswith((".py", "/"))} - below == set()


def test_the_native_map_names_every_module_and_package():
    table = _table("| room (`plugins/native`) |")
    named = set(re.findall(r"`([\w/.]+)`", table))
    assert {r.rstrip("/") for r in _rooms(REPO / "plugins" / "native")} - \
        {n.rstrip("/") for n in named} == set()
