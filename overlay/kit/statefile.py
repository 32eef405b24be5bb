"""A backend's small JSON ledger on disk, replaced atomically.

Backends record there what the store cannot tell (which batch-system
objects they created, what they suspended or held), each change before the
command that makes it, so a daemon killed between two commands knows what
to undo. A torn write must never lose it: write aside, fsync, rename.
"""

from __future__ import annotations

import json
import os
import secrets
from typing import Any

from overlay.kit.secretfile import check_private


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


def secret_key(path: str, what: str) -> bytes:
    """A signing key, made on first use readable by this user alone."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        with open(path, "rb") as handle:
            check_private(handle.fileno(), path, what)
            key = handle.read().strip()
        if len(key) < 32:
            raise ValueError(f"{path}: the {what} is too short (at least 32 bytes)") from None
        return key
    key = secrets.token_hex(32).encode()
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(key + b"\n")
    return key
