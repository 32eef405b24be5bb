"""What ``python -IS`` does at its start for the environment it is given,
done again in a worker for its caller's: the environment itself, the
locale of LC_CTYPE (with PEP 538's coercion of the C locale and PEP 540's
UTF-8 mode), the time zone, and the standard streams with the encoding and
error handler Python would choose. The commands' launchers run isolated
(-I), so PYTHONIOENCODING and PYTHONUTF8 play no part, as here.
"""

from __future__ import annotations

import codecs
import io
import locale
import os
import sys
import time
from typing import NamedTuple

_LEGACY = ("C", "POSIX")
_COERCED = ("C.UTF-8", "C.utf8", "UTF-8")
"""PEP 538's targets, in the order Python tries them."""


class Text(NamedTuple):
    encoding: str
    errors: str
    """The standard input's and output's; standard error's is always backslashreplace."""


def apply_environment(entries: dict[str, str]) -> Text:
    """Make ``entries`` this process's environment (os.environ and the C
    library's), set LC_CTYPE's locale and the time zone from it as Python's
    start does, and say how the standard streams encode."""
    _replace_environment(entries)
    time.tzset()
    ctype = _set_ctype("")
    utf8_mode = ctype in _LEGACY
    if utf8_mode and "LC_ALL" not in entries:
        for target in _COERCED:
            if _set_ctype(target) == target:
                os.environ["LC_CTYPE"] = target
                ctype = target
                break
    if utf8_mode:
        return Text("utf-8", "surrogateescape")
    encoding = codecs.lookup(locale.nl_langinfo(locale.CODESET) or "ascii").name
    return Text(encoding, "surrogateescape" if ctype in _COERCED else "strict")


def _replace_environment(entries: dict[str, str]) -> None:
    """os.environ (and the C library's) made ``entries``, touching only
    what differs: a warm worker's caller mostly sends the same again, and
    os.environ.clear(), whose every pop lists the keys anew, took 0.1 to
    0.3 ms of each command."""
    for name in [name for name in os.environ if name not in entries]:
        del os.environ[name]
    for name, value in entries.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def _set_ctype(name: str) -> str:
    """LC_CTYPE's locale set to ``name`` ("" from the environment): the
    locale now (C if ``name`` is not installed, as at Python's start)."""
    try:
        return locale.setlocale(locale.LC_CTYPE, name)
    except locale.Error:
        return locale.setlocale(locale.LC_CTYPE, "C")


def rebuild_streams(text: Text, present: set[int]) -> None:
    """sys.stdin, stdout and stderr (and their __std*__) on descriptors 0,
    1 and 2 as Python makes them at start: None for one the caller had
    closed, line-buffered output on a terminal, stderr always."""
    for number, name in enumerate(("stdin", "stdout", "stderr")):
        stream = _stream(number, text) if number in present else None
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _stream(number: int, text: Text) -> io.TextIOWrapper:
    binary = io.open(number, "rb" if number == 0 else "wb", buffering=-1, closefd=False)
    errors = "backslashreplace" if number == 2 else text.errors
    return io.TextIOWrapper(binary, text.encoding, errors, newline="\n",
                            line_buffering=number == 2 or (number == 1 and binary.isatty()))
