"""Grid Engine complex attributes (seed 002): definitions, typed values, requests.

The native scheduler needs Grid Engine's resource model to accept the same
``-l`` requests and complex configuration as the real one; this module holds
the definitions and values, ``overlay_native.resources.matching`` the hierarchy,
consumables and job categories.

Public API (errors are ``ComplexError``, one line naming the value and what is
accepted):

- ``ComplexTable(entries=())``: Son of Grid Engine 8.1.9's built-in complexes
  (``qconf -sc``) with ``entries`` on top; ``ComplexTable.load(path)`` reads
  them from a YAML list (see ``conf/complexes.yaml``). An entry is a mapping
  with the keys name, shortcut, type, relop, requestable, consumable,
  default, urgency (for a built-in only the keys that change, for a new one
  at least name, type and relop), or a ``qconf -sc`` line of 8 columns.
  ``table.find(name_or_shortcut) -> Complex``; ``table.remove(name)`` (never
  a built-in); iterating yields every ``Complex``. Seed 002's restrictions
  (section 2) are enforced as the table is built.
- ``Complex``: one definition; ``consumable`` is YES (per slot), NO or JOB
  (per job); ``default`` is None or the amount a job consumes unrequested.
- ``parse_value(type, value)``: the typed value (float for numbers and BOOL,
  str for strings) of a configured value. Formats as sge_types(5): MEMORY
  with k K m M g G t T, TIME as seconds or h:m:s, BOOL true/false/1/0,
  INFINITY for any number.
- ``compare(complex, requested, offered) -> bool``: ``requested relop offered``;
  STRING matches exactly, CSTRING and HOST ignoring case, RESTRING by pattern.
- ``Pattern(text)``: a RESTRING request, ``.matches(text)``.
- ``Request(complex, value, text)``; ``parse_requests(table, "a=1,b=2") ->
  {name: Request}`` (keyed by name even when a shortcut was used).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import yaml

from overlay.api.plugin import MAX_ITEMS, MAX_PATTERN, shown

TYPES = ("INT", "DOUBLE", "MEMORY", "TIME", "STRING", "CSTRING", "RESTRING", "HOST", "BOOL")
NUMERIC = ("INT", "DOUBLE", "MEMORY", "TIME")
STRINGS = ("STRING", "CSTRING", "RESTRING", "HOST")
RELOPS = ("==", "!=", ">=", ">", "<=", "<")
_REQUESTABLE = {"y": "YES", "yes": "YES", "n": "NO", "no": "NO", "f": "FORCED", "forced": "FORCED"}
_CONSUMABLE = {"y": "YES", "yes": "YES", "n": "NO", "no": "NO", "j": "JOB", "job": "JOB"}
_KEYS = ("name", "shortcut", "type", "relop", "requestable", "consumable", "default", "urgency")
_NAME_FORBIDDEN = set(" /:'\\[]{}|()@%,\"")

# Son of Grid Engine 8.1.9's default complex list, from qconf -sc
# (tests/data/sge/qconf-sc.txt without plus_rsv, which the sge backend adds).
_BUILTIN = """
arch                a           STRING    ==    YES         NO         NONE     0
calendar            c           STRING    ==    YES         NO         NONE     0
cpu                 cpu         DOUBLE    >=    YES         NO         0        0
display_win_gui     dwg         BOOL      ==    YES         NO         0        0
h_core              h_core      MEMORY    <=    YES         NO         0        0
h_cpu               h_cpu       TIME      <=    YES         NO         0:0:0    0
h_data              h_data      MEMORY    <=    YES         NO         0        0
h_fsize             h_fsize     MEMORY    <=    YES         NO         0        0
h_rss               h_rss       MEMORY    <=    YES         NO         0        0
h_rt                h_rt        TIME      <=    YES         NO         0:0:0    0
h_stack             h_stack     MEMORY    <=    YES         NO         0        0
h_vmem              h_vmem      MEMORY    <=    YES         NO         0        0
hostname            h           HOST      ==    YES         NO         NONE     0
load_avg            la          DOUBLE    >=    NO          NO         0        0
load_long           ll          DOUBLE    >=    NO          NO         0        0
load_medium         lm          DOUBLE    >=    NO          NO         0        0
load_short          ls          DOUBLE    >=    NO          NO         0        0
m_core              core        INT       <=    YES         NO         0        0
m_socket            socket      INT       <=    YES         NO         0        0
m_thread            thread      INT       <=    YES         NO         0        0
m_topology          topo        STRING    ==    YES         NO         NONE     0
m_topology_inuse    utopo       STRING    ==    YES         NO         NONE     0
mem_free            mf          MEMORY    <=    YES         NO         0        0
mem_total           mt          MEMORY    <=    YES         NO         0        0
mem_used            mu          MEMORY    >=    YES         NO         0        0
min_cpu_interval    mci         TIME      <=    NO          NO         0:0:0    0
np_load_avg         nla         DOUBLE    >=    NO          NO         0        0
np_load_long        nll         DOUBLE    >=    NO          NO         0        0
np_load_medium      nlm         DOUBLE    >=    NO          NO         0        0
np_load_short       nls         DOUBLE    >=    NO          NO         0        0
num_proc            p           INT       ==    YES         NO         0        0
qname               q           STRING    ==    YES         NO         NONE     0
rerun               re          BOOL      ==    NO          NO         0        0
s_core              s_core      MEMORY    <=    YES         NO         0        0
s_cpu               s_cpu       TIME      <=    YES         NO         0:0:0    0
s_data              s_data      MEMORY    <=    YES         NO         0        0
s_fsize             s_fsize     MEMORY    <=    YES         NO         0        0
s_rss               s_rss       MEMORY    <=    YES         NO         0        0
s_rt                s_rt        TIME      <=    YES         NO         0:0:0    0
s_stack             s_stack     MEMORY    <=    YES         NO         0        0
s_vmem              s_vmem      MEMORY    <=    YES         NO         0        0
seq_no              seq         INT       ==    NO          NO         0        0
slots               s           INT       <=    YES         YES        1        1000
swap_free           sf          MEMORY    <=    YES         NO         0        0
swap_rate           sr          MEMORY    >=    YES         NO         0        0
swap_rsvd           srsv        MEMORY    >=    YES         NO         0        0
swap_total          st          MEMORY    <=    YES         NO         0        0
swap_used           su          MEMORY    >=    YES         NO         0        0
tmpdir              tmp         STRING    ==    NO          NO         NONE     0
virtual_free        vf          MEMORY    <=    YES         NO         0        0
virtual_total       vt          MEMORY    <=    YES         NO         0        0
virtual_used        vu          MEMORY    >=    YES         NO         0        0
"""

# sge_types(5), memory_specifier: k/m/g/t powers of 1000, K/M/G/T powers of 1024.
_MULTIPLIERS = {"k": 1e3, "K": 2.0 ** 10, "m": 1e6, "M": 2.0 ** 20,
                "g": 1e9, "G": 2.0 ** 30, "t": 1e12, "T": 2.0 ** 40}
_ACCEPTED = {
    "INT": "an integer such as 4 or -2, or INFINITY",
    "DOUBLE": "a decimal number such as 1.5 or 2e-3, or INFINITY",
    "MEMORY": "a decimal, 0x hex or 0 octal number with an optional multiplier "
              "k K m M g G t T (k=1000, K=1024 ...), or INFINITY",
    "TIME": "seconds (decimal, 0x hex or 0 octal), h:m:s with empty fields as 0 (1::1), or INFINITY",
    "BOOL": "true, false, 1 or 0 (any case)",
}
# fullmatch only; [0-9], not \d, which takes any script's digits (as float() and int() do)
_INT = re.compile(r"[+-]?[0-9]+")
_DOUBLE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_DECIMAL = re.compile(r"[0-9]+\.?[0-9]*|\.[0-9]+")
_HEX_OCT = re.compile(r"0[xX][0-9a-fA-F]+|0[0-7]+")
_CLOCK = re.compile(r"([0-9]*):([0-9]*):([0-9]*)")


class ComplexError(ValueError):
    """A complex definition, value or request that cannot be used; the text says why."""


def _constant(text: str) -> float | None:
    """sge_types' positive constant: decimal, 0x hex or 0 octal (Grid Engine also
    takes a decimal fraction, as strtod does)."""
    if _HEX_OCT.fullmatch(text):
        return float(int(text, 16 if text[1] in "xX" else 8))
    if _DECIMAL.fullmatch(text) and not (len(text) > 1 and text[0] == "0" and text[1] != "."):
        return float(text)
    return None


def _parse_number(ctype: str, text: str) -> float | None:
    """The number ``text`` of a numeric type, or None; none is longer than
    MAX_PATTERN characters, so int() and float() never meet a huge one."""
    if len(text) > MAX_PATTERN:
        return None
    if text.lower() == "infinity":
        return math.inf
    if ctype == "INT":
        return float(text) if _INT.fullmatch(text) else None
    if ctype == "DOUBLE":
        return float(text) if _DOUBLE.fullmatch(text) else None
    if ctype == "MEMORY":
        scale = _MULTIPLIERS.get(text[-1:], 1.0)
        number = _constant(text[:-1] if text[-1:] in _MULTIPLIERS else text)
        return None if number is None else number * scale
    clock = _CLOCK.fullmatch(text)
    if clock:
        hours, minutes, seconds = (int(part or 0) for part in clock.groups())
        return float(hours * 3600 + minutes * 60 + seconds)
    number = _constant(text)
    return number if number is None or number.is_integer() else None


def parse_value(ctype: str, value: Any) -> float | str:
    """A configured value as Grid Engine compares it: float for numbers and BOOL
    (1/0; INFINITY is math.inf), str for the string types."""
    if ctype in STRINGS:
        if isinstance(value, str) and value:
            return value
        raise ComplexError(f"bad {ctype} value {value!r}; accepted: a non-empty string "
                           "(quote it in YAML)")
    if ctype == "BOOL":
        if isinstance(value, bool):
            return float(value)
        text = str(value).strip().lower()
        if text in ("true", "1", "false", "0"):
            return float(text in ("true", "1"))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)          # a YAML number; no nan, no fraction for INT
        if not math.isnan(number) and (ctype != "INT" or number.is_integer() or math.isinf(number)):
            return number
    elif isinstance(value, str):
        number = _parse_number(ctype, value.strip())
        if number is not None:
            return number
    raise ComplexError(f"bad {ctype} value '{shown(value)}'; accepted: {_ACCEPTED[ctype]}")


@dataclass(frozen=True)
class Complex:
    """One complex attribute, as a line of ``qconf -sc``."""

    name: str
    shortcut: str
    type: str
    relop: str
    requestable: str = "YES"       # YES, NO, FORCED
    consumable: str = "NO"         # YES (debited per slot), NO, JOB (once per job)
    default: float | None = None   # consumables only: consumed when not requested
    urgency: float = 0.0


def compare(complex_: Complex, requested: float | str | Pattern, offered: float | str) -> bool:
    """Whether a request fits an offered value: ``requested <relop> offered``.

    complex(5), relop: "the value requested by the user ... is compared
    against the corresponding value configured"; Grid Engine's resource_cmp()
    and string_cmp() (sge_complex_schedd.c) compute ``request relop offer``.
    So with ``h_vmem <=``, ``-l h_vmem=2G`` fits a queue offering 4G, and with
    ``mem_used >=``, ``-l mu=1G`` fits hosts using at most 1G. Strings match
    as seed 002 says: STRING exactly, CSTRING and HOST ignoring case, RESTRING
    by the requested pattern; ``!=`` is the negation.
    """
    if complex_.type in NUMERIC or complex_.type == "BOOL":
        return {"==": requested == offered, "!=": requested != offered,
                ">=": requested >= offered, ">": requested > offered,
                "<=": requested <= offered, "<": requested < offered}[complex_.relop]
    if isinstance(requested, Pattern):
        equal = requested.matches(str(offered))
    elif complex_.type in ("CSTRING", "HOST"):
        equal = str(requested).lower() == str(offered).lower()
    else:
        equal = requested == offered
    return equal if complex_.relop == "==" else not equal


_STAR, _ANY = object(), object()


def _bracket(text: str, start: int) -> tuple[tuple[tuple[str, str], ...], int] | None:
    """The character set opening at text[start] == '[' and the index after it,
    or None when it never closes (then '[' is an ordinary character)."""
    members: list[tuple[str, str]] = []
    index = start + 1
    if text[index:index + 1] == "]":
        members.append(("]", "]"))
        index += 1
    while index < len(text) and text[index] != "]":
        low, index = _set_char(text, index)
        if text[index:index + 1] == "-" and text[index + 1:index + 2] not in ("", "]"):
            high, index = _set_char(text, index + 1)
        else:
            high = low
        members.append((low, high))
    return (tuple(members), index + 1) if index < len(text) else None


def _set_char(text: str, index: int) -> tuple[str, int]:
    if text[index] == "\\" and index + 1 < len(text):
        return text[index + 1], index + 2
    return text[index], index + 1


def _tokens(alternative: str) -> tuple:
    """One '|' alternative as tokens: a literal character, _STAR, _ANY or a set."""
    tokens: list = []
    index = 0
    while index < len(alternative):
        char = alternative[index]
        if char == "\\" and index + 1 < len(alternative):
            tokens.append(alternative[index + 1])
            index += 2
            continue
        charset = _bracket(alternative, index) if char == "[" else None
        if charset:
            tokens.append(charset[0])
            index = charset[1]
            continue
        tokens.append(_STAR if char == "*" else _ANY if char == "?" else char)
        index += 1
    return tuple(tokens)


def _one(token: Any, char: str) -> bool:
    if token is _ANY:
        return True
    if isinstance(token, tuple):
        return any(low <= char <= high for low, high in token)
    return token == char


def _glob(tokens: tuple, text: str) -> bool:
    """Wildcard match with backtracking to the last '*' only (linear in practice)."""
    position = index = 0
    star, resume = -1, 0
    while index < len(text):
        if position < len(tokens) and tokens[position] is _STAR:
            star, resume = position, index
            position += 1
        elif position < len(tokens) and _one(tokens[position], text[index]):
            position += 1
            index += 1
        elif star >= 0:
            position, resume = star + 1, resume + 1
            index = resume
        else:
            return False
    return all(token is _STAR for token in tokens[position:])


@dataclass(frozen=True)
class Pattern:
    """A RESTRING request, seed 002's syntax: ``*`` any characters, ``?`` one,
    ``.`` itself, ``\\`` escapes the next character, ``[..]`` a set with a-z
    ranges (``^`` and ``!`` are ordinary members), ``|`` alternatives on the top
    level only, never escaped, so ``[linux|solaris]`` means ``[linux`` or
    ``solaris]``. Nothing else is special (no ``+``); matching is case-sensitive."""

    text: str
    _alternatives: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_alternatives",
                           tuple(_tokens(part) for part in self.text.split("|")))

    def matches(self, text: str) -> bool:
        return any(_glob(tokens, text) for tokens in self._alternatives)


def _check_name(name: Any, what: str = "name") -> str:
    if not isinstance(name, str) or not name or len(name) > 512 or \
            _NAME_FORBIDDEN & set(name) or not name.isprintable():
        raise ComplexError(f"bad complex {what} {name!r}; accepted: 1-512 printable characters "
                           "without spaces or / : ' \\ [ ] { } | ( ) @ % , \"")
    return name


def _choice(name: str, key: str, value: Any, choices: Mapping[str, str]) -> str:
    if isinstance(value, bool):          # YAML reads yes/no as booleans
        value = "yes" if value else "no"
    choice = choices.get(str(value).lower())
    if choice is None:
        accepted = ", ".join(dict.fromkeys(choices.values()))
        raise ComplexError(f"complex {name!r}: bad {key} {value!r}; accepted: {accepted}")
    return choice


def _default(name: str, ctype: str, value: Any) -> float | None:
    """None for 'NONE' or a zero value (qconf's placeholders), else the amount."""
    if value is None or (isinstance(value, str) and value.upper() == "NONE"):
        return None
    if ctype in STRINGS:
        raise ComplexError(f"complex {name!r}: a default is only for consumables, got {value!r}")
    try:
        amount = parse_value(ctype, value)
    except ComplexError as error:
        raise ComplexError(f"complex {name!r}: default: {error}") from None
    return float(amount) or None


def _validate(cx: Complex, default: str) -> Complex:
    """Seed 002, section 2: only definitions the scheduler can work with
    (``default`` is the default as written, for the messages)."""
    name = cx.name
    if cx.relop not in RELOPS:
        raise ComplexError(f"complex {name!r}: unknown relop {cx.relop!r}; accepted: {' '.join(RELOPS)}")
    if cx.consumable != "NO":
        if cx.type not in NUMERIC:
            raise ComplexError(f"complex {name!r}: only INT, DOUBLE, MEMORY and TIME can be "
                               f"consumable, got {cx.type}")
        if cx.relop != "<=":
            raise ComplexError(f"complex {name!r}: a consumable must use relop <=, got {cx.relop!r}")
        if cx.requestable == "NO" and cx.default is None:
            raise ComplexError(f"complex {name!r}: a consumable that is not requestable needs a default")
        if cx.requestable == "FORCED" and cx.default is not None:
            raise ComplexError(f"complex {name!r}: a FORCED consumable must not have a default, "
                               f"got {default!r}")
        if cx.default is not None and cx.default < 0:
            raise ComplexError(f"complex {name!r}: a default cannot be negative, got {default!r}")
    else:
        if cx.default is not None:
            raise ComplexError(f"complex {name!r}: a default is only for consumables, got {default!r}")
        allowed = ("==", "!=") if cx.type in STRINGS else ("==",) if cx.type == "BOOL" else RELOPS
        if cx.relop not in allowed:
            raise ComplexError(f"complex {name!r}: a {cx.type} complex accepts relop "
                               f"{' or '.join(allowed)}, got {cx.relop!r}")
    return cx


def _from_line(line: str) -> dict[str, str]:
    columns = line.split()
    if len(columns) != len(_KEYS):
        raise ComplexError(f"complex line {line.strip()!r}: expected {len(_KEYS)} columns "
                           f"({' '.join(_KEYS)}), got {len(columns)}")
    return dict(zip(_KEYS, columns, strict=True))


def _build(entry: Mapping[str, Any], base: Complex | None) -> Complex:
    """A Complex from an entry, keys it leaves out taken from ``base``."""
    name = _check_name(entry.get("name"))
    unknown = set(entry) - set(_KEYS)
    if unknown:
        raise ComplexError(f"complex {name!r}: unknown key {sorted(unknown)[0]!r}; "
                           f"accepted: {', '.join(_KEYS)}")
    if base is None:
        for key in ("type", "relop"):
            if key not in entry:
                raise ComplexError(f"complex {name!r}: a new complex needs {key}")
        base = Complex(name, name, "", "")
    ctype = str(entry.get("type", base.type)).upper()
    if ctype not in TYPES:
        raise ComplexError(f"complex {name!r}: unknown type {ctype!r}; accepted: {', '.join(TYPES)}")
    urgency = entry.get("urgency", base.urgency)
    try:
        urgency = float(urgency)
    except (TypeError, ValueError):
        raise ComplexError(f"complex {name!r}: urgency must be a number, got {urgency!r}") from None
    default = entry.get("default", base.default)
    return _validate(Complex(
        name=name,
        shortcut=_check_name(str(entry.get("shortcut", base.shortcut)), "shortcut"),
        type=ctype,
        relop=str(entry.get("relop", base.relop)),
        requestable=_choice(name, "requestable", entry.get("requestable", base.requestable),
                            _REQUESTABLE),
        consumable=_choice(name, "consumable", entry.get("consumable", base.consumable),
                           _CONSUMABLE),
        default=_default(name, ctype, default),
        urgency=urgency), str(default))


_BUILTINS = {cx.name: cx for cx in (_build(_from_line(line), None)
                                    for line in _BUILTIN.strip().splitlines())}


class ComplexTable:
    """The complex list: the built-ins with the administrator's entries on top."""

    def __init__(self, entries: Iterable[Mapping[str, Any] | str] = ()) -> None:
        if isinstance(entries, (str, Mapping)):
            raise ComplexError("complexes: expected a list of complexes (mappings or qconf -sc "
                               f"lines), got {type(entries).__name__}")
        complexes = dict(_BUILTINS)
        defined: set[str] = set()
        for entry in entries:
            if isinstance(entry, str):
                entry = _from_line(entry)
            elif not isinstance(entry, Mapping):
                raise ComplexError(f"complexes: an entry must be a mapping or a qconf -sc line, "
                                   f"got {entry!r}")
            name = _check_name(entry.get("name"))
            if name in defined:
                raise ComplexError(f"complex {name!r} is defined twice")
            defined.add(name)
            cx = _build(entry, _BUILTINS.get(name))
            builtin = _BUILTINS.get(name)
            if builtin and cx.type != builtin.type and \
                    not (cx.type in STRINGS[:3] and builtin.type in STRINGS[:3]):
                raise ComplexError(f"complex {name!r}: the type of a built-in complex cannot change "
                                   f"({builtin.type} to {cx.type}); only STRING, CSTRING and "
                                   "RESTRING may be exchanged")
            complexes[name] = cx
        self._set(complexes)

    def _set(self, complexes: dict[str, Complex]) -> None:
        """Index by name and shortcut; no name or shortcut may be taken twice."""
        index: dict[str, Complex] = {}
        for cx in complexes.values():
            for key in dict.fromkeys((cx.name, cx.shortcut)):
                other = index.get(key)
                if other is not None:
                    raise ComplexError(f"complex {cx.name!r}: {key!r} is already the name or "
                                       f"shortcut of {other.name!r}; names and shortcuts must be "
                                       "unique")
                index[key] = cx
        self._complexes, self._index = complexes, index

    @classmethod
    def load(cls, path: str | Path) -> ComplexTable:
        """The table from a YAML file holding a list of entries (empty: built-ins only)."""
        with open(path, encoding="utf-8") as stream:
            try:
                entries = yaml.safe_load(stream)
            except yaml.YAMLError as error:
                raise ComplexError(f"{path}: not YAML: {str(error).splitlines()[0]}") from None
        try:
            return cls(entries or ())
        except ComplexError as error:
            raise ComplexError(f"{path}: {error}") from None

    def find(self, name: str) -> Complex:
        """The complex called ``name`` or having it as shortcut."""
        cx = self._index.get(name)
        if cx is None:
            raise ComplexError(f"unknown resource '{shown(name)}'")
        return cx

    def remove(self, name: str) -> ComplexTable:
        """A copy without ``name``; built-ins cannot be deleted (seed 002, 2)."""
        cx = self.find(name)
        if cx.name in _BUILTINS:
            raise ComplexError(f"complex {cx.name!r}: a built-in complex cannot be deleted")
        table = object.__new__(ComplexTable)
        table._set({key: value for key, value in self._complexes.items() if key != cx.name})
        return table

    def __iter__(self) -> Iterator[Complex]:
        return iter(self._complexes.values())


@dataclass(frozen=True)
class Request:
    """One ``-l name=value``: the complex and the typed value (a Pattern for RESTRING)."""

    complex: Complex
    value: float | str | Pattern
    text: str


def _request(cx: Complex, text: str) -> Request:
    """The request ``cx=text``, typed; consumables cannot ask for negative amounts.
    A HOST request with alternatives or wildcards (qrsub -l "h=host1|host2",
    seed 000 5.1.3.1.2) is a pattern too, as Son of Grid Engine 8.1.9 takes it."""
    wild = cx.type == "HOST" and any(c in text for c in "|*?[")
    value: float | str | Pattern = Pattern(text) if (cx.type == "RESTRING" or wild) and text \
        else parse_value(cx.type, text)
    if cx.consumable != "NO" and isinstance(value, float) and value < 0:
        raise ComplexError(f"a consumable request cannot be negative, got '{shown(text)}'")
    return Request(cx, value, text)


def parse_requests(table: ComplexTable, text: str) -> dict[str, Request]:
    """``-l`` resource requests ``name=value,...`` (name or shortcut; a BOOL alone
    means true) keyed by complex name; at most MAX_ITEMS of them, values
    printable and at most MAX_PATTERN characters."""
    if text.count(",") >= MAX_ITEMS:
        raise ComplexError(f"'{shown(text)}' has {text.count(',') + 1} resource requests; at most "
                           f"{MAX_ITEMS} are accepted")
    requests: dict[str, Request] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            raise ComplexError(f"empty resource request in '{shown(text)}'; accepted: "
                               "name=value,...")
        name, sep, value = (part.strip() for part in item.partition("="))
        cx = table.find(name)
        if not sep:
            if cx.type != "BOOL":
                raise ComplexError(f"resource {cx.name!r} needs a value: {name}=value")
            value = "true"
        if len(value) > 1 and value[0] == value[-1] == '"':
            value = value[1:-1]
        if len(value) > MAX_PATTERN or not value.isprintable():
            raise ComplexError(f"resource {cx.name!r}: invalid value '{shown(value)}'; accepted: "
                               f"printable text of at most {MAX_PATTERN} characters")
        if cx.name == "slots":
            raise ComplexError("resource 'slots' cannot be requested with -l; "
                               "use a parallel environment (-pe) instead")
        if cx.requestable == "NO":
            raise ComplexError(f"resource {cx.name!r} is not requestable")
        if cx.name in requests:
            raise ComplexError(f"resource {cx.name!r} is requested twice")
        try:
            requests[cx.name] = _request(cx, value)
        except ComplexError as error:
            raise ComplexError(f"resource {cx.name!r}: {error}") from None
    return requests
