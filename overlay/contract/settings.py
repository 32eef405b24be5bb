"""How a plugin declares and checks its section of plus.yaml: one small
helper for the core's plugins and third-party ones alike.

A section is a mapping of setting names to Checks. ``read_section`` refuses
unknown names and passes each value through its Check; every message names
the full key (``sge.timeout``) and what is accepted, because the daemon
refuses to start on it and the operator must find the line in the file.

    CHECKS = {"timeout": seconds(1), "conflict": choice(("requeue", "kill"))}
    values = read_section("mine", config.sections.get("mine", {}), CHECKS)
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping


@dataclass(frozen=True)
class Check:
    """One kind of value: ``convert`` gives the value to use, or None when
    the YAML value is not of this kind (then the message says ``accepted``)."""

    accepted: str
    convert: Callable[[Any], Any]

    def __call__(self, key: str, value: Any) -> Any:
        result = self.convert(value)
        if result is None:
            raise ValueError(f"{key}: expected {self.accepted}, got {value!r}")
        return result


def read_section(section: str, options: Mapping[str, Any], checks: Mapping[str, Check],
                 others: Iterable[str] = ()) -> dict[str, Any]:
    """The section's checked values; ``others`` are names another part of
    the plugin reads and checks itself (left out here); any other name is
    refused."""
    if not isinstance(options, Mapping):
        raise ValueError(f"{section}: expected a mapping of settings, got {options!r}")
    known = [*checks, *others]
    for key in options:
        if key not in known:
            raise ValueError(f"{section}.{key}: unknown setting; known: {', '.join(known)}")
    return {key: checks[key](f"{section}.{key}", value)
            for key, value in options.items() if key in checks}


def _whole(value: Any) -> int | None:
    """A YAML int (booleans are ints in Python, but not numbers here)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def whole(least: int, most: int | None = None, unit: str = "") -> Check:
    """A whole number from ``least`` (to ``most``), e.g. of seconds."""
    what = f"a whole number{' of ' + unit if unit else ''}"
    accepted = f"{what} of {least} or more" if most is None else f"{what} from {least} to {most}"
    return Check(accepted, lambda value: value if _whole(value) is not None and value >= least
                 and (most is None or value <= most) else None)


def seconds(least: int) -> Check:
    return whole(least, unit="seconds")


def text(accepted: str = "a non-empty string", pattern: str = r"(?s).*\S.*") -> Check:
    """A string matching ``pattern`` whole (by default: not blank)."""
    return Check(accepted, lambda value: value if isinstance(value, str)
                 and re.fullmatch(pattern, value) else None)


def path(absolute: bool = True) -> Check:
    """A file or folder name; with ``absolute``, from the root."""
    accepted = "an absolute path" if absolute else "a path"
    return Check(accepted, lambda value: value if isinstance(value, str) and value.strip()
                 and (not absolute or os.path.isabs(value)) else None)


def choice(options: Iterable[str]) -> Check:
    """One of a few words."""
    words = tuple(options)
    return Check(f"one of {', '.join(words)}", lambda value: value if value in words else None)


FLAG = Check("true or false", lambda value: value if isinstance(value, bool) else None)
PORT = Check("a port number 1-65535", lambda value: value if _whole(value) is not None
             and 1 <= value <= 65535 else None)
