"""Checks of the ``policies:`` section's values, on the core's Check
(overlay/contract/settings.py). Every message names the full key path and what is
accepted, because the daemon refuses to start on them and the operator has
to find the mistake in the YAML file."""

from __future__ import annotations

from typing import Any, Iterable

from overlay.api.plugin import DURATION_FORMS, Check, TimeSpecError, parse_duration, valid_name

DAY, HOUR, MINUTE = 86400, 3600, 60


def _number(value: Any) -> float | None:
    """A YAML int or float (booleans are ints in Python, but not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _amount(value: Any) -> float | None:
    number = _number(value)
    return number if number is not None and number >= 0 else None


def _ratio(value: Any) -> float | None:
    number = _number(value)
    return number if number is not None and 0 <= number <= 100 else None


def _seconds(value: Any) -> int | None:
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except TimeSpecError:
            return None
    return _count(value)


def _name(value: Any) -> str | None:
    return value if isinstance(value, str) and valid_name(value) else None


def _member(value: Any) -> str | None:
    """A user name, or @ and a group name, as arusers lists them."""
    if not isinstance(value, str):
        return None
    return value if valid_name(value.removeprefix("@")) else None


def _pattern(value: Any) -> str | None:
    """An fnmatch pattern of node names (*, ?, [...]); no spaces."""
    return value if isinstance(value, str) and value and not any(c.isspace() for c in value) else None


COUNT = Check("a whole number of 0 or more", _count)
AMOUNT = Check("a number of 0 or more", _amount)
RATIO = Check("a percentage from 0 to 100", _ratio)
DURATION = Check(f"a number of seconds or a duration ({DURATION_FORMS})", _seconds)
NAME = Check("a name of letters, digits, _ . - starting with a letter or _", _name)
MEMBER = Check("a user name or an @group name", _member)
PATTERN = Check("a node name or an fnmatch pattern such as 'node*' or 'gpu[1-4]'", _pattern)


def mapping(key: str, value: Any) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{key}: expected a mapping, got {value!r}")
    return value


def items(key: str, value: Any, check: Check) -> tuple:
    """A non-empty list whose entries are each ``check``ed under key[i]."""
    if not isinstance(value, list) or not value:
        raise ValueError(f"{key}: expected a non-empty list, each entry {check.accepted}; got {value!r}")
    return tuple(check(f"{key}[{index}]", entry) for index, entry in enumerate(value))


class Section:
    """One YAML mapping of the policies section, with the keys it accepts
    (None: keys the operator names); values are read through checks that
    name ``path.key`` when they fail."""

    def __init__(self, path: str, value: Any, accepted: Iterable[str] | None) -> None:
        self.path = path
        self.values = mapping(path, value)
        if accepted is not None:
            accepted = tuple(accepted)
            for key in self.values:
                if key not in accepted:
                    raise ValueError(f"{path}: unknown key {key!r}; accepted: {', '.join(accepted)}")

    def key(self, name: str) -> str:
        return f"{self.path}.{name}"

    def __contains__(self, name: str) -> bool:
        return name in self.values

    def get(self, name: str, check: Check, default: Any = None) -> Any:
        """The checked value of ``name``, or ``default`` when it is absent."""
        return check(self.key(name), self.values[name]) if name in self.values else default

    def require(self, name: str, check: Check) -> Any:
        if name not in self.values:
            raise ValueError(f"{self.key(name)}: missing; expected {check.accepted}")
        return check(self.key(name), self.values[name])

    def entries(self, name: str, check: Check, required: bool = False) -> tuple:
        """The non-empty list ``name``, each entry checked; () when absent
        and not ``required``."""
        if name not in self.values:
            if required:
                raise ValueError(f"{self.key(name)}: missing; expected a list, each entry {check.accepted}")
            return ()
        return items(self.key(name), self.values[name], check)

    def section(self, name: str, accepted: Iterable[str] | None) -> "Section":
        """The mapping ``name``, required."""
        if name not in self.values:
            keys = "" if accepted is None else f" with keys {', '.join(accepted)}"
            raise ValueError(f"{self.key(name)}: missing; expected a mapping{keys}")
        return Section(self.key(name), self.values[name], accepted)

    def sections(self, name: str, accepted: Iterable[str]) -> list["Section"]:
        """The list of mappings ``name`` (name[i] in messages); [] when absent."""
        if name not in self.values:
            return []
        value = self.values[name]
        if not isinstance(value, list) or not value:
            raise ValueError(f"{self.key(name)}: expected a non-empty list of mappings, got {value!r}")
        return [Section(f"{self.key(name)}[{index}]", entry, accepted) for index, entry in enumerate(value)]

    def children(self, accepted: Iterable[str] | None) -> list[tuple[str, "Section"]]:
        """Every (key, mapping) of a section whose keys are names the
        operator chooses (policies, projects)."""
        for name in self.values:
            if NAME.convert(name) is None:
                raise ValueError(f"{self.path}: invalid key {name!r}; expected {NAME.accepted}")
        return [(name, Section(self.key(name), value, accepted)) for name, value in self.values.items()]


def readable(seconds: int) -> str:
    """A duration for messages, as the settings write it: 7d, 2h, 30m when
    whole, else [Nd ]h:mm:ss."""
    days, rest = divmod(seconds, DAY)
    if days:
        return f"{days}d" + (f" {readable(rest)}" if rest else "")
    for unit, size in (("h", HOUR), ("m", MINUTE)):
        if rest and rest % size == 0:
            return f"{rest // size}{unit}"
    return f"{rest // HOUR}:{rest % HOUR // MINUTE:02d}:{rest % MINUTE:02d}"
