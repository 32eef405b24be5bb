"""The PluginManager: entry points first (built-ins are entry points too),
then modules the configuration names. The core never imports a plugin by name."""

from __future__ import annotations

import importlib
from typing import Any

import pluggy

from overlay import hookspecs
from overlay.backend import Backend

ENTRY_POINT_GROUP = "plus_overlay"


class PluginError(Exception):
    """A plugin could not be loaded or the named backend does not exist."""


def plugin_manager(extra_modules: list[str] = ()) -> pluggy.PluginManager:
    """All plugins: installed entry points, then ``extra_modules`` by import name."""
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    manager.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    for name in extra_modules:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise PluginError(f"plugins: cannot import {name!r}: {exc}") from None
        if manager.get_plugin(name) is None:
            manager.register(module, name=name)
    return manager


def backend_factories(manager: pluggy.PluginManager) -> dict[str, Any]:
    """Backend name -> factory, from every plugin that offers backends."""
    factories: dict[str, Any] = {}
    for offered in manager.hook.plus_backends():
        factories.update(offered or {})
    return factories


def configure(manager: pluggy.PluginManager, config: Any) -> set[str]:
    """Give every plugin the configuration (plus_configure); the section
    names they read. A plugin's ValueError becomes a PluginError."""
    try:
        answers = manager.hook.plus_configure(config=config, plugin_manager=manager)
    except ValueError as exc:
        raise PluginError(f"{config.path}: {exc}") from None
    return {name for names in answers for name in names or ()}


def build_backend(manager: pluggy.PluginManager, name: str, config: Any, options: dict,
                  claimed: set[str] = frozenset()) -> Backend:
    """The backend called ``name``, from whichever plugin offers it;
    ``claimed`` are the sections other plugins read (plus_configure)."""
    factories = backend_factories(manager)
    for section in getattr(config, "sections", {}):
        if section not in factories and section not in claimed:
            raise PluginError(f"{config.path}: unknown setting {section!r}: neither a setting, "
                              f"an installed backend ({', '.join(sorted(factories))}) nor a "
                              "plugin's section")
    if name not in factories:
        known = ", ".join(sorted(factories)) or "none installed"
        raise PluginError(f"backend: unknown backend {name!r}; installed backends: {known}")
    return factories[name](config, options)


def first_refusal(manager: pluggy.PluginManager, hook_name: str, **kwargs) -> str | None:
    """Call every implementation of a policy hook; the first refusal, as
    "policy <plugin>: <reason>", or None when all accept."""
    hook = getattr(manager.hook, hook_name)
    for impl in reversed(hook.get_hookimpls()):
        wanted = {name: kwargs[name] for name in impl.argnames}
        answer = impl.function(**wanted)
        if answer is not None and answer is not True:
            reason = answer if isinstance(answer, str) else "refused"
            return f"policy {impl.plugin_name}: {reason}"
    return None
