"""What every command shares: the entry wrapper (one line, never a
traceback), option types with one-line errors naming the option, the call
to plus_scheduler, and how failures are reported."""

from __future__ import annotations

import os
import sys

from overlay.cli import options
from overlay.kit.secretfile import check_private
from overlay.language import limits
from overlay.language.leads import MAX_LEADS, parse_leads
from overlay.language.release import IDLE_FORMS, parse_idle_release
from overlay.language.request import (
    RequestError,
    parse_account,
    parse_ar_id,
    parse_ar_references,
    parse_attribute_list,
    parse_int,
    parse_job_references,
    parse_mail_list,
    parse_mail_options,
    parse_memory_mb,
    parse_name,
    parse_name_list,
    parse_object_name,
    parse_pattern,
    parse_queue_list,
    parse_reason,
    parse_repair,
    parse_yes_no,
)
from overlay.language.timespec import (
    DURATION_FORMS,
    TIME_FORMS,
    TimeSpecError,
    parse_duration,
    parse_time,
)
from overlay.wire import protocol

TYPE_CHECKING = False       # typing costs a command 3 ms to import
if TYPE_CHECKING:
    from typing import Any, Callable, NoReturn

SIGINT, SIGPIPE = 2, 13
"""Their numbers on every Unix: the signal module's enums cost 2 ms at start."""

EXIT_STATUS_HELP = ("exit status: 0 done, 1 refused by plus_scheduler, 2 bad command line, "
                    "3 plus_scheduler unreachable, 25 max_advance_reservations reached")
READ_ERRORS = (OSError, UnicodeDecodeError)
"""What reading a text file a user names may raise: missing, unreadable, binary."""


def command(prog: str) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """Wrap a command's main so that users never see a traceback: a closed
    standard output (``plus_status | head``) ends it quietly, as it ends
    other Unix tools, an interrupt exits 130, and anything unexpected is
    one line."""
    def decorate(main: Callable[..., int]) -> Callable[..., int]:
        def run(argv: list[str] | None = None) -> int:
            try:
                try:
                    return main(argv)
                finally:
                    sys.stdout.flush()    # a closed pipe shows here, not at interpreter exit
            except BrokenPipeError:
                _leave_closed_pipe()
            except KeyboardInterrupt:
                sys.exit(128 + SIGINT)
            except Exception as exc:
                fail(prog, f"unexpected error ({type(exc).__name__}: {limits.shown(exc)})",
                     protocol.EXIT_REFUSED)
        return run
    return decorate


def launch(main: Callable[[], int]) -> NoReturn:
    """How the launchers (overlay/cli/launchers.py) run a command: as
    ``sys.exit(main())`` would, then out at once through os._exit. The
    interpreter's orderly shutdown, freeing every module, cost each command
    1.3 ms, and a command leaves nothing to clean up: its output is flushed
    (a closed pipe is met by the ``command`` wrapper's flush, before this
    one), and no command starts threads or registers atexit work."""
    try:
        status = main()
    except SystemExit as stop:
        status = stop.code
    if status is not None and not isinstance(status, int):
        print(status, file=sys.stderr)     # what sys.exit("text") prints
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status or 0)


def _leave_closed_pipe() -> NoReturn:
    """Python's idiom for SIGPIPE (the signal module's documentation): point
    standard output at /dev/null so the flush at exit finds no broken pipe,
    and exit with the status of a command that SIGPIPE ended."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(128 + SIGPIPE)


def unreadable(error: OSError | UnicodeDecodeError) -> str:
    """Why a file could not be read (one of READ_ERRORS), in a few words."""
    if isinstance(error, UnicodeDecodeError):
        return "not a text file (UTF-8)"
    return error.strerror or str(error)


class Parser(options.Parser):
    """The commands' parser: PluS's single-dash long options, one-line errors
    that quote a user's argument only shortened (overlay.language.limits.shown), and
    an epilog on the forms of times and the exit statuses."""

    def __init__(self, prog: str, description: str, add_help: bool = True) -> None:
        super().__init__(prog, description, add_help,
                         epilog=f"Times: {TIME_FORMS}. Durations: {DURATION_FORMS}. "
                                f"{EXIT_STATUS_HELP}. The daemon is found through PLUS_CONF "
                                f"(default {protocol.DEFAULT_CONF}).")

    def parse_args(self, args: list[str] | None = None) -> options.Namespace:
        """Refuse an argument longer than MAX_ARGUMENT before parsing."""
        args = sys.argv[1:] if args is None else list(args)
        for position, arg in enumerate(args, 1):
            if len(arg) > limits.MAX_ARGUMENT:
                self.error(f"argument {position} '{limits.shown(arg)}' is longer than "
                           f"{limits.MAX_ARGUMENT} characters")
        return super().parse_args(args)


def _typed(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """An option type whose errors are the converter's own message, which
    names the option and the accepted forms."""
    def parse(text: str) -> Any:
        try:
            return convert(text)
        except (TimeSpecError, RequestError) as exc:
            raise options.OptionError(str(exc)) from None
    return parse


def time_arg(option: str) -> Callable[[str], int]:
    return _typed(lambda text: parse_time(text, option=option))


def duration_arg(option: str) -> Callable[[str], int]:
    return _typed(lambda text: parse_duration(text, option))


def memory_arg(option: str) -> Callable[[str], int]:
    return _typed(lambda text: parse_memory_mb(text, option))


def attributes_arg(option: str) -> Callable[[str], tuple[tuple[str, str], ...]]:
    return _typed(lambda text: parse_attribute_list(text, option))


def ar_id_arg(option: str) -> Callable[[str], int]:
    return _typed(lambda text: parse_ar_id(text, option))


def mail_options_arg(option: str) -> Callable[[str], str]:
    return _typed(lambda text: parse_mail_options(text, option))


def mail_list_arg(option: str) -> Callable[[str], tuple[str, ...]]:
    return _typed(lambda text: parse_mail_list(text, option))


def repair_arg(option: str) -> Callable[[str], str]:
    return _typed(lambda text: parse_repair(text, option))


def reason_arg(option: str) -> Callable[[str], str]:
    return _typed(lambda text: parse_reason(text, option))


def yes_no_arg(option: str) -> Callable[[str], bool]:
    return _typed(lambda text: parse_yes_no(text, option))


def count_arg(option: str, what: str, least: int = 1) -> Callable[[str], int]:
    return _typed(lambda text: parse_int(text, option, what, least))


def name_arg(option: str) -> Callable[[str], str]:
    return _typed(lambda text: parse_name(text, option))


def ar_name_arg(option: str) -> Callable[[str], str]:
    """An AR's name (-N): a Grid Engine ar_name, as qrsub takes it."""
    return _typed(lambda text: parse_object_name(text, option, "AR name", digit_start=False))


def leads_arg(option: str) -> Callable[[str], tuple[int, ...]]:
    return _typed(lambda text: parse_leads(text, option))


def add_notice_options(parser: Parser) -> None:
    """--notify-start and --notify-end, as plus_reserve and plus_modify take them."""
    for moment in ("start", "end"):
        parser.add_argument(f"--notify-{moment}", metavar="LEAD[,LEAD]",
                            type=leads_arg(f"--notify-{moment}"), dest=f"notify_{moment}",
                            help=f"tell the AR's users (mail, event) this long before its "
                                 f"{moment}, e.g. 1h,10m (at most {MAX_LEADS}); none: never; "
                                 f"default: the site's")


def add_clear_notice_option(parser: Parser) -> None:
    """--clear-notice, as plus_reserve and plus_modify take it."""
    parser.add_argument("--clear-notice", metavar="LEAD[,LEAD]", dest="clear_notice",
                        type=leads_arg("--clear-notice"),
                        help="tell the owners of jobs still running on the AR's nodes past its "
                             "start this long before it (mail, event), e.g. 1h; none: never; "
                             "default: the site's")


def given_leads(args: options.Namespace) -> dict[str, list[int]]:
    """The notice leads the command line gave, as the request carries them."""
    return {name: list(getattr(args, name))
            for name in ("notify_start", "notify_end", "clear_notice")
            if getattr(args, name, None) is not None}


def add_release_options(parser: Parser) -> None:
    """--idle-release and --release-when-done, as plus_reserve and plus_modify take them."""
    parser.add_argument("--idle-release", metavar="SECS|none", dest="idle_release",
                        type=_typed(lambda text: parse_idle_release(text, "--idle-release")),
                        help=f"end the AR early, freeing its nodes, once its window is open "
                             f"and it has run no job this long ({IDLE_FORMS}); default: the "
                             f"site's idle_release")
    parser.add_argument("--release-when-done", metavar="y|n", nargs="?", const=True,
                        dest="release_when_done", type=yes_no_arg("--release-when-done"),
                        help="end the AR early once a job has run in it and none runs any more")


def given_release(args: options.Namespace) -> dict[str, object]:
    """The release options the command line gave, as the request carries them."""
    return {name: getattr(args, name) for name in ("idle_release", "release_when_done")
            if getattr(args, name) is not None}


def names_arg(option: str, groups: bool = False) -> Callable[[str], tuple[str, ...]]:
    return _typed(lambda text: parse_name_list(text, option, groups))


def pattern_arg(option: str) -> Callable[[str], str]:
    """A wildcard pattern or free-text value (-arch, -os, an account)."""
    return _typed(lambda text: parse_pattern(text, option))


def users_arg(option: str) -> Callable[[str], tuple[str, ...]]:
    """User names, or '*' for everyone."""
    names = names_arg(option)
    return lambda text: ("*",) if text.strip() == "*" else names(text)


def queue_list_arg(option: str) -> Callable[[str], tuple[str, ...]]:
    """wc_queue_list: queue, queue@host, queue@@hostgroup, @host, wildcards."""
    return _typed(lambda text: parse_queue_list(text, option))


def ar_references_arg(option: str) -> Callable[[str], tuple[str, ...]]:
    """AR ids, names or name patterns, comma-separated (qrstat -ar, qrdel)."""
    return _typed(lambda text: parse_ar_references(text, option))


def account_arg() -> Callable[[str], str]:
    """-A: an account string for the accounting records."""
    return _typed(parse_account)


def job_references_arg(option: str) -> Callable[[str], tuple[str, ...]]:
    """Job ids or names (wildcards allowed), comma-separated."""
    return _typed(lambda text: parse_job_references(text, option))


def fail(prog: str, message: str, status: int) -> NoReturn:
    print(f"{prog}: {message}", file=sys.stderr)
    sys.exit(status)


def call(prog: str, op: str, args: dict,
         on_refusal: Callable[[str, int], NoReturn] | None = None,
         acting_for: str | None = None) -> Any:
    """Ask plus_scheduler; on refusal print its reason and exit with its
    status, or hand both to ``on_refusal``. ``acting_for``: the UserID a
    manager asks for (seed 003's verbs)."""
    conf = protocol.conf_path()
    try:
        path = protocol.client_socket_path(conf)
    except READ_ERRORS as exc:
        fail(prog, f"cannot read the configuration {limits.shown(conf)} ({unreadable(exc)}); "
                   "set PLUS_CONF to plus_scheduler's configuration file", protocol.EXIT_UNREACHABLE)
    try:
        extra = {} if acting_for is None else {"as": acting_for}
        reply = protocol.call(path, op, {k: v for k, v in args.items() if v is not None}, **extra)
    except protocol.ProtocolError as exc:
        fail(prog, str(exc), protocol.EXIT_UNREACHABLE)
    if not reply.get("ok"):
        message = str(reply.get("error", "refused"))
        status = int(reply.get("status", protocol.EXIT_REFUSED))
        if on_refusal is not None:
            on_refusal(message, status)
        fail(prog, message, status)
    return reply.get("data")


def claim(prog: str, path: str, operation: str, payload: dict) -> dict:
    """A claim on the AR whose ResKey the file at ``path`` holds, signed
    with it (overlay.network.reskey): the arguments of the daemon's claim operation.
    A file others may read is refused, as ssh refuses such a private key."""
    from overlay.network import reskey  # only a claim pays for hmac and json
    try:
        with open(path, encoding="utf-8") as handle:
            check_private(handle.fileno(), path, "ResKey file")
            return reskey.make_claim(handle.read(4096), operation, payload)
    except OSError as exc:
        fail(prog, f"--reskey: cannot read {limits.shown(path)} ({exc.strerror})",
             protocol.EXIT_USAGE)
    except ValueError as exc:
        fail(prog, f"--reskey: {limits.shown(path)}: {exc}", protocol.EXIT_USAGE)


def print_json(data: Any) -> None:
    import json  # only for --json: it imports re
    print(json.dumps(data, indent=2, sort_keys=True))


def add_output_options(parser: Parser, xml_help: str) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-x", action="store_true", help=xml_help)
    group.add_argument("--json", action="store_true", help="print JSON, for scripts")
