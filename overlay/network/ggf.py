"""The arguments of seed 003's verbs (QUERY, RESQUERY, RESQANDSET, SETRES)
in the words the seed and Maui use, turned into the one wire form of a
request (overlay.language.request.request_wire). Standard library only: the
commands and the HTTP companion parse with it, the daemon checks again.

- TimeNeeded carries its unit: ``3600s``, ``90m``, ``2h``, ``1d``.
- TimeSpec: ``earliest[,latest_start[,latest_end]]``, each a Unix epoch
  (seed 003: times are epoch, GMT) or a time as plus_reserve -s takes it
  (``now+1h``); left out: now, a week after the earliest, no latest end.
- ResAccess: the ARs the request may be placed inside, ``R12[,R13...]``.
- ResourceList: Maui's ``token=value`` pairs separated by ``;``: ``nodes``
  (required), ``ppn`` (slots per node, -sn), ``mem`` (-mem), ``ncpus``,
  ``arch``, ``os``, ``queues`` (-sgeq, comma list), ``users`` (-U),
  ``name`` (-N), ``he`` (y|n), ``m``, ``M``; any other token is a node
  attribute that must match, as with -l.
"""

from __future__ import annotations

from overlay.language.limits import MAX_ARGUMENT, MAX_DURATION, shown
from overlay.language.request import (
    RequestError,
    parse_ar_id,
    parse_attribute_list,
    parse_int,
    parse_mail_list,
    parse_mail_options,
    parse_memory_mb,
    parse_name,
    parse_name_list,
    parse_pattern,
    parse_yes_no,
    request_wire,
)
from overlay.language.timespec import bounded_time, parse_time

DEFAULT_LOOKAHEAD = 7 * 86400
"""How far after the earliest start a RESQUERY looks when TimeSpec sets no
latest start."""
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def time_needed(text: str) -> int:
    """Seconds of a TimeNeeded with its unit."""
    value = text.strip()
    number, unit = value[:-1], value[-1:]
    if unit not in _UNITS or not number.isdigit() or not number.isascii():
        raise RequestError(f"TimeNeeded: invalid '{shown(text)}': accepted is a whole number with "
                           "its unit: 3600s, 90m, 2h or 1d")
    seconds = int(number) * _UNITS[unit]
    if not 1 <= seconds <= MAX_DURATION:
        raise RequestError(f"TimeNeeded: '{shown(text)}' is out of range; accepted: 1s to "
                           f"{MAX_DURATION // 86400}d")
    return seconds


def _moment(text: str | int, now: int, what: str) -> int:
    """A time: a Unix epoch (a number, or its digits) or as plus_reserve -s
    takes it."""
    if isinstance(text, int):
        return bounded_time(text, now, what)
    value = text.strip()
    if value.isdigit() and value.isascii():
        return bounded_time(int(value), now, what)
    return parse_time(value, now, what)


def time_spec(text: str | None, now: int) -> tuple[int, int, int | None]:
    """(earliest start, latest start, latest end or None)."""
    parts = [] if not text else text.split(",")
    if len(parts) > 3:
        raise RequestError(f"TimeSpec: invalid '{shown(text)}': accepted is "
                           "earliest[,latest_start[,latest_end]]")
    parts += [""] * (3 - len(parts))
    earliest = _moment(parts[0], now, "TimeSpec earliest") if parts[0].strip() else now
    latest = (_moment(parts[1], now, "TimeSpec latest start") if parts[1].strip()
              else earliest + DEFAULT_LOOKAHEAD)
    end = _moment(parts[2], now, "TimeSpec latest end") if parts[2].strip() else None
    if latest < earliest:
        raise RequestError(f"TimeSpec: the latest start {latest} is before the earliest start "
                           f"{earliest}; accepted: earliest[,latest_start[,latest_end]] in that "
                           "order")
    if end is not None and end < earliest:
        raise RequestError(f"TimeSpec: the latest end {end} is before the earliest start "
                           f"{earliest}")
    return earliest, latest, end


def access_ids(text: str | None) -> tuple[int, ...]:
    """The AR ids of a ResAccess list."""
    if not text:
        return ()
    return tuple(dict.fromkeys(parse_ar_id(item, "ResAccess") for item in text.split(",")))


def resource_list(text: str) -> dict:
    """The request fields of a ResourceList (all but start and end)."""
    if len(text) > MAX_ARGUMENT:
        raise RequestError(f"ResourceList: longer than {MAX_ARGUMENT} characters")
    fields: dict = {}
    attributes: list[tuple[str, str]] = []
    for item in (part.strip() for part in text.split(";")):
        if not item:
            continue
        token, equals, value = item.partition("=")
        token, value = token.strip(), value.strip()
        if not equals or not token or not value:
            raise RequestError(f"ResourceList: invalid item '{shown(item)}': accepted are "
                               "token=value pairs separated by ';' (nodes=4;ppn=8;mem=2G)")
        key = _TOKENS.get(token)
        if key is None:
            attributes.extend(parse_attribute_list(f"{token}={value}", "ResourceList"))
            continue
        if key in fields:
            raise RequestError(f"ResourceList: {token} is given twice")
        fields[key] = _PARSERS[key](value)
    if "nodes" not in fields:
        raise RequestError("ResourceList: nodes=N is required (the number of nodes)")
    if attributes:
        fields["attributes"] = attributes
    return fields


_TOKENS = {"nodes": "nodes", "ppn": "slots_per_node", "mem": "memory_mb", "ncpus": "ncpus",
           "arch": "arch", "os": "os", "queues": "queues", "users": "users", "name": "name",
           "he": "hard_error", "m": "mail_options", "M": "mail_list"}
_PARSERS = {
    "nodes": lambda v: parse_int(v, "ResourceList nodes", "the number of nodes"),
    "slots_per_node": lambda v: parse_int(v, "ResourceList ppn", "the slots per node"),
    "memory_mb": lambda v: parse_memory_mb(v, "ResourceList mem"),
    "ncpus": lambda v: parse_int(v, "ResourceList ncpus", "the number of CPUs"),
    "arch": lambda v: parse_pattern(v, "ResourceList arch"),
    "os": lambda v: parse_pattern(v, "ResourceList os"),
    "queues": lambda v: list(parse_name_list(v, "ResourceList queues")),
    "users": lambda v: list(parse_name_list(v, "ResourceList users", groups=True)),
    "name": lambda v: parse_name(v, "ResourceList name"),
    "hard_error": lambda v: parse_yes_no(v, "ResourceList he"),
    "mail_options": lambda v: parse_mail_options(v, "ResourceList m"),
    "mail_list": lambda v: list(parse_mail_list(v, "ResourceList M")),
}


def query_shape(needed: int, spec: tuple[int, int, int | None], fields: dict) -> tuple[dict, int]:
    """A RESQUERY's request in its wire form (start: the earliest start,
    end: that plus TimeNeeded) and the latest start the TimeSpec allows."""
    earliest, latest, end = spec
    last = latest if end is None else min(latest, end - needed)
    if last < earliest:
        raise RequestError(f"TimeSpec: the latest end {end} leaves no room for TimeNeeded "
                           f"({needed} s) after the earliest start {earliest}")
    return request_wire(start=earliest, end=earliest + needed, **fields), last


def query_arguments(named: dict, now: int) -> dict:
    """The daemon's query arguments from the seed's named words
    (TimeNeeded, ResourceList): a job of that shape submitted now."""
    needed = time_needed(named["TimeNeeded"])
    return request_wire(start=now, end=now + needed, **resource_list(named["ResourceList"]))


def query_answer(data: dict) -> dict:
    """QUERY's answer in the seed's words: StartTime, and OtherInfo saying
    how it was estimated."""
    return {"UserID": data["user"], "StartTime": data["start"], "OtherInfo": data["how"]}


def resquery_arguments(named: dict, now: int) -> dict:
    """The daemon's resquery (and resqandset) arguments from the seed's
    named words (TimeNeeded, {TimeSpec}, {ResAccess}, ResourceList)."""
    needed = time_needed(named["TimeNeeded"])
    request, last = query_shape(needed, time_spec(named.get("TimeSpec"), now),
                                resource_list(named["ResourceList"]))
    request["res_access"] = list(access_ids(named.get("ResAccess")))
    return {**request, "last_start": last}


def setres_arguments(named: dict, now: int) -> dict:
    """The daemon's setres arguments from the seed's named words
    (TimeNeeded, StartTime, {ResAccess}, ResourceList)."""
    needed = time_needed(named["TimeNeeded"])
    start = _moment(named["StartTime"], now, "StartTime")
    return request_wire(start=start, end=start + needed,
                        res_access=access_ids(named.get("ResAccess")),
                        **resource_list(named["ResourceList"]))


def resquery_answer(data: dict) -> dict:
    """RESQUERY's answer in the seed's words: the ranges STime EndSTime,
    and with none, OtherInfo saying why."""
    answer = {"UserID": data["user"],
              "ranges": [{"STime": low, "EndSTime": high} for low, high in data["ranges"]]}
    if data.get("why"):
        answer["OtherInfo"] = data["why"]
    return answer


def reservation_answer(verb: str, view: dict) -> dict:
    """SETRES's (SuccessOrNot ResKey OtherInfo) or RESQANDSET's answer
    (SuccessOrNot StartTime ResKey OtherInfo) from the reservation made:
    OtherInfo names the AR as ResAccess does, R<id>."""
    answer = {"SuccessOrNot": True, "StartTime": view["start"], "ResKey": view["reskey"],
              "OtherInfo": f"R{view['id']}"}
    if verb == "setres":
        del answer["StartTime"]
    return answer
