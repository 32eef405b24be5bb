"""Entry point of the ClassAd plugin: the ``classad:`` section names a PluS
reservable.ad file; without the section the plugin does nothing.

HTCondor's library is imported only when a file is configured: it costs a
tenth of a second at every daemon start, and sites without ClassAd
policies need not install it (the ``classad`` extra)."""

from __future__ import annotations

import os
from typing import Any

import pluggy

from overlay.api.plugin import hookimpl, settings

SECTION = "classad"
CHECKS = {"file": settings.text("the path of a PluS reservable.ad file (relative to the "
                                "configuration's folder)")}


@hookimpl
def plus_configure(config: Any, plugin_manager: pluggy.PluginManager) -> list[str]:
    options = config.sections.get(SECTION)
    if options is None:
        return [SECTION]
    path = settings.read_section(SECTION, options, CHECKS).get("file")
    if path is None:
        raise ValueError(f"{SECTION}.file: missing; expected {CHECKS['file'].accepted}")
    try:
        from overlay_classad.policy import ClassAdPolicy
    except ImportError as exc:
        raise ValueError(f"{SECTION}: HTCondor's ClassAd library is not installed ({exc}); "
                         "install it with: pip install 'plus-overlay[classad]'") from None
    path = config.relative(path)
    name = os.path.basename(path)
    if plugin_manager.has_plugin(name):
        raise ValueError(f"{SECTION}.file: a plugin is already called {name!r}; rename the file")
    plugin_manager.register(ClassAdPolicy(path), name=name)
    return [SECTION]
