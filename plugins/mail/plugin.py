"""Entry point of the mail plugin: checks the ``mail:`` section and
registers a Notifier, unless ``enabled: false``."""

from __future__ import annotations

import re
import socket
from typing import Any, Callable

import pluggy

from overlay.hookspecs import hookimpl
from overlay_mail.notifier import Notifier, Settings

Check = Callable[[str, Any], Any]


def _text(pattern: str, accepted: str) -> Check:
    def check(key: str, value: Any) -> str:
        if not isinstance(value, str) or not re.fullmatch(pattern, value):
            raise ValueError(f"{key}: expected {accepted}, got {value!r}")
        return value
    return check


def _port(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise ValueError(f"{key}: expected a port number 1-65535, got {value!r}")
    return value


def _timeout(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"{key}: expected a number of seconds above 0, got {value!r}")
    return value


def _enabled(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{key}: expected true or false, got {value!r}")
    return value


_CHECKS: dict[str, Check] = {
    "host": _text(r"\S+", "a host name or address"),
    "port": _port,
    "sender": _text(r"[^@\s]+@[^@\s]+", "an address user@host"),
    "domain": _text(r"[^@\s]+", "a domain name such as example.org"),
    "timeout": _timeout,
    "enabled": _enabled,
}


@hookimpl
def plus_configure(config: Any, plugin_manager: pluggy.PluginManager) -> list[str]:
    options = config.sections.get("mail", {})
    for key in options:
        if key not in _CHECKS:
            raise ValueError(f"mail: unknown key {key!r}; known: {', '.join(sorted(_CHECKS))}")
    values = {key: _CHECKS[key](f"mail.{key}", value) for key, value in options.items()}
    if values.pop("enabled", True):
        values.setdefault("sender", f"plus_scheduler@{socket.getfqdn()}")
        plugin_manager.register(Notifier(Settings(**values)), name="mail-notifier")
    return ["mail"]
