"""A backend's small JSON ledger on disk, replaced atomically.

Backends record there what the store cannot tell (which batch-system
objects they created, what they suspended or held), each change before the
command that makes it, so a daemon killed between two commands knows what
to undo. A torn write must never lose it: write aside, fsync, rename.
"""

from __future__ import annotations

import json
import os
from typing import Any


def load(path: str, what: str) -> dict[str, Any]:
    """The saved mapping, or an empty one if there is none yet."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read the {what} {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"cannot read the {what} {path}: expected a JSON object")
    return data


def save(path: str, data: dict[str, Any], mode: int | None = None) -> None:
    """Write aside, fsync, rename; ``mode`` sets the file's permissions."""
    temporary = f"{path}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(data, handle, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())
        if mode is not None:
            os.fchmod(handle.fileno(), mode)
    os.replace(temporary, path)
