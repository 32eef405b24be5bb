"""The thin clients' option parser: the part of argparse they use, and
argparse's behaviour for it, without argparse's cost at start.

argparse imports re, gettext and their dependencies: about 5 ms of a
command that otherwise starts in 8 ms (qrstat answers in 6). The commands
use options with one value or none, an optional value (``nargs="?"`` with a
``const``), repeated options collecting their values (``action="append"``),
trailing positionals (``*`` or ``+``), required options,
mutually exclusive pairs and a help option; that is all this parser does.

Words are read as argparse reads them: ``-opt value``, ``-opt=value``, a
one-letter option's value glued on (``-n4``), one-letter flags together
(``-Tp``), ``--`` before positionals,
and a word starting with '-' (other than a negative number) is an option,
never a value. Help is formatted only when asked for.
"""

from __future__ import annotations

import sys

from overlay.language.limits import shown
from overlay.wire.protocol import EXIT_USAGE

TYPE_CHECKING = False       # typing costs a command 3 ms to import
if TYPE_CHECKING:
    from typing import Any, Callable, NoReturn

class OptionError(ValueError):
    """A value an option's type refused; its text is the whole message
    (it names the option and the accepted forms)."""


class Namespace:
    """The parsed options, one attribute per destination."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)

    def __repr__(self) -> str:
        return f"Namespace({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


class Option:
    """One option or positional, as add_argument declared it."""

    __slots__ = ("option_strings", "dest", "action", "nargs", "const", "default", "type",
                 "metavar", "required", "help", "group")

    def __init__(self, names: tuple[str, ...], action: str | None, dest: str | None,
                 nargs: str | None, const: Any, default: Any, type: Callable[[str], Any] | None,
                 metavar: str | None, required: bool, help: str | None, group: int | None) -> None:
        self.option_strings = [n for n in names if n.startswith("-")]
        positional = not self.option_strings
        self.dest = dest or (names[0] if positional else
                             max(self.option_strings, key=len).lstrip("-").replace("-", "_"))
        self.action = action
        self.nargs = nargs
        self.const = True if action == "store_true" else const
        self.default = (False if action == "store_true" and default is None else
                        [] if positional and nargs == "*" and default is None else default)
        self.type = type
        self.metavar = metavar
        self.required = required or positional and nargs in (None, "+")
        self.help = help
        self.group = group

    @property
    def name(self) -> str:
        """How messages name it: its option strings, or its metavar."""
        return "/".join(self.option_strings) or self.metavar or self.dest

    @property
    def takes_value(self) -> bool:
        return self.action in (None, "append")


class _ExclusiveGroup:
    """Options of which at most one may be given."""

    def __init__(self, parser: Parser, number: int) -> None:
        self.parser, self.number = parser, number

    def add_argument(self, *names: str, **settings: Any) -> Option:
        return self.parser.add_argument(*names, _group=self.number, **settings)


class Parser:
    """add_argument, add_mutually_exclusive_group and parse_args as in argparse;
    errors are one line, ``prog: message (see prog -h)``, exit status 2."""

    def __init__(self, prog: str, description: str, add_help: bool = True,
                 epilog: str = "") -> None:
        self.prog, self.description, self.epilog = prog, description, epilog
        self.help_option = "-h" if add_help else "-help"
        self._options: list[Option] = []
        self._named: dict[str, Option] = {}
        self._groups = 0
        if add_help:
            self.add_argument("-h", "--help", action="help", help="show this help message and exit")

    def add_argument(self, *names: str, action: str | None = None, dest: str | None = None,
                     nargs: str | None = None, const: Any = None, default: Any = None,
                     type: Callable[[str], Any] | None = None, metavar: str | None = None,
                     required: bool = False, help: str | None = None,
                     _group: int | None = None) -> Option:
        option = Option(names, action, dest, nargs, const, default, type, metavar, required, help,
                        _group)
        self._options.append(option)
        self._named.update(dict.fromkeys(option.option_strings, option))
        return option

    def add_mutually_exclusive_group(self) -> _ExclusiveGroup:
        self._groups += 1
        return _ExclusiveGroup(self, self._groups)

    def options(self) -> list[Option]:
        """Every option and positional, in the order they were added."""
        return list(self._options)

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: {message} (see {self.prog} {self.help_option})\n")
        sys.exit(EXIT_USAGE)

    def parse_args(self, args: list[str] | None = None) -> Namespace:
        words = sys.argv[1:] if args is None else list(args)
        namespace = Namespace(**{o.dest: list(o.default or ()) if o.action == "append" else o.default
                                 for o in self._options if o.action != "help"})
        given: dict[int, Option] = {}
        seen: set[str] = set()
        positionals: list[str] = []
        index, options_end = 0, False
        while index < len(words):
            word = words[index]
            index += 1
            if options_end or not _is_option_word(word):
                positionals.append(word)
                continue
            if word == "--" and self._positionals():
                options_end = True
                continue
            option, glued = self._find(word)
            if option is None:
                flags = self._flags(word)
                for flag in flags:
                    self._check_exclusive(flag, given)
                    seen.add(flag.dest)
                    setattr(namespace, flag.dest, flag.const)
                if not flags:
                    self.error(f"unrecognized arguments: {shown(word)}")
                continue
            self._check_exclusive(option, given)
            seen.add(option.dest)
            if option.action == "help":
                sys.stdout.write(self.format_help())
                sys.exit(0)
            if not option.takes_value:
                if glued is not None:
                    self.error(f"argument {option.name}: ignored explicit argument '{shown(glued)}'")
                setattr(namespace, option.dest, option.const)
                continue
            if glued is None and (index == len(words) or _is_option_word(words[index])):
                if option.nargs == "?":
                    setattr(namespace, option.dest, option.const)
                    continue
                self.error(f"argument {option.name}: expected one argument")
            if glued is None:
                glued, index = words[index], index + 1
            value = self._convert(option, glued)
            if option.action == "append":
                value = [*getattr(namespace, option.dest), value]
            setattr(namespace, option.dest, value)
        self._place(positionals, namespace, seen)
        missing = [o.name for o in self._options if o.required and o.dest not in seen]
        if missing:
            self.error(f"the following arguments are required: {', '.join(missing)}")
        return namespace

    def _positionals(self) -> list[Option]:
        return [o for o in self._options if not o.option_strings]

    def _find(self, word: str) -> tuple[Option | None, str | None]:
        """The option a word names, and a value given in the same word."""
        option = self._named.get(word)
        if option is not None:
            return option, None
        name, equals, value = word.partition("=")
        if equals and name in self._named:
            return self._named[name], value
        short = self._named.get(word[:2])
        if word[1] != "-" and short is not None and short.takes_value:
            return short, word[2:]
        return None, None

    def _flags(self, word: str) -> list[Option]:
        """One-letter flags written together (-Tp), or none if that is not what ``word`` is."""
        flags = [self._named.get(f"-{letter}") for letter in word[1:]]
        if word[1] == "-" or not all(f is not None and f.action == "store_true" for f in flags):
            return []
        return flags

    def _check_exclusive(self, option: Option, given: dict[int, Option]) -> None:
        if option.group is None:
            return
        other = given.setdefault(option.group, option)
        if other is not option:
            self.error(f"argument {option.name}: not allowed with argument {other.name}")

    def _convert(self, option: Option, text: str) -> Any:
        if option.type is None:
            return text
        try:
            return option.type(text)
        except OptionError as exc:
            self.error(str(exc))
        except ValueError:
            self.error(f"argument {option.name}: invalid value '{shown(text)}'")

    def _place(self, words: list[str], namespace: Namespace, seen: set[str]) -> None:
        """Hand the positional words to the positionals, in order."""
        for option in self._positionals():
            if option.nargs in ("*", "+"):
                taken, words = words, []
            else:
                taken, words = words[:1], words[1:]
            if not taken:
                continue
            values = [self._convert(option, word) for word in taken]
            setattr(namespace, option.dest, values if option.nargs in ("*", "+") else values[0])
            seen.add(option.dest)
        if words:
            self.error(f"unrecognized arguments: {shown(' '.join(words))}")

    def format_help(self) -> str:
        """Usage, description, the options and the epilog, as argparse lays them out."""
        import textwrap  # only for help: it imports re
        width = 79
        lines = [f"usage: {self.prog}"]
        for part in map(_usage_part, self._options):     # a part is never split
            if len(lines[-1]) + 1 + len(part) > width:
                lines.append(" " * 6)
            lines[-1] += " " + part
        lines += ["", textwrap.fill(self.description, width), "", "options:"]
        for option in self._options:
            label = "  " + ", ".join([f"{n} {_value_part(option)}" if option.takes_value else n
                                      for n in option.option_strings] or [_value_part(option)])
            text = textwrap.wrap(option.help or "", width - 24) or [""]
            if len(label) > 22:
                lines.append(label)
            else:
                lines.append(f"{label:<24}{text.pop(0)}")
            lines.extend(" " * 24 + line for line in text)
        if self.epilog:
            lines += ["", textwrap.fill(self.epilog, width)]
        return "\n".join(lines) + "\n"


def _is_option_word(word: str) -> bool:
    """A word that names an option: it starts with '-' and is not '-' alone
    or a negative number (argparse's rule when no option looks like one)."""
    if len(word) < 2 or word[0] != "-":
        return False
    number = word[1:].replace(".", "", 1)
    return not (number.isascii() and number.isdigit())


def _value_part(option: Option) -> str:
    """How usage and help write an option's value: VALUE, [VALUE], VALUE ..."""
    value = option.metavar or option.dest.upper()
    return {"?": f"[{value}]", "*": f"[{value} ...]", "+": f"{value} [{value} ...]"}.get(
        option.nargs, value)


def _usage_part(option: Option) -> str:
    if not option.option_strings:
        return _value_part(option)
    name = option.option_strings[0]
    text = f"{name} {_value_part(option)}" if option.takes_value else name
    return text if option.required else f"[{text}]"
