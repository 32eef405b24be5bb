"""The reporting file's records that ARCo stores, checked line by line
before anything reaches the database: new_ar, ar_attribute, ar_log and
ar_acct (seed 000, 5.4.3.2; written by overlay.reporting.accounting.ReportingWriter)
and acct (reporting(5): ``time:acct:`` and an accounting(5) record, as
the native batch system's scheduler and Grid Engine write it).

A value the database would refuse (text with a NUL, a number beyond its
integer columns, a time beyond year 9999) makes the line malformed here,
so that one bad line never costs its batch the good ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from overlay.language.limits import shown
from overlay.reporting.accounting import ACCT, EVENT_ALIASES, RECORD_ALIASES

MAX_INTEGER = 2**31 - 1          # the database's integer columns
MAX_TIME = 253402300799          # 9999-12-31 23:59:59 UTC, the last time a timestamp column takes


@dataclass(frozen=True)
class Record:
    """One record: its line in the file, its time, its type, and its
    fields by the seed's names (an acct record's by accounting(5)'s)."""

    line: int
    time: int
    kind: str
    values: dict[str, object]


def _time(name: str, text: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_TIME:
        raise ValueError(f"{name} '{shown(text)}' is not a time (epoch seconds from 0 to "
                         f"{MAX_TIME})")
    return int(text)


def _number(name: str, text: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_INTEGER:
        raise ValueError(f"{name} '{shown(text)}' is not a number from 0 to {MAX_INTEGER}")
    return int(text)


def _text(name: str, text: str) -> str:
    return text


def _event(name: str, text: str) -> str:
    """An ar_log event by 8.1.9's word, also when an older PluS wrote it."""
    return EVENT_ALIASES.get(text, text)


def _resources(name: str, text: str) -> tuple[tuple[str, str], ...]:
    """res1=3,res2=7 -> (("res1", "3"), ("res2", "7")); empty: none."""
    pairs = []
    for item in filter(None, text.split(",")):
        variable, equals, value = item.partition("=")
        if not variable or not equals:
            raise ValueError(f"{name}: '{shown(item)}' is not variable=value")
        pairs.append((variable, value))
    return tuple(pairs)


Field = tuple[str, Callable[[str, str], object]]
LAYOUTS: dict[str, tuple[Field, ...]] = {
    "new_ar": (("submission_time", _time), ("ar_number", _number), ("owner", _text)),
    "ar_attribute": (("event_time", _time), ("submission_time", _time), ("ar_number", _number),
                     ("name", _text), ("account", _text), ("start_time", _time),
                     ("end_time", _time), ("granted_pe", _text),
                     ("granted_resources", _resources)),
    "ar_log": (("state_change_time", _time), ("submission_time", _time), ("ar_number", _number),
               ("state", _text), ("event", _event), ("message", _text)),
    "ar_acct": (("termination_time", _time), ("submission_time", _time), ("ar_number", _number),
                ("qname", _text), ("hostname", _text), ("slots", _number)),
}
"""The seed's fields of each AR record, in order. An ar_log message keeps
any colons another writer left in it: it is the last field."""
KINDS = frozenset(LAYOUTS) | {"acct"}

_ACCT_TEXT = {"qname", "hostname", "group", "owner", "job_name", "account", "project",
              "department", "granted_pe", "category", "pe_taskid"}
_ACCT_FLOATS = {"ru_utime", "ru_stime", "cpu", "mem", "io", "iow", "maxvmem"}
_ACCT_TIMES = {"submission_time", "start_time", "end_time", "ar_sub_time"}


def _acct_value(name: str, text: str) -> object:
    """One accounting(5) field as its ARCo column takes it: text, a finite
    float, or a whole number (written as one or with decimals, %f)."""
    if name in _ACCT_TEXT:
        return text
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{name} '{shown(text)}' is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{name} '{shown(text)}' is not a finite number")
    if name in _ACCT_FLOATS:
        return value
    least, most = (0, MAX_TIME) if name in _ACCT_TIMES else (-MAX_INTEGER - 1, MAX_INTEGER)
    if not least <= value <= most:
        raise ValueError(f"{name} {shown(text)} is out of range ({least} to {most})")
    return round(value)


def _fields(kind: str, rest: str) -> dict[str, object]:
    layout = LAYOUTS[kind]
    parts = rest.split(":", len(layout) - 1) if kind == "ar_log" else rest.split(":")
    if len(parts) != len(layout):
        raise ValueError(f"expected {len(layout)} fields, found {len(parts)}")
    return {name: convert(name, text) for (name, convert), text in zip(layout, parts, strict=True)}


def _acct(rest: str) -> dict[str, object]:
    parts = rest.split(":")
    if len(parts) != len(ACCT):
        raise ValueError(f"expected {len(ACCT)} accounting(5) fields, found {len(parts)}")
    return {name: _acct_value(name, text) for name, text in zip(ACCT, parts, strict=True)}


def parse(number: int, line: str) -> Record | None:
    """The record on line ``number``; None for a line ARCo has no table for
    (a comment, a blank line, other record types: job_log, queue, host...).
    A malformed line raises ValueError saying what is wrong with it."""
    line = line.rstrip("\n")
    if not line or line.startswith("#"):
        return None
    stamp, colon, rest = line.partition(":")
    kind, _, rest = rest.partition(":")
    kind = RECORD_ALIASES.get(kind, kind)
    if not colon or not (stamp.isascii() and stamp.isdigit()):
        raise ValueError(f"not a record: '{shown(line)}' does not start with time:record_type:")
    if kind not in KINDS:
        return None
    if "\0" in line:
        raise ValueError(f"{kind} record: a NUL character in '{shown(line)}'")
    try:
        values = _acct(rest) if kind == "acct" else _fields(kind, rest)
        return Record(number, _time("time", stamp), kind, values)
    except ValueError as error:
        raise ValueError(f"{kind} record: {error}") from None
