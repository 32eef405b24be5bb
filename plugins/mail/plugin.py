"""Entry point of the mail plugin: checks the ``mail:`` section and
registers a Notifier, unless ``enabled: false``."""

from __future__ import annotations

import socket
from typing import Any

import pluggy

from overlay.api.plugin import hookimpl, settings
from overlay_mail.notifier import Notifier, Settings

CHECKS = {
    "host": settings.text("a host name or address", r"\S+"),
    "port": settings.PORT,
    "sender": settings.text("an address user@host", r"[^@\s]+@[^@\s]+"),
    "domain": settings.text("a domain name such as example.org", r"[^@\s]+"),
    "timeout": settings.Check("a number of seconds above 0", lambda value: value if isinstance(
        value, (int, float)) and not isinstance(value, bool) and value > 0 else None),
    "enabled": settings.FLAG,
}


@hookimpl
def plus_configure(config: Any, plugin_manager: pluggy.PluginManager) -> list[str]:
    values = settings.read_section("mail", config.sections.get("mail", {}), CHECKS)
    if values.pop("enabled", True):
        values.setdefault("sender", f"plus_scheduler@{socket.getfqdn()}")
        plugin_manager.register(Notifier(Settings(**values)), name="mail-notifier")
    return ["mail"]
