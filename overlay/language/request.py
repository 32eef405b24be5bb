"""The request language: -l lists, -U access lists, memory sizes, queue
lists, AR ids, names and mail addresses.

Standard library only: clients use it to reject bad input before they
connect, and the daemon uses the same functions to validate again. Forms
are checked with str methods and character sets, not the regex engine,
whose import is a third of a command's start; overlay.language.matching holds
the wildcard matching that needs it.
"""

from __future__ import annotations

from overlay.language.limits import (
    HORIZON_DAYS,
    MAX_ADDRESS,
    MAX_ARGUMENT,
    MAX_COUNT,
    MAX_DURATION,
    MAX_ITEMS,
    MAX_MEMORY_MB,
    MAX_NAME,
    MAX_PATTERN,
    MAX_REASON,
    shown,
)
from overlay.language.timespec import format_duration, format_time

TYPE_CHECKING = False       # typing costs a command 3 ms to import
if TYPE_CHECKING:
    from typing import Callable


def request_wire(**fields) -> dict:
    """A request in its one wire form (what plus_reserve sends, the socket
    and the HTTP API take, the views show and the store keeps): JSON values,
    lists for tuples (an -l attribute a [name, value] pair). Clients give the
    fields their options set; the daemon gives every field of a Request
    (overlay.wire.codec.encode_request) and decodes them with the commands' checks,
    refusing a name it does not know."""
    return {name: _json_value(value) for name, value in fields.items()}


def _json_value(value):
    return [_json_value(item) for item in value] if isinstance(value, tuple) else value


MAX_AR_ID = 9_999_999
MAX_SLOTS = MAX_COUNT
"""The end of an open PE range (n-)."""
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ALNUM = _LETTERS + "0123456789"
_NAME_START = _LETTERS + "_"
_NAME_CHARS = _ALNUM + "_.-"
_WILD_CHARS = _ALNUM + "_.*?[]-"
"""A queue, host or job reference with wildcards."""
_LOCAL_PART_CHARS = _ALNUM + "_.+%-"
_HOST_CHARS = _ALNUM + ".-"
_MEMORY_BYTES = {"": 2 ** 20, "k": 10 ** 3, "K": 2 ** 10, "m": 10 ** 6, "M": 2 ** 20,
                 "g": 10 ** 9, "G": 2 ** 30, "t": 10 ** 12, "T": 2 ** 40}
_BLANKS = " \t"
"""What may surround a list's entries (not a line break: it would be dropped unseen)."""
MAIL_EVENTS = "bea"
MEMORY_FORMS = ("a number of megabytes, or a number with a Grid Engine "
                "multiplier k K m M g G t T (e.g. 512, 4G)")


class RequestError(ValueError):
    """Malformed request syntax, or a value out of bounds; the text names the
    option and the accepted form."""


def check_length(text: str, option: str, what: str, limit: int = MAX_ARGUMENT) -> str:
    """``text`` unless it is longer than ``limit``: checked before a pattern
    or int() sees it, so a huge argument costs nothing and is not echoed whole."""
    if len(text) > limit:
        raise RequestError(f"{option}: {what} '{shown(text)}' is longer than {limit} characters")
    return text


def _items(text: str, option: str) -> list[str]:
    """The entries of a comma-separated list, at most MAX_ITEMS, without the
    blanks around them; a line break stays, to be refused with the entry."""
    count = text.count(",") + 1
    if count > MAX_ITEMS:
        raise RequestError(f"{option}: '{shown(text)}' has {count} entries; at most {MAX_ITEMS} "
                           "are accepted")
    return [item.strip(_BLANKS) for item in text.split(",")]


def _made_of(text: str, chars: str) -> bool:
    """Whether ``text`` has at least one character, each one of ``chars``."""
    return bool(text) and not text.strip(chars)


def _is_number(text: str) -> bool:
    """ASCII digits only (str.isdigit alone takes any script's digits)."""
    return text.isascii() and text.isdigit()


def valid_name(text: str) -> bool:
    """A name's form: letters, digits, _ . - and no leading digit, dot or dash."""
    return text[:1] in _NAME_START and _made_of(text, _NAME_CHARS)


def _is_name(text: str) -> bool:
    return len(text) <= MAX_NAME and valid_name(text)


def _is_wild(text: str) -> bool:
    return _made_of(text, _WILD_CHARS)


def _is_queue(text: str) -> bool:
    """queue, queue@host, queue@@hostgroup, @host or @@hostgroup, wildcards allowed."""
    queue, at, host = text.partition("@")
    if not at:
        return _is_wild(queue)
    return (not queue or _is_wild(queue)) and _is_wild(host.removeprefix("@"))


def _is_mail_address(text: str) -> bool:
    """user or user@host: a host starts and ends with a letter or digit."""
    user, at, host = text.partition("@")
    return _made_of(user, _LOCAL_PART_CHARS) and (
        not at or _made_of(host, _HOST_CHARS) and host[0] in _ALNUM and host[-1] in _ALNUM)


def _is_pattern(text: str) -> bool:
    return 1 <= len(text) <= MAX_PATTERN and text.isprintable()


def parse_memory_mb(text: str, option: str = "-mem") -> int:
    """Megabytes (MiB) in a memory size, 1 to MAX_MEMORY_MB: plain numbers are
    MB as in PluS, suffixed ones follow Grid Engine (lower case powers of 1000,
    upper 1024)."""
    value = check_length(text, option, "memory size").strip()
    suffix = value[-1:] if value[-1:] in _MEMORY_BYTES else ""
    whole, dot, fraction = value[:len(value) - len(suffix)].partition(".")
    if not _is_number(whole) or dot and not _is_number(fraction):
        raise RequestError(f"{option}: invalid memory size '{shown(text)}': accepted forms are "
                           f"{MEMORY_FORMS}")
    # exact integer arithmetic; a minimum rounds up (4g = 4e9 bytes is 3815 MiB, not 3814)
    scale = 10 ** len(fraction)
    numerator = int(whole + fraction) * _MEMORY_BYTES[suffix]
    megabytes = -(-numerator // (scale * 2 ** 20))
    if megabytes <= 0:
        raise RequestError(f"{option}: memory size must be positive, got '{shown(text)}'")
    if megabytes > MAX_MEMORY_MB:
        raise RequestError(f"{option}: memory size '{shown(text)}' is more than {MAX_MEMORY_MB} MB; "
                           f"accepted are sizes up to {MAX_MEMORY_MB} MB")
    return megabytes


_KEY_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:-")


def parse_idempotency_key(text: str) -> str:
    """A client's key for a request: 8 to 128 of A-Z a-z 0-9 _ . : -"""
    if not 8 <= len(text) <= 128 or not set(text) <= _KEY_CHARACTERS:
        raise RequestError(f"idempotency key '{shown(text)}' is invalid: use 8 to 128 letters, "
                           "digits, _ . : -")
    return text


def parse_ar_id(text: str, option: str = "-r") -> int:
    """An AR id as PluS (R123) or Grid Engine (123) writes it."""
    digits = check_length(text, option, "reservation id")
    digits = digits[1:] if digits[:1] in ("R", "r") else digits
    if not _is_number(digits) or not 1 <= int(digits) <= MAX_AR_ID:
        raise RequestError(f"{option}: invalid reservation id '{shown(text)}': accepted forms are "
                           f"123 or R123 (1 to {MAX_AR_ID})")
    return int(digits)


def window_end(start: int, end: int | None, duration: int | None,
               duration_option: str = "-D") -> int:
    """The end of a window given by its start and an end and/or duration
    (``duration_option``: -D for plus_reserve, -d for qrsub).

    Rejects windows whose start, end and duration disagree (seed 000,
    5.2.2.1.1 "dissonant time window values"), empty or inverted ones, and
    ones longer than MAX_DURATION; times are shown as users type them.
    """
    if end is None and duration is None:
        raise RequestError(f"the window needs an end: give -e endTime or {duration_option} "
                           "duration")
    if duration is not None and duration <= 0:
        raise RequestError(f"{duration_option}: the duration must be positive, got {duration} s")
    if end is not None and duration is not None and end - start != duration:
        raise RequestError(f"dissonant time window: the start {format_time(start)} plus the duration "
                           f"{format_duration(duration)} is {format_time(start + duration)}, not the "
                           f"end {format_time(end)}; give -e or {duration_option}, or values "
                           "that agree")
    final_end = end if end is not None else start + duration
    if final_end <= start:
        raise RequestError("the end time must be later than the start time")
    if final_end - start > MAX_DURATION:
        raise RequestError(f"the window from {format_time(start)} to {format_time(final_end)} is "
                           f"longer than {HORIZON_DAYS} days; accepted are windows up to "
                           f"{MAX_DURATION // 86400}d")
    return final_end


def parse_int(text: str, option: str, what: str, least: int = 1, most: int = MAX_COUNT) -> int:
    """A whole number (ASCII digits, optional sign) from ``least`` to ``most``:
    counts are 1 to MAX_COUNT unless said otherwise."""
    number = check_length(text, option, what).strip()
    if not _is_number(number[1:] if number[:1] in ("+", "-") else number):
        raise RequestError(f"{option}: {what} must be a whole number from {least} to {most}, "
                           f"got '{shown(text)}'")
    value = int(number)
    if value < least:
        raise RequestError(f"{option}: {what} must be at least {least}, got {shown(text.strip())}")
    if value > most:
        raise RequestError(f"{option}: {what} must be at most {most}, got {shown(text.strip())}")
    return value


def parse_pattern(text: str, option: str) -> str:
    """A wildcard pattern or attribute value (-arch, -os, -l values):
    printable, 1 to MAX_PATTERN characters."""
    if not _is_pattern(text):
        raise RequestError(f"{option}: invalid pattern '{shown(text)}': accepted is printable text "
                           f"of 1 to {MAX_PATTERN} characters, with wildcards * ? [ ]")
    return text


def parse_attribute_list(text: str, option: str = "-l") -> tuple[tuple[str, str], ...]:
    """attr=value[,attr=value...] as qsub -l writes it; values are patterns."""
    pairs = []
    for item in _items(text, option):
        name, sep, value = item.partition("=")
        name, value = name.strip(_BLANKS), value.strip(_BLANKS)
        if not sep or not _is_name(name) or not _is_pattern(value) or value.startswith("="):
            raise RequestError(f"{option}: invalid resource '{shown(item)}': accepted form is "
                               f"attr=value[,attr=value...], attr a name of at most {MAX_NAME} "
                               f"characters, value printable text of at most {MAX_PATTERN} "
                               "(wildcards * ? [ ] allowed)")
        pairs.append((name, value))
    return tuple(pairs)


def parse_reason(text: str, option: str = "-reason") -> str:
    """A manager's reason, as users and the reporting file read it: one
    line of at most MAX_REASON printable characters (no line breaks, which
    would forge a record or a line of a listing)."""
    if len(text) > MAX_REASON:
        raise RequestError(f"{option}: {len(text)} characters; at most {MAX_REASON} are accepted")
    if not text.isprintable():
        raise RequestError(f"{option}: '{shown(text)}' holds a line break or control character; "
                           f"give one line of printable text (at most {MAX_REASON} characters)")
    return text.strip()


def parse_name(text: str, option: str) -> str:
    """One name (AR name, user): letters, digits, _ . - and no leading digit."""
    if not _is_name(text):
        raise RequestError(f"{option}: invalid name '{shown(text)}': use 1 to {MAX_NAME} letters, "
                           "digits, _ . - starting with a letter or _")
    return text


_NOT_IN_OBJECT_NAMES = "/:@\\*?"
"""sge_types(5): a name is ASCII printing characters but for these."""


def parse_object_name(text: str, option: str, what: str = "name",
                      digit_start: bool = True) -> str:
    """A Grid Engine name (sge_types(5) name; an ar_name or job_name may not
    start with a digit): ASCII printing characters without blanks or
    / : @ \\ * ?, at most MAX_NAME of them. 8.1.9 takes x+y or a(b as an AR
    name, and refuses a blank (its qrsub then exits 0 silently)."""
    if len(text) > MAX_NAME or not text or not text.isascii() or not text.isprintable() \
            or " " in text or any(c in _NOT_IN_OBJECT_NAMES for c in text):
        raise RequestError(f"{option}: invalid {what} '{shown(text)}': accepted are 1 to "
                           f"{MAX_NAME} ASCII printing characters without blanks or "
                           f"{' '.join(_NOT_IN_OBJECT_NAMES)}")
    if not digit_start and text[0].isdigit():
        raise RequestError(f"{option}: invalid {what} '{shown(text)}': it may not start with "
                           "a digit (it would read as an id)")
    return text


def parse_name_list(text: str, option: str, groups: bool = False) -> tuple[str, ...]:
    """A comma-separated list of user (or, with groups, @group) or queue names."""
    items = _items(text, option)
    for item in items:
        if not _is_name(item[1:] if groups and item.startswith("@") else item):
            form = "user[,@group,...]" if groups else "name[,name...]"
            raise RequestError(f"{option}: invalid name '{shown(item)}' in '{shown(text)}': accepted "
                               f"form is {form}, names of at most {MAX_NAME} characters")
    return tuple(dict.fromkeys(items))


REPAIR_MODES = ("none", "before", "always")
"""-repair: when an AR's node that went down is replaced by a free one:
never, before the AR's window opens (the default), or during it too."""
DEFAULT_REPAIR = "before"


def parse_repair(text: str, option: str = "-repair") -> str:
    """-repair none|before|always."""
    mode = text.strip().lower()
    if mode not in REPAIR_MODES:
        raise RequestError(f"{option}: invalid repair mode '{shown(text)}'; accepted: "
                           f"{'|'.join(REPAIR_MODES)} (default {DEFAULT_REPAIR})")
    return mode


def parse_yes_no(text: str, option: str) -> bool:
    """y[es] or n[o], as qrsub -he takes them."""
    answer = {"y": True, "yes": True, "n": False, "no": False}.get(text.strip().lower())
    if answer is None:
        raise RequestError(f"{option}: expected y[es] or n[o], got '{shown(text)}'")
    return answer


def parse_mail_options(text: str, option: str = "-m") -> str:
    """qrsub -m: any of b (begin), e (end), a (error state), or n alone."""
    letters = "".join(dict.fromkeys(check_length(text, option, "mail options").strip()))
    if letters == "n":
        return "n"
    if not letters or any(c not in MAIL_EVENTS for c in letters):
        raise RequestError(f"{option}: invalid mail options '{shown(text)}': accepted are letters "
                           "of b (begin), e (end), a (error state), or n (no mail)")
    return "".join(c for c in MAIL_EVENTS if c in letters)


def parse_mail_list(text: str, option: str = "-M") -> tuple[str, ...]:
    """qrsub -M: user[@host][,user[@host]...]."""
    return _listed(text, option, _is_mail_address, MAX_ADDRESS, "mail address",
                   "form is user[@host][,user[@host]...]")


def access_list(owner: str, users: tuple[str, ...]) -> tuple[str, ...]:
    """The AR's users: the owner first, always included (qrsub -u), each once."""
    return tuple(dict.fromkeys((owner,) + tuple(users)))


def parse_pe_range(text: str, option: str = "-pe") -> tuple[tuple[int, int], ...]:
    """A PE slot range list (seed 001, 3): n-m, m for m-m, -m for 1-m, n- for
    n to infinity (MAX_SLOTS), comma-separated; merged and sorted."""
    ranges = []
    for item in _items(text, option):
        low, dash, high = check_length(item, option, "slot range").partition("-")
        well_formed = all(_is_number(n) for n in (low, high) if n)
        if not well_formed or not (low or high) or (not dash and not low):
            raise RequestError(f"{option}: invalid slot range '{shown(item)}' in '{shown(text)}': "
                               "accepted forms are n, n-m, -m and n- (comma-separated), n and m "
                               "at least 1")
        first = int(low) if low else 1
        last = int(high) if high else (MAX_SLOTS if dash else first)
        if first < 1 or last < first or last > MAX_SLOTS:
            raise RequestError(f"{option}: invalid slot range '{shown(item)}': the numbers must be "
                               f"1 to {MAX_SLOTS}, the first not above the second")
        ranges.append((first, last))
    merged: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return tuple(merged)


DEFAULT_ACCOUNT = "sge"
"""The account of an AR or a job submitted without -A, as Grid Engine names it."""


def parse_account(text: str) -> str:
    """-A: an account_name, a name (sge_types(5)): no colon, the accounting
    records' separator, and no blank, which 8.1.9's qmaster refuses."""
    return parse_object_name(text, "-A", "account string")


ALLOCATION_RULES = ("$pe_slots", "$fill_up", "$round_robin")


def parse_alloc_rule(text: str, option: str = "-alloc") -> str:
    """An allocation rule (sge_pe(5)): $pe_slots, $fill_up, $round_robin, or
    a number of slots per host."""
    rule = check_length(text, option, "allocation rule").strip()
    if rule in ALLOCATION_RULES or _is_number(rule) and 1 <= int(rule) <= MAX_SLOTS:
        return rule
    raise RequestError(f"{option}: invalid allocation rule '{shown(text)}': accepted are "
                       f"{', '.join(ALLOCATION_RULES)} or a number of slots per host "
                       f"(1 to {MAX_SLOTS})")


def format_pe_range(ranges: tuple[tuple[int, int], ...]) -> str:
    """A range list as Grid Engine writes it: 4, 3,4 (two numbers), 2-8, 4-
    (open), comma-separated."""
    return ",".join(str(a) if a == b else f"{a},{b}" if b == a + 1 else
                    f"{a}-" if b == MAX_SLOTS else f"{a}-{b}" for a, b in ranges)


def _listed(text: str, option: str, valid: Callable[[str], bool], longest: int, what: str,
            accepted: str) -> tuple[str, ...]:
    """A comma-separated list whose entries are each ``valid`` in at most
    ``longest`` characters, each once in their first order."""
    items = _items(text, option)
    for item in items:
        if len(item) > longest or not valid(item):
            raise RequestError(f"{option}: invalid {what} '{shown(item)}' in '{shown(text)}': "
                               f"accepted {accepted}, at most {longest} characters each")
    return tuple(dict.fromkeys(items))


def parse_ar_references(text: str, option: str = "-ar") -> tuple[str, ...]:
    """AR ids, names or name patterns (qrstat -ar, qrdel), comma-separated."""
    return _listed(text, option, lambda item: _is_number(item) or _is_name_pattern(item),
                   MAX_PATTERN, "AR id or name", "are AR ids, names and name patterns "
                   "(* ? [ ]), comma-separated")


def _is_name_pattern(text: str) -> bool:
    """A Grid Engine name (parse_object_name) that may hold the wildcards * and ?."""
    return bool(text) and text.isascii() and text.isprintable() and " " not in text and \
        not any(c in _NOT_IN_OBJECT_NAMES.strip("*?") for c in text)


def parse_queue_list(text: str, option: str) -> tuple[str, ...]:
    """qsub -q/-masterq wc_queue_list: queue, queue@host, queue@@hostgroup,
    @host, wildcards * ? [..] allowed; comma-separated."""
    return _listed(text, option, _is_queue, MAX_PATTERN, "queue", "forms are queue, queue@host, "
                   "queue@@hostgroup or @host, with wildcards * ? [ ], comma-separated")


def parse_job_references(text: str, option: str = "-hold_jid") -> tuple[str, ...]:
    """Job ids or names (wildcards allowed), comma-separated."""
    return _listed(text, option, _is_wild, MAX_PATTERN, "job", "are job ids and job "
                   "names, with wildcards * ? [ ], comma-separated")
