"""The README's map of rooms shows every room: each room of the core is a
folder of overlay/ (which holds nothing else), its row names every module
and package in it, and the map names nothing that is not there; the same
for the native backend's modules and packages."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORE = REPO / "overlay"
README = (REPO / "README.md").read_text()
NAME = re.compile(r"`([\w/.]+)`")


def _table(heading: str) -> str:
    """The markdown table whose header row starts with ``heading``."""
    start = README.index(heading)
    end = README.index("\n\n", start)
    return README[start:end]


def _cells(table: str) -> list[list[str]]:
    """Each body row's cells, without the outer pipes."""
    return [row.split("|")[1:-1] for row in table.splitlines()[2:]]


def _entries(folder: Path) -> set[str]:
    """A folder's modules and packages, one level down (``x.py``, ``x/``);
    a folder that is not a package (data) shows its files."""
    package = (folder / "__init__.py").exists()
    return {p.name + ("/" if p.is_dir() else "") for p in folder.iterdir()
            if (p.is_file() and p.name != "__init__.py" and (p.suffix == ".py" or not package))
            or (p.is_dir() and (p / "__init__.py").exists())}


def _core_rows() -> dict[str, set[str]]:
    """Each room's folder (``language/``) and the modules its row names."""
    rows = {}
    for cells in _cells(_table("| room (core) |")):
        (folder,) = NAME.findall(cells[1])
        assert folder not in rows, f"{folder} has two rows"
        rows[folder] = set(NAME.findall(cells[2]))
    return rows


def test_the_core_is_only_rooms():
    """overlay/ holds its __init__.py and folders: no module sits beside the rooms."""
    assert sorted(p.name for p in CORE.iterdir()
                  if p.is_file() and p.name != "__init__.py") == []


def test_the_map_has_a_row_for_every_room_and_no_other():
    folders = {p.name + "/" for p in CORE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert set(_core_rows()) == folders


def test_each_rooms_row_names_every_module_and_package_in_it_and_nothing_else():
    mismatched = {}
    for folder, named in _core_rows().items():
        there = _entries(CORE / folder) if (CORE / folder).is_dir() else set()
        if named != there:
            mismatched[folder] = {"not in the map": sorted(there - named),
                                  "not in the folder": sorted(named - there)}
    assert mismatched == {}


def test_every_module_the_descriptions_name_exists():
    """What a row's last column names (``http/companion.py``, ``routes/``,
    native's ``arplace.py``) is a file or folder of the core or a plugin."""
    names = {p.relative_to(root).as_posix() + ("/" if p.is_dir() else "")
             for root in (CORE, REPO / "plugins") for p in root.rglob("*")}
    missing = set()
    for cells in _cells(_table("| room (core) |")):
        for name in NAME.findall(cells[3]):
            if name.endswith((".py", "/")) and not any(
                    n == name or n.endswith("/" + name) for n in names):
                missing.add(name)
    assert missing == set()


def test_the_native_map_names_every_module_and_package():
    table = _table("| room (`plugins/native`) |")
    named = set(NAME.findall(table))
    assert {r.rstrip("/") for r in _entries(REPO / "plugins" / "native")} - \
        {n.rstrip("/") for n in named} == set()
