"""What every command shares: option types with one-line errors, the call
to plus_scheduler, and how failures are reported."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from overlay import protocol
from overlay.request import (RequestError, parse_ar_id, parse_attribute_list,
                             parse_job_references, parse_mail_list, parse_mail_options,
                             parse_memory_mb, parse_name, parse_name_list, parse_positive_int,
                             parse_yes_no)

if TYPE_CHECKING:
    from typing import Any, Callable, NoReturn
from overlay.timespec import DURATION_FORMS, TIME_FORMS, TimeSpecError, parse_duration, parse_time

EXIT_STATUS_HELP = ("exit status: 0 done, 1 refused by plus_scheduler, 2 bad command line, "
                    "3 plus_scheduler unreachable, 25 max_advance_reservations reached")


class Parser(argparse.ArgumentParser):
    """argparse with PluS's single-dash long options and one-line errors."""

    def __init__(self, prog: str, description: str, add_help: bool = True) -> None:
        super().__init__(prog=prog, description=description, allow_abbrev=False, add_help=add_help,
                         epilog=f"Times: {TIME_FORMS}. Durations: {DURATION_FORMS}. "
                                f"{EXIT_STATUS_HELP}. The daemon is found through PLUS_CONF "
                                f"(default {protocol.DEFAULT_CONF}).")
        self.help_option = "-h" if add_help else "-help"

    def error(self, message: str) -> NoReturn:
        self.exit(protocol.EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} "
                                       f"{self.help_option})\n")


def _typed(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type whose errors are the converter's own message."""
    def parse(text: str) -> Any:
        try:
            return convert(text)
        except (TimeSpecError, RequestError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    parse.__name__ = convert.__name__
    return parse


time_arg = _typed(parse_time)
duration_arg = _typed(parse_duration)
memory_arg = _typed(parse_memory_mb)
attributes_arg = _typed(parse_attribute_list)
ar_id_arg = _typed(parse_ar_id)
mail_options_arg = _typed(parse_mail_options)
mail_list_arg = _typed(parse_mail_list)


def yes_no_arg(option: str) -> Callable[[str], bool]:
    return _typed(lambda text: parse_yes_no(text, option))


def count_arg(option: str, what: str) -> Callable[[str], int]:
    return _typed(lambda text: parse_positive_int(text, option, what))


def name_arg(option: str) -> Callable[[str], str]:
    return _typed(lambda text: parse_name(text, option))


def names_arg(option: str, groups: bool = False) -> Callable[[str], tuple[str, ...]]:
    return _typed(lambda text: parse_name_list(text, option, groups))


def users_arg(option: str) -> Callable[[str], tuple[str, ...]]:
    """User names, or '*' for everyone."""
    names = names_arg(option)
    return lambda text: ("*",) if text.strip() == "*" else names(text)


def job_references_arg(option: str) -> Callable[[str], tuple[str, ...]]:
    """Job ids or names (wildcards allowed), comma-separated."""
    return _typed(lambda text: parse_job_references(text, option))


def fail(prog: str, message: str, status: int) -> NoReturn:
    print(f"{prog}: {message}", file=sys.stderr)
    sys.exit(status)


def call(prog: str, op: str, args: dict,
         on_refusal: Callable[[str, int], NoReturn] | None = None) -> Any:
    """Ask plus_scheduler; on refusal print its reason and exit with its
    status, or hand both to ``on_refusal``."""
    conf = protocol.conf_path()
    try:
        path = protocol.client_socket_path(conf)
    except OSError as exc:
        fail(prog, f"cannot read the configuration {conf} ({exc.strerror}); "
                   "set PLUS_CONF to plus_scheduler's configuration file", protocol.EXIT_UNREACHABLE)
    try:
        reply = protocol.call(path, op, {k: v for k, v in args.items() if v is not None})
    except protocol.ProtocolError as exc:
        fail(prog, str(exc), protocol.EXIT_UNREACHABLE)
    if not reply.get("ok"):
        message = str(reply.get("error", "refused"))
        status = int(reply.get("status", protocol.EXIT_REFUSED))
        if on_refusal is not None:
            on_refusal(message, status)
        fail(prog, message, status)
    return reply.get("data")


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, sort_keys=True))


def add_output_options(parser: Parser, xml_help: str) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-x", action="store_true", help=xml_help)
    group.add_argument("--json", action="store_true", help="print JSON, for scripts")
