"""Attribute values as TORQUE decodes and re-encodes them: booleans print as
True/False, times as HH:MM:SS, lists comma-separated, whatever the user typed."""

from __future__ import annotations

from . import errors

_TRUE = {"true", "t", "1", "y", "yes", "on"}
_FALSE = {"false", "f", "0", "n", "no", "off"}


def boolean(value: str, name: str) -> str:
    """decode_b: true/t/1/y... -> 'True', false/f/0/n... -> 'False'."""
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return "True"
    if lowered in _FALSE:
        return "False"
    raise errors.PbsError(errors.BADATVAL, text=errors.TEXT[errors.BADATVAL] + name)


def is_true(value: str | None) -> bool:
    return value == "True"


def long(value: str, name: str) -> str:
    """decode_l: an integer, else the server's bad-value error."""
    try:
        return str(int(value.strip()))
    except ValueError:
        raise errors.PbsError(errors.BADATVAL, text=errors.TEXT[errors.BADATVAL] + name) from None


def seconds(text: str) -> int | None:
    """[[HH:]MM:]SS to seconds; None when it is not a time."""
    parts = text.strip().split(":")
    if len(parts) > 3 or not all(part.isdigit() for part in parts):
        return None
    total = 0
    for part in parts:
        total = total * 60 + int(part)
    return total


def date_time(text: str, now: float) -> float:
    """qsub/qalter -a: [[[[CC]YY]MM]DD]hhmm[.SS] in local time, the parts
    left out taken from now; an hhmm alone that has passed today is
    tomorrow's. ValueError if it is not one."""
    import time
    whole, _, secs = text.partition(".")
    if not whole.isdigit() or len(whole) not in (4, 6, 8, 10, 12) or (secs and not (
            secs.isdigit() and len(secs) == 2)):
        raise ValueError(f"illegal -a value {text!r}")
    today = time.localtime(now)
    digits = f"{today.tm_year:04d}{today.tm_mon:02d}{today.tm_mday:02d}"[:12 - len(whole)] + whole
    try:
        when = time.mktime(time.strptime(digits + (secs or "00"), "%Y%m%d%H%M%S"))
    except ValueError:
        raise ValueError(f"illegal -a value {text!r}") from None
    return when + 86400 if len(whole) == 4 and when < now else when


def hms(total: int) -> str:
    return f"{total // 3600:02d}:{total // 60 % 60:02d}:{total % 60:02d}"


def resource(name: str, value: str) -> str:
    """A resource value as the server stores it: times normalised."""
    if name in ("walltime", "cput"):
        total = seconds(value)
        if total is None:
            raise errors.PbsError(errors.BADATVAL, text=errors.TEXT[errors.BADATVAL] + name)
        return hms(total)
    return value


def split_list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]
