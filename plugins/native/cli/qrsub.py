"""plus_qrsub: Grid Engine's qrsub on the native backend (seed 000 5.1.3.1,
Son of Grid Engine 8.1.9's qrsub(1)): an AR of slots, PEs and resources.

Options come from the site's ``sge_ar_request`` beside plus_scheduler's
configuration, then ``~/.sge_ar_request``, then the command line; an option
given later replaces the earlier one. Every refusal is one line and exit
status 1, as qrsub's; 25 when max_advance_reservations is reached.
"""

from __future__ import annotations

import sys

from overlay.api.commands import (
    OptionError,
    RequestError,
    common,
    parse_alloc_rule,
    parse_attribute_list,
    parse_name,
    parse_pe_range,
    request_wire,
    shown,
    window_end,
)
from overlay_native.cli import sgefiles

PROG = "plus_qrsub"
EXIT_ERROR = sgefiles.EXIT_ERROR
DEFAULTS_FILE = "sge_ar_request"
TWO_WORDS = ("-pe", "-alloc")
"""Options whose value is two words (a name or rule, and a slot range)."""


def _two_words(option: str, parse_first) -> object:
    def parse(text: str) -> tuple[str, tuple[tuple[int, int], ...]]:
        first, _, second = text.partition(" ")
        try:
            if not second:
                raise RequestError(f"{option}: expected two words, {option} "
                                   f"{'pe_name' if option == '-pe' else 'allocation_rule'} "
                                   "slot_range (e.g. 4 or 2-8)")
            return parse_first(first), parse_pe_range(second, option)
        except RequestError as exc:
            raise OptionError(str(exc)) from None
    return parse


def _resources(text: str) -> tuple[tuple[str, str], ...]:
    """-l name=value,...; a BOOL alone (-l gpu) means true, as for qsub."""
    items = ",".join(item if "=" in item else f"{item.strip()}=true" for item in text.split(","))
    try:
        return parse_attribute_list(items, "-l")
    except RequestError as exc:
        raise OptionError(str(exc)) from None


def _verify_mode(text: str) -> str:
    if text not in ("e", "v"):
        raise OptionError(f"-w: invalid validation level '{shown(text)}': accepted are e "
                          "(error: refuse what cannot be granted, the default) and v (verify "
                          "only: report, reserve nothing)")
    return text


def parser() -> common.Parser:
    p = sgefiles.Parser(PROG, "Submit an advance reservation of slots (Grid Engine's qrsub).")
    p.add_argument("-help", action="help", help="print this help")
    p.add_argument("-a", metavar="date_time", type=common.time_arg("-a"),
                   help="start time, [[CC]YY]MMDDhhmm[.SS] (default: now)")
    p.add_argument("-e", metavar="date_time", type=common.time_arg("-e"), help="end time")
    p.add_argument("-d", metavar="time", type=common.duration_arg("-d"),
                   help="duration, h:m:s or seconds")
    p.add_argument("-A", metavar="account_string", type=common.account_arg(),
        help="account string for the accounting records (default sge)")
    p.add_argument("-ckpt", metavar="ckpt_name", type=common.name_arg("-ckpt"),
                   help="reserve only queues offering this checkpointing environment")
    p.add_argument("-he", metavar="y|n", type=common.yes_no_arg("-he"),
                   help="hard error handling: no AR jobs run while the AR is in error")
    p.add_argument("-l", metavar="resource=value,...", action="append", type=_resources,
                   help="resources each reserved slot must offer; consumables are reserved")
    p.add_argument("-m", metavar="b|e|a|n", type=common.mail_options_arg("-m"),
                   help="mail at begin (b), end (e), error state (a), or never (n)")
    p.add_argument("-M", metavar="user[@host],...", action="append",
                   type=common.mail_list_arg("-M"), help="mail these addresses")
    p.add_argument("-masterq", metavar="wc_queue_list", action="append",
                   type=common.queue_list_arg("-masterq"),
                   help="queues for the master task of a parallel AR (with -pe)")
    p.add_argument("-now", metavar="y|n", type=common.yes_no_arg("-now"),
                   help="y: only queues of type INTERACTIVE")
    p.add_argument("-N", metavar="name", type=common.ar_name_arg("-N"), help="the AR's name")
    p.add_argument("-w", metavar="e|v", type=_verify_mode,
                   help="e: refuse what cannot be granted (default); v: only verify")
    p.add_argument("-pe", metavar="pe_name slot_range", type=_two_words(
        "-pe", lambda text: parse_name(text, "-pe") if "*" not in text else text),
        help="parallel environment and slot range")
    p.add_argument("-alloc", metavar="allocation_rule slot_range",
                   type=_two_words("-alloc", parse_alloc_rule),
                   help="slots by an allocation rule ($pe_slots, $fill_up, $round_robin or N "
                        "per host) without a parallel environment")
    p.add_argument("-q", metavar="wc_queue_list", action="append",
                   type=common.queue_list_arg("-q"), help="queues that may be reserved")
    p.add_argument("-u", metavar="wc_user_list", action="append",
                   type=common.names_arg("-u", groups=True),
                   help="users and @access_lists (the cluster's userlists) who may use the "
                        "AR; you always may")
    p.add_argument("--json", action="store_true", help="print the AR as JSON, for scripts")
    return p


def _joined(words: list[str]) -> list[str]:
    """-pe name range and -alloc rule range as one word each, for the parser."""
    out, index = [], 0
    while index < len(words):
        word = words[index]
        out.append(word)
        index += 1
        if word in TWO_WORDS and index < len(words):
            out.append(" ".join(words[index:index + 2]))
            index += 2
    return out


def parse(argv: list[str] | None) -> object:
    """The options of the defaults files and the command line, a later
    source's option replacing an earlier one's."""
    command_line = sys.argv[1:] if argv is None else list(argv)
    return sgefiles.merged(parser(), PROG, [
        (where, _joined(words)) for where, words in
        sgefiles.defaults(DEFAULTS_FILE, PROG) + [("", command_line)]])


def _flat(lists: list) -> tuple:
    return tuple(dict.fromkeys(item for group in lists for item in group))


def _verification(reply: dict, parallel: bool) -> int:
    """qrsub -w v's lines and status, as 8.1.9 prints them on stdout."""
    if not reply["verified"]:
        print("\n".join(reply["reasons"] + ["verification: no suitable queues"]))
        return EXIT_ERROR
    if parallel:
        slots = sum(a["slots"] for a in reply["allocations"])
        print(f"verification: found possible assignment with {slots} slots")
    else:
        print("verification: found suitable queue(s)")
    return 0


@common.command(PROG)
def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.e is None and args.d is None:
        common.fail(PROG, "missing value for end time or duration: give -e date_time or -d time",
                    EXIT_ERROR)
    if args.pe and args.alloc:
        common.fail(PROG, "-pe and -alloc: give one or the other", EXIT_ERROR)
    import time
    start = args.a if args.a is not None else int(time.time())
    try:
        end = window_end(start, args.e, args.d, "-d")
    except RequestError as exc:
        common.fail(PROG, str(exc), EXIT_ERROR)
    pe, rule = args.pe or ("", ()), args.alloc or ("", ())
    request = request_wire(
        start=start, end=end, nodes=0, users=_flat(args.u), attributes=_flat(args.l),
        queues=_flat(args.q), name=args.N or "", hard_error=bool(args.he),
        mail_options=args.m or "", mail_list=_flat(args.M), pe=pe[0],
        pe_range=pe[1] or rule[1], alloc_rule=rule[0], master_queues=_flat(args.masterq),
        ckpt=args.ckpt or "", interactive=bool(args.now), account=args.A or "")
    view = common.call(PROG, "reserve", {**request, "verify": args.w == "v",
                                         "start_now": args.a is None and args.e is None})
    if args.json:
        common.print_json(view)
        return 0 if view.get("verified", True) else EXIT_ERROR
    if args.w == "v":
        return _verification(view, bool(args.pe or args.alloc))
    if view.get("approval"):        # held by a policy: not granted (yet)
        print(f"Your advance reservation {view['id']} awaits a manager's approval "
              f"({view['approval']['reason']})")
    else:
        print(f"Your advance reservation {view['id']} has been granted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
