"""The daemon's configuration: one YAML file, validated key by key.

A malformed file stops plus_scheduler with a message naming the key and
what it accepts; unknown keys are errors too, because a misspelt limit that
is silently ignored is worse than no start at all.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import yaml

from overlay.contract import settings
from overlay.events.hooks import Network
from overlay.feeds import zone
from overlay.feeds.zone import machine_zone
from overlay.kit.users import login_uid_min
from overlay.language import leads, release
from overlay.language.request import valid_name
from overlay.language.timespec import TimeSpecError, parse_duration
from overlay.network.http.settings import HttpSettings
from overlay.network.http.settings import load as load_http
from overlay.placement.ordering import OrderError, node_order
from overlay.wire import protocol


class ConfigError(Exception):
    """The configuration cannot be used; the text names the key."""


class SiteNotice(NamedTuple):
    """``notice:``: the leads (seconds, longest first) before an AR's start
    and end at which its users are told, for ARs that name none."""

    start: tuple[int, ...] = ()
    end: tuple[int, ...] = ()


class RepeatSettings(NamedTuple):
    """``repeat:``: how far ahead a series' occurrences are granted
    (seconds), the most occurrences one series may have within that depth,
    and the most series one user may keep active."""

    depth: int = 14 * 86400
    max_occurrences: int = 1000
    max_series: int = 20


@dataclass
class Config:
    path: str
    backend: str = "native"
    state_dir: str = protocol.DEFAULT_STATE_DIR
    socket: str = protocol.DEFAULT_SOCKET
    store: str = ""
    managers: list[str] = field(default_factory=lambda: ["root"])
    arusers: list[str] = field(default_factory=lambda: ["*"])
    act_for: list[str] = field(default_factory=lambda: ["*"])
    min_uid: int = field(default_factory=login_uid_min)
    max_advance_reservations: int = 0
    duration_offset: int = 60
    reconcile_interval: int = 30
    commit_timeout: int = 300
    approval_timeout: int = 3 * 86400
    expiry: int = 86400
    max_expired: int = 100
    usage_history: int = 35 * 86400
    node_order: list[str] = field(default_factory=lambda: ["NodeName"])
    sge_queues: list[str] = field(default_factory=list)
    accounting_file: str = "reporting"
    max_connections: int = 1024
    max_connections_per_user: int = 32
    request_timeout: int = 10
    plugins: list[str] = field(default_factory=list)
    log: str = "stderr"
    log_size: int = 10 << 20
    log_keep: int = 5
    timezone: str = field(default_factory=machine_zone)
    ending_soon: list[int] = field(default_factory=lambda: list(DEFAULT_LEADS))
    notice: SiteNotice = field(default_factory=SiteNotice)
    idle_release: int = 0
    clear_notice: tuple[int, ...] = ()
    repeat: RepeatSettings = field(default_factory=RepeatSettings)
    webhook_networks: list[Network] = field(default_factory=list)
    http: HttpSettings = field(default_factory=HttpSettings)
    sections: dict[str, dict] = field(default_factory=dict)

    @property
    def state_path(self) -> str:
        return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(self.path)), self.state_dir))

    @property
    def socket_path(self) -> str:
        return protocol.socket_path(self.path, self.state_dir, self.socket)

    @property
    def store_url(self) -> str:
        """sqlite:///<state_dir>/plus.db unless ``store`` names a URL or a file."""
        if not self.store:
            return "sqlite:///" + os.path.join(self.state_path, "plus.db")
        if "://" in self.store:
            return self.store
        return "sqlite:///" + os.path.join(self.state_path, self.store)

    @property
    def accounting_path(self) -> str:
        return os.path.join(self.state_path, self.accounting_file)

    @property
    def log_path(self) -> str:
        """The log file's path, when ``log`` names one (from state_dir)."""
        return os.path.join(self.state_path, self.log)

    def backend_options(self) -> dict:
        """The section named after the backend (e.g. ``native:``), or {}."""
        return self.sections.get(self.backend, {})

    def relative(self, path: str) -> str:
        """A path from the configuration, taken from the file's folder."""
        return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(self.path)), path))


def _name_list(key: str, value: Any, groups: bool = False, star: bool = False) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{key}: expected a list of names, got {value!r}")
    for item in value:
        bare = item[1:] if groups and item.startswith("@") else item
        if not (star and item == "*") and not valid_name(bare):
            accepted = "user names and @group names" if groups else "names"
            raise ConfigError(f"{key}: invalid entry {item!r}; accepted: {accepted}"
                              + (" or '*' for everyone" if star else ""))
    return value


def _node_order(key: str, value: Any) -> list[str]:
    try:
        return list(node_order(key, value if isinstance(value, list) else [value]))
    except OrderError as exc:
        raise ConfigError(str(exc)) from None


DEFAULT_LEADS = (300, 900, 3600)
"""The lead times (seconds before an AR's end) of its ending-soon events."""
MAX_LEADS = 8


def _leads(key: str, value: Any) -> list[int]:
    """ending_soon: the lead times a subscriber chooses among. Each costs a
    stored event per AR, so the site lists them rather than each client."""
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_LEADS or not all(
            isinstance(v, int) and not isinstance(v, bool) and 60 <= v <= 86400 for v in value):
        raise ConfigError(f"{key}: expected a list of 1 to {MAX_LEADS} lead times in seconds, "
                          f"each 60 to 86400 (e.g. [300, 900, 3600]), got {value!r}")
    return sorted(set(value))


def _notice(key: str, value: Any) -> SiteNotice:
    """notice: the leads before an AR's start and end at which its users are
    told, for ARs that name none of their own."""
    accepted = (f"a mapping of start and end, each a list of at most {leads.MAX_LEADS} lead "
                f"times in seconds, each {leads.SHORTEST} to {leads.LONGEST} (e.g. "
                "{start: [3600], end: [900]})")
    if not isinstance(value, dict) or not set(value) <= {"start", "end"}:
        raise ConfigError(f"{key}: expected {accepted}, got {value!r}")
    try:
        return SiteNotice(*(leads.checked_leads(value.get(moment, []), f"{key}.{moment}")
                            for moment in ("start", "end")))
    except leads.LeadError:
        raise ConfigError(f"{key}: expected {accepted}, got {value!r}") from None


def _idle_release(key: str, value: Any) -> int:
    """idle_release: seconds an open AR that names none of its own may run
    no job before it is released; 0 never."""
    try:
        return release.checked_idle_release(value, key)
    except release.ReleaseError:
        raise ConfigError(f"{key}: expected 0 (never) or whole seconds, {release.SHORTEST} to "
                          f"{release.LONGEST} (e.g. 1800), got {value!r}") from None


def _clear_notice(key: str, value: Any) -> tuple[int, ...]:
    """clear_notice: the leads before an AR's start at which the owners of
    jobs still running on its nodes past the start are told."""
    try:
        return leads.checked_leads(value, key)
    except leads.LeadError as exc:
        raise ConfigError(str(exc)) from None


MAX_DEPTH = 366 * 86400


def _repeat(key: str, value: Any) -> RepeatSettings:
    """repeat: a series' depth (a duration as -D takes it, or seconds, 1 hour
    to 366 days), max_occurrences (1 to 100000) and max_series (1 to 10000)."""
    accepted = ("a mapping of depth (a duration such as 14d, 1 hour to 366 days), "
                "max_occurrences (1 to 100000) and max_series (1 to 10000), e.g. "
                "{depth: 14d, max_occurrences: 1000, max_series: 20}")
    if not isinstance(value, dict) or not set(value) <= set(RepeatSettings._fields):
        raise ConfigError(f"{key}: expected {accepted}, got {value!r}")
    default = RepeatSettings()
    depth = value.get("depth", default.depth)
    try:
        depth = parse_duration(depth, f"{key}.depth") if isinstance(depth, str) else depth
    except TimeSpecError:
        depth = None
    checks = {"depth": (depth, 3600, MAX_DEPTH),
              "max_occurrences": (value.get("max_occurrences", default.max_occurrences),
                                  1, 100_000),
              "max_series": (value.get("max_series", default.max_series), 1, 10_000)}
    for name, (number, low, high) in checks.items():
        if not isinstance(number, int) or isinstance(number, bool) or not low <= number <= high:
            raise ConfigError(f"{key}.{name}: expected {accepted}, got {value!r}")
    return RepeatSettings(*(number for number, _, _ in checks.values()))


def _networks(key: str, value: Any) -> list[Network]:
    """webhook_networks: the networks beyond the public ones that webhooks
    may reach (the site's portal, a receiver on this host)."""
    refused = ConfigError(f"{key}: expected a list of at most 64 networks, each an address "
                          f"or address/prefix (e.g. [10.1.2.0/24, 127.0.0.1]), got {value!r}")
    if not isinstance(value, list) or len(value) > 64 or \
            not all(isinstance(item, str) for item in value):
        raise refused
    try:
        return [ipaddress.ip_network(item, strict=False) for item in value]
    except ValueError:
        raise refused from None


_text, _non_negative, _positive = settings.text(), settings.whole(0), settings.whole(1)
_VALIDATORS = {
    "backend": _text,
    "state_dir": _text,
    "socket": _text,
    "store": _text,
    "managers": _name_list,
    "arusers": lambda k, v: _name_list(k, v, groups=True, star=True),
    "act_for": lambda k, v: _name_list(k, v, groups=True, star=True),
    "min_uid": _positive,
    "max_advance_reservations": _non_negative,
    "duration_offset": _non_negative,
    "reconcile_interval": _positive,
    "commit_timeout": _positive,
    "approval_timeout": _positive,
    "expiry": _non_negative,
    "max_expired": _non_negative,
    "usage_history": _non_negative,
    "node_order": _node_order,
    "sge_queues": _name_list,
    "accounting_file": _text,
    "max_connections": _positive,
    "max_connections_per_user": _positive,
    "request_timeout": _positive,
    "plugins": _name_list,
    "log": _text,
    "log_size": settings.whole(4096, unit="bytes"),
    "log_keep": _non_negative,
    "timezone": zone.checked,
    "ending_soon": _leads,
    "notice": _notice,
    "idle_release": _idle_release,
    "clear_notice": _clear_notice,
    "repeat": _repeat,
    "webhook_networks": _networks,
}


def read_yaml(path: str, what: str, error: type[Exception] = ConfigError) -> Any:
    """A YAML file's content; ``error`` names the file, and ``what`` it is
    for, when it cannot be read or parsed."""
    try:
        with open(path, encoding="utf-8") as handle:
            return yaml.safe_load(handle)
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise error(f"{path}: not UTF-8 text; {what} must be YAML in UTF-8") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise error(f"{path}: not valid YAML: {getattr(exc, 'problem', None) or 'unreadable'}"
                    f"{where}") from None


def load(path: str, overrides: dict[str, Any] | None = None) -> Config:
    """Read and validate the configuration; ``overrides`` come from the
    command line and are validated the same way."""
    raw = read_yaml(path, "configuration")
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of settings at the top level")
    raw.update(overrides or {})
    config = Config(path=path)
    for key, value in raw.items():
        validator = _VALIDATORS.get(key)
        if key == "http":
            try:
                config.http = load_http(value, config.relative)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        elif validator is not None:
            try:
                setattr(config, key, validator(key, value))
            except ValueError as exc:  # the settings helper's checks
                raise ConfigError(str(exc)) from None
        elif isinstance(value, dict) and key.isidentifier():
            config.sections[key] = value
        else:
            raise ConfigError(f"{path}: unknown setting {key!r}; known: "
                              f"{', '.join(sorted([*_VALIDATORS, 'http']))}"
                              " or a mapping named after a backend or plugin")
    _check_client_view(config, path, overrides or {})
    return config


def _check_client_view(config: Config, path: str, overrides: dict) -> None:
    """Clients read state_dir and socket with a line reader; refuse a file
    where it would find another socket than the daemon uses."""
    if "state_dir" in overrides or "socket" in overrides:
        return
    if protocol.client_socket_path(path) != config.socket_path:
        raise ConfigError(f"{path}: state_dir and socket must be plain one-line scalars at the "
                          "top level, so that the commands find the same socket as plus_scheduler")
