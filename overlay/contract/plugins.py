"""The PluginManager: entry points first (built-ins are entry points too),
then modules the configuration names. The core never imports a plugin by name."""

from __future__ import annotations

import importlib
from typing import Any, Callable

import pluggy

from overlay.contract import hookspecs
from overlay.contract.backend import Backend

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


def check_sections(manager: pluggy.PluginManager, config: Any,
                   claimed: set[str] = frozenset()) -> dict[str, Any]:
    """Refuse a section that is neither a backend's nor one a plugin
    claimed (plus_configure); the backend factories, by name."""
    factories = backend_factories(manager)
    for section in getattr(config, "sections", {}):
        if section not in factories and section not in claimed:
            raise PluginError(f"{config.path}: unknown setting {section!r}: neither a setting, "
                              f"an installed backend ({', '.join(sorted(factories))}) nor a "
                              "plugin's section")
    return factories


def build_backend(manager: pluggy.PluginManager, name: str, config: Any, options: dict,
                  claimed: set[str] = frozenset()) -> Backend:
    """The backend called ``name``, from whichever plugin offers it;
    ``claimed`` are the sections other plugins read (plus_configure)."""
    factories = check_sections(manager, config, claimed)
    if name not in factories:
        known = ", ".join(sorted(factories)) or "none installed"
        raise PluginError(f"backend: unknown backend {name!r}; installed backends: {known}")
    return factories[name](config, options)


class PolicyHook:
    """The implementations of one policy hook for one request, looked up
    once: the node hook runs for every candidate, and pluggy's own call
    path (a lookup and a keyword dict per implementation) would cost more
    than the policies themselves. ``fixed`` are the arguments that stay the
    same for the request; the rest come with each call."""

    def __init__(self, manager: pluggy.PluginManager, hook_name: str, **fixed: Any) -> None:
        self.calls: list[tuple[str, Callable[..., Any], dict[str, Any], tuple[str, ...]]] = []
        for impl in reversed(getattr(manager.hook, hook_name).get_hookimpls()):
            self.calls.append((impl.plugin_name, impl.function,
                               {name: fixed[name] for name in impl.argnames if name in fixed},
                               tuple(name for name in impl.argnames if name not in fixed)))

    def wants(self, argument: str) -> bool:
        """Whether any implementation takes ``argument`` (the nodes allocated
        so far cost a copy per node to pass)."""
        return any(argument in names for _, _, _, names in self.calls)

    def first_refusal(self, **varying: Any) -> str | None:
        """Ask every implementation; the first refusal, as "policy <plugin>:
        <reason>", or None when all accept."""
        for plugin_name, function, fixed, names in self.calls:
            answer = function(**fixed, **{name: varying[name] for name in names})
            if answer is not None and answer is not True:
                reason = answer if isinstance(answer, str) else "refused"
                return f"policy {plugin_name}: {reason}"
        return None

    def first_reason(self, **varying: Any) -> str | None:
        """Ask every implementation of a hook whose yes is a reason (the
        approval hook: None or False means no); the first reason, as
        "policy <plugin>: <reason>", or None."""
        for plugin_name, function, fixed, names in self.calls:
            answer = function(**fixed, **{name: varying[name] for name in names})
            if answer:
                reason = answer if isinstance(answer, str) else "asked for"
                return f"policy {plugin_name}: {reason}"
        return None
