"""overlay/contract/plugins.py: plugins read their own configuration sections
(plus_configure), and a section that nobody reads stops the daemon."""

from __future__ import annotations

import types

import pytest

from overlay.contract import plugins
from overlay.contract.hookspecs import hookimpl
from overlay.daemon import config as config_module


def make_config(tmp_path, text: str) -> config_module.Config:
    path = tmp_path / "plus.yaml"
    path.write_text(f"state_dir: {tmp_path}\n" + text)
    return config_module.load(str(path))


def site_plugin(seen: list):
    """A plugin that reads 'quota:' and registers an object with a further hook."""
    class Listener:
        @hookimpl
        def plus_reservation_granted(self, reservation):
            seen.append(reservation)

    @hookimpl
    def plus_configure(config, plugin_manager):
        options = config.sections.get("quota", {})
        if "limit" in options and not isinstance(options["limit"], int):
            raise ValueError(f"quota.limit: expected a whole number, got {options['limit']!r}")
        plugin_manager.register(Listener(), name="quota-listener")
        return ["quota"]

    return types.SimpleNamespace(plus_configure=plus_configure)


def test_a_plugins_section_is_claimed_and_its_objects_registered(tmp_path):
    seen: list = []
    manager = plugins.plugin_manager()
    manager.register(site_plugin(seen), name="site")
    config = make_config(tmp_path, "quota:\n  limit: 3\n")
    claimed = plugins.configure(manager, config)
    assert "quota" in claimed
    backend = plugins.build_backend(manager, "native", config, {}, claimed)
    assert backend.name == "native"
    manager.hook.plus_reservation_granted(reservation="ar", advice=None)
    assert seen == ["ar"]


def test_an_unclaimed_section_names_itself_and_what_is_known(tmp_path):
    manager = plugins.plugin_manager()
    config = make_config(tmp_path, "quota:\n  limit: 3\n")
    claimed = plugins.configure(manager, config)
    with pytest.raises(plugins.PluginError, match=r"unknown setting 'quota'.*native"):
        plugins.build_backend(manager, "native", config, {}, claimed)


def test_a_plugins_value_error_names_the_file_and_key(tmp_path):
    manager = plugins.plugin_manager()
    manager.register(site_plugin([]), name="site")
    config = make_config(tmp_path, "quota:\n  limit: lots\n")
    with pytest.raises(plugins.PluginError, match=r"plus\.yaml: quota\.limit: expected a whole number, got 'lots'"):
        plugins.configure(manager, config)
