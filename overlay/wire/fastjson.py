"""Compact JSON for the socket protocol, from CPython's C accelerator.

The json package imports re (and with it enum and the regex compiler):
about 6 ms of a command's 10 ms start on this kind of machine. Its decoder
and encoder are thin wrappers around ``_json``, which needs none of that,
so the wire uses ``_json`` directly with the settings ``json.loads`` and
``json.dumps(separators=(",", ":"))`` use. Errors are json's own
(``json.JSONDecodeError``, a ValueError), which ``_json`` imports only
when it raises one.
"""

from __future__ import annotations

import _json

_BLANKS = " \t\n\r"
"""JSON's whitespace (RFC 8259), which may surround a document."""


class _Settings:
    """What ``_json.make_scanner`` reads from a json.JSONDecoder."""
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float      # NaN, Infinity, -Infinity, as json.loads reads them


def _refuse(value: object) -> object:
    """The encoder's ``default``: only JSON's own types are sent."""
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_scan = _json.make_scanner(_Settings())
# No markers (circular-reference check): the encoder is shared by the
# daemon's threads, and a shared markers dict would see one thread's object
# as another's cycle; messages are trees.
_encode = _json.make_encoder(None, _refuse, _json.encode_basestring_ascii, None, ":", ",",
                             False, False, True)


def loads(data: str | bytes) -> object:
    """The value of one JSON document (bytes are UTF-8), as json.loads gives it."""
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    start = len(text) - len(text.lstrip(_BLANKS))
    try:
        value, end = _scan(text, start)
    except StopIteration as stop:         # where no value could start, as json.loads says
        raise _decode_error("Expecting value", text, stop.value) from None
    rest = text[end:]
    if rest.strip(_BLANKS):
        raise _decode_error("Extra data", text, len(text) - len(rest.lstrip(_BLANKS)))
    return value


def dumps(value: object) -> str:
    """``value`` as compact ASCII JSON, as json.dumps(separators=(",", ":")) writes it."""
    return "".join(_encode(value, 0))


def _decode_error(message: str, text: str, position: int) -> ValueError:
    from json import JSONDecodeError  # only on this path: it costs the import above
    return JSONDecodeError(message, text, position)
