"""Decoding what a client sends into the core's values, with the commands'
own checks.

A request on the socket (and later over HTTP) may come from a hand-made
client, so everything the commands check before they connect is checked
again here, with the same functions and the same messages: types, bounds
(overlay.language.limits), names, patterns, lists. Unknown arguments are refused,
so a misspelt field is never silently ignored.
"""

from __future__ import annotations

from dataclasses import fields
from enum import Enum
from typing import Any, Callable, Iterable

from overlay.language import limits
from overlay.language.leads import checked_leads
from overlay.language.model import Request, RequestKind
from overlay.language.release import checked_idle_release
from overlay.language.request import (
    DEFAULT_REPAIR,
    MAX_AR_ID,
    MAX_SLOTS,
    RequestError,
    parse_account,
    parse_alloc_rule,
    parse_ar_references,
    parse_attribute_list,
    parse_mail_list,
    parse_mail_options,
    parse_name,
    parse_name_list,
    parse_object_name,
    parse_pattern,
    parse_pe_range,
    parse_queue_list,
    parse_repair,
    request_wire,
)
from overlay.language.timespec import bounded_time

NAME_ECHO = 32
"""An unknown argument's name, as a refusal quotes it: a longer one is no
typo, and the accepted names that follow must fit the refusal."""
ACCEPTED_ECHO = 240
"""Characters of accepted names a refusal lists (the closest first), so
that it stays one bounded line however many fields a request grows."""


def accepted_names(wrong: str, names: Iterable[str]) -> str:
    """What to say instead of ``wrong``: the closest of ``names`` first,
    then the others in order, as many as fit ACCEPTED_ECHO."""
    import difflib  # here: the commands import this module, and refusals are rare

    ordered = sorted(names)
    close = difflib.get_close_matches(wrong, ordered, n=3)
    listed, used = [], 0
    for name in close + [n for n in ordered if n not in close]:
        if used + len(name) + 2 > ACCEPTED_ECHO:
            break
        listed.append(name)
        used += len(name) + 2
    more = len(ordered) - len(listed)
    hint = f"did you mean {close[0]}? " if close else ""
    return f"{hint}accepted: {', '.join(listed)}" + (f" and {more} more" if more else "")


class BadArguments(Exception):
    """A request with missing, unknown, mistyped or out-of-range arguments."""


class Arguments:
    """One request's arguments, read field by field; ``done()`` refuses any
    the operation did not read."""

    def __init__(self, op: str, args: Any, now: int) -> None:
        if not isinstance(args, dict):
            raise BadArguments("args must be an object")
        self.op = op
        self.args = args
        self.now = now
        self.read: set[str] = set()

    def _get(self, key: str, required: bool, kind: type, what: str) -> Any:
        """The argument, None when absent; of type ``kind`` (a bool is no int)."""
        self.read.add(key)
        value = self.args.get(key)
        if value is None:
            if required:
                raise BadArguments(f"{self.op}: missing argument {key!r}")
            return None
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise BadArguments(f"{self.op}: argument {key!r} must be {what}, "
                               f"got {limits.shown(repr(value))}")
        return value

    def done(self) -> None:
        unknown = sorted(set(self.args) - self.read)
        if unknown:
            raise BadArguments(f"{self.op}: unknown argument '{limits.shown(unknown[0], NAME_ECHO)}'; "
                               f"{accepted_names(unknown[0], self.read)}")

    def integer(self, key: str, low: int, high: int, required: bool = False,
                what: str = "") -> int | None:
        value = self._get(key, required, int, "a whole number")
        if value is not None and not low <= value <= high:
            raise RequestError(f"{what or key}: {limits.shown(value)} is out of range; "
                               f"accepted: {low} to {high}")
        return value

    def time(self, key: str, option: str, required: bool = False) -> int | None:
        """Epoch seconds from the epoch up to the horizon ahead of now, as
        the commands' time options take them."""
        value = self._get(key, required, int, "a whole number")
        return None if value is None else bounded_time(value, self.now, option)

    def count(self, key: str, option: str, required: bool = False) -> int | None:
        return self.integer(key, 1, limits.MAX_COUNT, required, option)

    def leads(self, key: str, option: str) -> tuple[int, ...] | None:
        """Notice leads in seconds (--notify-start, --notify-end), checked
        as the commands check them; None when absent."""
        value = self._get(key, False, list, "a list of whole seconds")
        return None if value is None else checked_leads(value, option)

    def idle_release(self) -> int | None:
        """--idle-release in seconds (0: never), checked as the commands
        check it; None when absent."""
        value = self._get("idle_release", False, int, "whole seconds")
        return None if value is None else checked_idle_release(value, "--idle-release")

    def flag(self, key: str) -> bool:
        return self._get(key, False, bool, "true or false") or False

    def maybe_flag(self, key: str) -> bool | None:
        """A flag a change may leave as it is: None when absent."""
        return self._get(key, False, bool, "true or false")

    def text(self, key: str, required: bool = False) -> str | None:
        return self._get(key, required, str, "a string")

    def checked(self, key: str, check: Callable[[str], Any], required: bool = False) -> Any:
        """A string argument passed through one of the commands' parsers."""
        value = self.text(key, required)
        return None if value is None else check(value)

    def mapping(self, key: str) -> dict:
        """An object argument (empty when absent); its fields are the
        reader's to check."""
        return self._get(key, False, dict, "an object") or {}

    def items(self, key: str) -> list | None:
        value = self._get(key, False, list, "a list")
        if value is not None and len(value) > limits.MAX_ITEMS:
            raise RequestError(f"{key}: {len(value)} entries; at most {limits.MAX_ITEMS} are accepted")
        return value

    def strings(self, key: str) -> list[str] | None:
        value = self.items(key)
        if value is not None and not all(isinstance(item, str) for item in value):
            raise BadArguments(f"{self.op}: argument {key!r} must be a list of strings")
        return value

    def names(self, key: str, option: str, parse: Callable[[str], tuple]) -> tuple[str, ...] | None:
        """A list whose entries each pass ``parse`` (the parser of the
        option's comma-separated value) as a single entry."""
        value = self.strings(key)
        if value is None:
            return None
        for item in value:
            if "," in item:
                raise RequestError(f"{option}: invalid entry '{limits.shown(item)}': "
                                   "one name per list entry")
        return tuple(dict.fromkeys(parse(item)[0] for item in value))


def _attributes(pairs: Iterable) -> tuple[tuple[str, str], ...]:
    """-l as [name, value] pairs, each checked as plus_reserve -l checks it."""
    checked = []
    for pair in pairs:
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
            raise BadArguments(f"reserve: each of 'attributes' must be a [name, value] pair, "
                               f"got {limits.shown(repr(pair))}")
        name, value = pair
        if "," in name or "," in value:
            raise RequestError(f"-l: invalid resource '{limits.shown(name + '=' + value)}': "
                               "accepted form is attr=value[,attr=value...]")
        checked.extend(parse_attribute_list(f"{name}={value}"))
    return tuple(checked)


def users(args: Arguments) -> tuple[str, ...] | None:
    """-U: user names and @group names."""
    return args.names("users", "-U", lambda v: parse_name_list(v, "-U", groups=True))


REQUEST_FIELDS = tuple(field.name for field in fields(Request))
"""A Request's fields, by the names of its one wire form (overlay.language.request.request_wire):
the Request type is their one spelling."""


def encode_request(request: Request) -> dict:
    """The request's wire form: every field, a kind by its value."""
    return request_wire(**{name: _plain(getattr(request, name)) for name in REQUEST_FIELDS})


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def stored_request(data: dict) -> Request:
    """A request the store kept in its wire form (written by encode_request,
    so trusted: not checked again). A field stored before it existed takes
    its default; a request stored before the kind existed takes the kind
    its nodes imply (RequestKind.implied_by)."""
    return Request(**{name: _tuples(data[name]) for name in REQUEST_FIELDS if name in data})


def _tuples(value: Any) -> Any:
    """A wire value with its lists as the Request's tuples, at every depth."""
    return tuple(_tuples(item) for item in value) if isinstance(value, list) else value


def reserve_request(args: Arguments) -> Request:
    """A request in its wire form from a client, with plus_reserve's checks."""
    memory = args.integer("memory_mb", 1, limits.MAX_MEMORY_MB, what="-mem")
    nodes = args.integer("nodes", 0, limits.MAX_COUNT, True, "-n")
    kind = args.checked("kind", _kind) or RequestKind.implied_by(nodes)
    pe_range = _pe_range(args.items("pe_range") or ())
    pe = args.checked("pe", lambda v: v and parse_pattern(v, "-pe")) or ""
    alloc_rule = args.checked("alloc_rule", lambda v: v and parse_alloc_rule(v)) or ""
    slot_fields = pe or pe_range or alloc_rule
    if kind is RequestKind.SLOTS and nodes:
        raise RequestError(f"-n: a request for slots (qrsub) names no nodes, got {nodes}")
    if kind is not RequestKind.SLOTS and slot_fields:
        raise RequestError("-pe and -alloc ask for slots (qrsub), -n for nodes (plus_reserve): "
                           "give one or the other")
    if kind is RequestKind.SLOTS and args.args.get("maint") is True:
        raise RequestError("--maint reserves whole nodes (-n) for maintenance, not slots (qrsub)")
    if (pe or alloc_rule) and not pe_range:
        raise RequestError(f"{'-pe' if pe else '-alloc'}: a slot range is needed (e.g. 4 or 2-8)")
    if pe and alloc_rule:
        raise RequestError("-pe and -alloc: give one or the other (-alloc reserves slots "
                           "without a parallel environment)")
    return Request(
        start=args.time("start", "-s", True), end=args.time("end", "-e", True),
        nodes=nodes, users=users(args) or (),
        slots_per_node=args.count("slots_per_node", "-sn"), memory_mb=memory,
        ncpus=args.count("ncpus", "-ncpu"),
        arch=args.checked("arch", lambda v: parse_pattern(v, "-arch")),
        os=args.checked("os", lambda v: parse_pattern(v, "-os")),
        attributes=_attributes(args.items("attributes") or ()),
        queues=(args.names("queues", "-q", lambda v: parse_queue_list(v, "-q"))
                if kind is RequestKind.SLOTS else
                args.names("queues", "-sgeq", lambda v: parse_name_list(v, "-sgeq"))) or (),
        name=args.checked("name", lambda v: v and parse_object_name(v, "-N", "AR name",
                                                                   digit_start=False)) or "",
        hard_error=args.flag("hard_error"),
        mail_options=args.checked("mail_options", lambda v: v and parse_mail_options(v)) or "",
        mail_list=args.names("mail_list", "-M", parse_mail_list) or (),
        res_access=_ar_ids(args.items("res_access") or ()), pe=pe, pe_range=pe_range,
        alloc_rule=alloc_rule,
        master_queues=args.names("master_queues", "-masterq",
                                 lambda v: parse_queue_list(v, "-masterq")) or (),
        ckpt=args.checked("ckpt", lambda v: v and parse_name(v, "-ckpt")) or "",
        interactive=args.flag("interactive"),
        account=args.checked("account", lambda v: v and parse_account(v)) or "", kind=kind,
        repair=repair(args) or DEFAULT_REPAIR,
        notify_start=args.leads("notify_start", "--notify-start"),
        notify_end=args.leads("notify_end", "--notify-end"),
        idle_release=args.idle_release(), release_when_done=args.flag("release_when_done"),
        maint=args.flag("maint"),
        clear_notice=args.leads("clear_notice", "--clear-notice"))


def repair(args: Arguments) -> str | None:
    """-repair: none, before or always (None when not given)."""
    return args.checked("repair", parse_repair)


def _kind(text: str) -> RequestKind:
    try:
        return RequestKind(text)
    except ValueError:
        raise RequestError(f"kind: '{limits.shown(text)}' is not a kind of request; accepted: "
                           f"{', '.join(kind.value for kind in RequestKind)}") from None


def _pe_range(items: list) -> tuple[tuple[int, int], ...]:
    """-pe/-alloc's slot range list as [first, last] pairs, checked as the
    command's text form is."""
    if not all(isinstance(p, list) and len(p) == 2 and
               all(isinstance(n, int) and not isinstance(n, bool) for n in p) for p in items):
        raise RequestError(f"-pe: slot ranges are [first, last] pairs of whole numbers, got "
                           f"{limits.shown(repr(items))}")
    if not items:
        return ()
    return parse_pe_range(",".join(f"{a}-{b}" if b < MAX_SLOTS else f"{a}-" for a, b in items))


def _ar_ids(items: list, what: str = "ResAccess") -> tuple[int, ...]:
    """ResAccess (or ``what``): AR ids, each once."""
    if not all(isinstance(i, int) and not isinstance(i, bool) and 1 <= i <= MAX_AR_ID
               for i in items):
        raise RequestError(f"{what}: AR ids (1 to {MAX_AR_ID}) are accepted, got "
                           f"{limits.shown(repr(items))}")
    return tuple(dict.fromkeys(items))


def ar_ids(args: Arguments) -> tuple[int, ...]:
    """plus_approve, plus_deny: one AR id or more (at most MAX_ITEMS), each once."""
    items = args.items("ids")
    if not items:
        raise RequestError(f"{args.op}: give one AR id or more (at most {limits.MAX_ITEMS})")
    return _ar_ids(items, "ID")


def ar_id(args: Arguments, required: bool = False) -> int | None:
    return args.integer("id", 1, MAX_AR_ID, required, "-r")


def owner_names(text: str) -> tuple[str, ...]:
    """qrstat -u: user names, or * for everyone."""
    return ("*",) if text == "*" else parse_name_list(text, "-u")


def ar_references(text: str) -> tuple[str, ...]:
    """qrstat -ar, qrdel: AR ids, names or name patterns."""
    return parse_ar_references(text, "-ar")


def owner(args: Arguments) -> str | None:
    return args.checked("owner", lambda v: parse_name(v, "-o"))
