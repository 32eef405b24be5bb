"""The site's time zone (plus.yaml's ``timezone``): the zone a feed's
times are written in. Times stay UTC epoch seconds inside; this is an
edge."""

from __future__ import annotations

import os
import zoneinfo

_ZONEINFO_DIRS = ("/usr/share/zoneinfo/", "/usr/lib/zoneinfo/", "/usr/share/lib/zoneinfo/")


def machine_zone() -> str:
    """The machine's zone by IANA name: TZ, else what /etc/localtime links
    to, else /etc/timezone (Debian's), else UTC."""
    named = os.environ.get("TZ", "").lstrip(":")
    if named and _known(named):
        return named
    try:
        target = os.path.realpath("/etc/localtime")
    except OSError:
        target = ""
    for folder in _ZONEINFO_DIRS:
        if target.startswith(folder) and _known(target[len(folder):]):
            return target[len(folder):].removeprefix("posix/").removeprefix("right/")
    try:
        with open("/etc/timezone", encoding="ascii") as handle:
            named = handle.read().strip()
    except (OSError, UnicodeDecodeError):
        named = ""
    return named if named and _known(named) else "UTC"


def checked(key: str, value: object) -> str:
    """plus.yaml's ``timezone``: an IANA zone name this machine knows;
    ValueError naming the key otherwise."""
    if not isinstance(value, str) or not _known(value):
        raise ValueError(f"{key}: {value!r} is not a time zone this machine knows; accepted: "
                         "an IANA name such as Europe/Berlin, America/New_York or UTC")
    return value


def _known(name: str) -> bool:
    if not name or len(name) > 64 or name.startswith("/") or ".." in name:
        return False
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True
