"""plus_reserve: make an advance reservation of nodes."""

from __future__ import annotations

import sys

from overlay.cli import common, views
from overlay.language.request import RequestError, request_wire, window_end
from overlay.language.timespec import format_ctime
from overlay.wire.protocol import EXIT_USAGE


def parser() -> common.Parser:
    p = common.Parser("plus_reserve", "Reserve nodes for a time window. Prints the new AR's id.")
    p.add_argument("-T", action="store_true", dest="transactional",
                   help="hold the reservation until plus_commit or plus_abort")
    p.add_argument("-s", metavar="startTime", type=common.time_arg("-s"), required=True,
                   help="start time")
    p.add_argument("-e", metavar="endTime", type=common.time_arg("-e"), help="end time")
    p.add_argument("-D", metavar="duration", type=common.duration_arg("-D"), help="duration")
    p.add_argument("-n", metavar="numNodes", type=common.count_arg("-n", "the number of nodes"),
                   required=True, help="number of nodes")
    p.add_argument("-U", metavar="users", type=common.names_arg("-U", groups=True),
                   help="users (and @groups) who may use the AR; you are always included")
    p.add_argument("-mem", metavar="memSize", type=common.memory_arg("-mem"),
                   help="minimum memory per node (MB, or with K/M/G suffix)")
    p.add_argument("-ncpu", metavar="cpuNum", type=common.count_arg("-ncpu", "the number of CPUs"),
                   help="minimum CPUs per node")
    p.add_argument("-arch", metavar="arch", type=common.pattern_arg("-arch"),
                   help="node architecture (wildcards allowed), e.g. lx-amd64")
    p.add_argument("-os", metavar="os", type=common.pattern_arg("-os"),
                   help="node operating system (wildcards allowed), e.g. linux")
    p.add_argument("-l", metavar="attr=value[,...]", type=common.attributes_arg("-l"),
                   help="node attributes that must match (wildcards allowed in values)")
    p.add_argument("-p", action="store_true", help="print the reserved nodes after the id")
    p.add_argument("-sn", metavar="slotNum", type=common.count_arg("-sn", "the number of slots"),
                   help="slots per node (default: every slot, so the nodes are not shared)")
    p.add_argument("-sgeq", metavar="qNames", type=common.names_arg("-sgeq"),
                   help="reserve only nodes of these queues")
    p.add_argument("-he", metavar="y|n", type=common.yes_no_arg("-he"),
                   help="hard error handling (as qrsub): while a reserved node is down or in error, "
                        "the AR runs no jobs at all; default n: it stays usable on the other nodes")
    p.add_argument("-m", metavar="b|e|a|n", type=common.mail_options_arg("-m"),
                   help="mail at the AR's begin (b), end (e), error state and recovery (a); n: none")
    p.add_argument("-M", metavar="user[@host],...", type=common.mail_list_arg("-M"),
                   help="mail these addresses (default: the owner)")
    p.add_argument("-N", metavar="name", type=common.ar_name_arg("-N"), help="AR name (as qrsub -N)")
    p.add_argument("-repair", metavar="none|before|always", type=common.repair_arg("-repair"),
                   help="replace a reserved node that goes down by a free one before the window "
                        "opens (before, the default), during it too (always), or never (none)")
    p.add_argument("--repeat", metavar="RRULE",
                   help="a recurring series: an RFC 5545 RRULE (e.g. FREQ=WEEKLY;BYDAY=MO,TU,WE,"
                        "TH,FR), its first occurrence at -s, in the site's zone; each "
                        "occurrence is an AR of its own")
    p.add_argument("--except", metavar="DATES", dest="exceptions",
                   help="with --repeat: dates YYYY-MM-DD or local starts YYYY-MM-DDTHH:MM "
                        "(comma-separated) whose occurrences are left out")
    common.add_notice_options(p)
    common.add_release_options(p)
    common.add_clear_notice_option(p)
    p.add_argument("--maint", action="store_true",
                   help="managers only: reserve the nodes for maintenance (busy or down nodes "
                        "too); by default only you run jobs in it")
    p.add_argument("--force", action="store_true",
                   help="with --maint: take nodes other ARs hold too, putting those ARs in W/E")
    common.add_output_options(p, "print the new AR as XML (qrstat schema)")
    return p


@common.command("plus_reserve")
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.force and not args.maint:
        common.fail("plus_reserve", "--force: only a maintenance AR (--maint) takes nodes "
                    "other ARs hold", EXIT_USAGE)
    try:
        end = window_end(args.s, args.e, args.D)
    except RequestError as exc:
        common.fail("plus_reserve", str(exc), EXIT_USAGE)
    request = request_wire(
        start=args.s, end=end, nodes=args.n, users=args.U or (), memory_mb=args.mem,
        ncpus=args.ncpu, arch=args.arch, os=args.os, attributes=args.l or (),
        slots_per_node=args.sn, queues=args.sgeq or (), name=args.N or "",
        hard_error=bool(args.he), mail_options=args.m or "", mail_list=args.M or (),
        **({"repair": args.repair} if args.repair else {}), **common.given_leads(args),
        **({"maint": True} if args.maint else {}), **common.given_release(args))
    if args.exceptions is not None and args.repeat is None:
        common.fail("plus_reserve", "--except: it leaves out occurrences of a series; give "
                    "--repeat too", EXIT_USAGE)
    series = {} if args.repeat is None else {
        "repeat": args.repeat,
        "except": [item for item in (args.exceptions or "").split(",") if item.strip()]}
    view = common.call("plus_reserve", "reserve",
                       {**request, "transactional": args.transactional,
                        **({"force": True} if args.force else {}), **series})
    if args.x:
        print(views.status_xml([view]))
    elif args.json:
        common.print_json(view)
    else:
        if view["pending"]:
            print(f"Your advance reservation {view['id']} is pending: run plus_commit -r "
                  f"{view['id']} or plus_abort -r {view['id']} before "
                  f"{format_ctime(view['pending']['expires'])}")
        elif view.get("approval"):
            print(f"Your advance reservation {view['id']} awaits a manager's approval "
                  f"({view['approval']['reason']}); it lapses unless approved before "
                  f"{format_ctime(view['approval']['due'])}")
        elif view.get("series_made"):
            print(views.series_granted(view["series_made"]))
        else:
            print(f"Your advance reservation {view['id']} has been granted")
        if args.p:
            print("reserved nodes: " + ",".join(a["node"] for a in view["allocations"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
