"""The request language: -l lists, -U access lists, memory sizes, queue
lists, and whether a node satisfies a request.

Standard library only: clients use it to reject bad input before they
connect, and the daemon uses the same functions to validate again.
"""

from __future__ import annotations

import fnmatch
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from overlay.model import Node, Request

MAX_AR_ID = 9_999_999
MAX_SLOTS = 9_999_999
"""Grid Engine's largest slot count: the end of an open PE range (n-)."""
NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_WILD = r"[A-Za-z0-9_.*?\[\]-]+"
_QUEUE = re.compile(rf"^{_WILD}(@@?{_WILD})?$|^@@?{_WILD}$")
_JOB_REFERENCE = re.compile(r"^[A-Za-z0-9_.*?\[\]-]+$")
_PE_RANGE = re.compile(r"^(\d*)(-?)(\d*)$")
_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)([kKmMgGtT]?)$")
_MEMORY_BYTES = {"": 2 ** 20, "k": 10 ** 3, "K": 2 ** 10, "m": 10 ** 6, "M": 2 ** 20,
                 "g": 10 ** 9, "G": 2 ** 30, "t": 10 ** 12, "T": 2 ** 40}
MAIL_EVENTS = "bea"
_MAIL_ADDRESS = re.compile(r"^[A-Za-z0-9_.+%-]+(@[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)?$")
MEMORY_FORMS = ("a number of megabytes, or a number with a Grid Engine "
                "multiplier k K m M g G t T (e.g. 512, 4G)")


class RequestError(ValueError):
    """Malformed request syntax; the text names the option and accepted form."""


def parse_memory_mb(text: str, option: str = "-mem") -> int:
    """Megabytes (MiB) in a memory size: plain numbers are MB as in PluS,
    suffixed ones follow Grid Engine (lower case powers of 1000, upper 1024)."""
    match = _MEMORY.match(text.strip())
    if not match:
        raise RequestError(f"{option}: invalid memory size '{text}': accepted forms are {MEMORY_FORMS}")
    # exact integer arithmetic; a minimum rounds up (4g = 4e9 bytes is 3815 MiB, not 3814)
    whole, _, fraction = match.group(1).partition(".")
    scale = 10 ** len(fraction)
    numerator = int(whole + fraction) * _MEMORY_BYTES[match.group(2)]
    megabytes = -(-numerator // (scale * 2 ** 20))
    if megabytes <= 0:
        raise RequestError(f"{option}: memory size must be positive, got '{text}'")
    return megabytes


def parse_ar_id(text: str) -> int:
    """An AR id as PluS (R123) or Grid Engine (123) writes it."""
    digits = text[1:] if text[:1] in ("R", "r") else text
    if not digits.isdigit() or not 1 <= int(digits) <= MAX_AR_ID:
        raise RequestError(f"invalid reservation id '{text}': accepted forms are 123 or R123 "
                           f"(1 to {MAX_AR_ID})")
    return int(digits)


def window_end(start: int, end: int | None, duration: int | None) -> int:
    """The end of a window given by its start and an end and/or duration.

    Rejects windows whose start, end and duration disagree (seed 000,
    5.2.2.1.1 "dissonant time window values"), and empty or inverted ones.
    """
    if end is None and duration is None:
        raise RequestError("the window needs an end: give -e endTime or -D duration")
    if duration is not None and duration <= 0:
        raise RequestError(f"-D: the duration must be positive, got {duration} s")
    if end is not None and duration is not None and end - start != duration:
        raise RequestError(f"dissonant time window: start + duration ({start + duration}) differs "
                           f"from the end ({end}); give -e or -D, or values that agree")
    final_end = end if end is not None else start + duration
    if final_end <= start:
        raise RequestError("the end time must be later than the start time")
    return final_end


def parse_positive_int(text: str, option: str, what: str) -> int:
    """A count that must be a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise RequestError(f"{option}: {what} must be a whole number of at least 1, got '{text}'") from None
    if value < 1:
        raise RequestError(f"{option}: {what} must be at least 1, got {value}")
    return value


def parse_attribute_list(text: str, option: str = "-l") -> tuple[tuple[str, str], ...]:
    """attr=value[,attr=value...] as qsub -l writes it."""
    pairs = []
    for item in text.split(","):
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not NAME_PATTERN.match(name) or not value or value.startswith("="):
            raise RequestError(f"{option}: invalid resource '{item}': accepted form is attr=value[,attr=value...]")
        pairs.append((name, value))
    return tuple(pairs)


def parse_name(text: str, option: str) -> str:
    """One name (AR name, user): letters, digits, _ . - and no leading digit."""
    if not NAME_PATTERN.match(text):
        raise RequestError(f"{option}: invalid name '{text}': use letters, digits, _ . - "
                           "starting with a letter or _")
    return text


def parse_name_list(text: str, option: str, groups: bool = False) -> tuple[str, ...]:
    """A comma-separated list of user (or, with groups, @group) or queue names."""
    names = []
    for item in text.split(","):
        item = item.strip()
        bare = item[1:] if groups and item.startswith("@") else item
        if not NAME_PATTERN.match(bare):
            form = "user[,@group,...]" if groups else "name[,name...]"
            raise RequestError(f"{option}: invalid name '{item}' in '{text}': accepted form is {form}")
        if item not in names:
            names.append(item)
    return tuple(names)


def parse_yes_no(text: str, option: str) -> bool:
    """y[es] or n[o], as qrsub -he takes them."""
    answer = {"y": True, "yes": True, "n": False, "no": False}.get(text.strip().lower())
    if answer is None:
        raise RequestError(f"{option}: expected y[es] or n[o], got '{text}'")
    return answer


def parse_mail_options(text: str, option: str = "-m") -> str:
    """qrsub -m: any of b (begin), e (end), a (error state), or n alone."""
    letters = "".join(dict.fromkeys(text.strip()))
    if letters == "n":
        return "n"
    if not letters or any(c not in MAIL_EVENTS for c in letters):
        raise RequestError(f"{option}: invalid mail options '{text}': accepted are letters of "
                           "b (begin), e (end), a (error state), or n (no mail)")
    return "".join(c for c in MAIL_EVENTS if c in letters)


def parse_mail_list(text: str, option: str = "-M") -> tuple[str, ...]:
    """qrsub -M: user[@host][,user[@host]...]."""
    addresses = []
    for item in text.split(","):
        item = item.strip()
        if not _MAIL_ADDRESS.match(item):
            raise RequestError(f"{option}: invalid mail address '{item}' in '{text}': accepted "
                               "form is user[@host][,user[@host]...]")
        if item not in addresses:
            addresses.append(item)
    return tuple(addresses)


def access_list(owner: str, users: tuple[str, ...]) -> tuple[str, ...]:
    """The AR's users: the owner first, always included (qrsub -u), each once."""
    return tuple(dict.fromkeys((owner,) + tuple(users)))


def node_satisfies(node: Node, request: Request) -> bool:
    """Whether ``node`` can ever hold ``request`` (its static attributes)."""
    if request.slots_per_node is not None and request.slots_per_node > node.slots:
        return False
    if request.memory_mb is not None and node.memory_mb < request.memory_mb:
        return False
    if request.ncpus is not None and node.ncpus < request.ncpus:
        return False
    if request.arch is not None and not fnmatch.fnmatchcase(node.arch, request.arch):
        return False
    if request.os is not None and not fnmatch.fnmatchcase(node.os, request.os):
        return False
    if request.queues and not any(fnmatch.fnmatchcase(q, pattern)
                                  for q in node.queues for pattern in request.queues):
        return False
    for name, wanted in request.attributes:
        have = node.properties.get(name)
        if have is None or not fnmatch.fnmatchcase(str(have), wanted):
            return False
    return True


def parse_pe_range(text: str, option: str = "-pe") -> tuple[tuple[int, int], ...]:
    """A PE slot range list (seed 001, 3): n-m, m for m-m, -m for 1-m, n- for
    n to infinity (MAX_SLOTS), comma-separated; merged and sorted."""
    ranges = []
    for item in text.split(","):
        match = _PE_RANGE.match(item.strip())
        low, dash, high = match.groups() if match else ("", "", "")
        if not match or not (low or high) or (not dash and not low):
            raise RequestError(f"{option}: invalid slot range '{item}' in '{text}': accepted forms "
                               "are n, n-m, -m and n- (comma-separated), n and m at least 1")
        first = int(low) if low else 1
        last = int(high) if high else (MAX_SLOTS if dash else first)
        if first < 1 or last < first or last > MAX_SLOTS:
            raise RequestError(f"{option}: invalid slot range '{item}': the numbers must be 1 to "
                               f"{MAX_SLOTS}, the first not above the second")
        ranges.append((first, last))
    merged: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return tuple(merged)


def format_pe_range(ranges: tuple[tuple[int, int], ...]) -> str:
    """A range list as Grid Engine writes it: 4, 3,4 (two numbers), 2-8, 4-
    (open), comma-separated."""
    return ",".join(str(a) if a == b else f"{a},{b}" if b == a + 1 else
                    f"{a}-" if b == MAX_SLOTS else f"{a}-{b}" for a, b in ranges)


def parse_queue_list(text: str, option: str) -> tuple[str, ...]:
    """qsub -q/-masterq wc_queue_list: queue, queue@host, queue@@hostgroup,
    @host, wildcards * ? [..] allowed; comma-separated."""
    items = []
    for item in text.split(","):
        item = item.strip()
        if not _QUEUE.match(item):
            raise RequestError(f"{option}: invalid queue '{item}' in '{text}': accepted forms are "
                               "queue, queue@host, queue@@hostgroup or @host, with wildcards * ? [ ]")
        if item not in items:
            items.append(item)
    return tuple(items)


def parse_job_references(text: str, option: str = "-hold_jid") -> tuple[str, ...]:
    """Job ids or names (wildcards allowed), comma-separated."""
    items = []
    for item in text.split(","):
        item = item.strip()
        if not _JOB_REFERENCE.match(item):
            raise RequestError(f"{option}: invalid job '{item}' in '{text}': accepted are job ids "
                               "and job names (wildcards * ? [ ] allowed), comma-separated")
        if item not in items:
            items.append(item)
    return tuple(items)
