"""plus_availnodes: how many nodes could be reserved for a window."""

from __future__ import annotations

import sys

from overlay.cli import common, views
from overlay.language.timespec import format_time


def parser() -> common.Parser:
    p = common.Parser("plus_availnodes", "Count the nodes free for reservation over a window "
                      "(whole nodes, alive, in the reservable queues), and name them.")
    p.add_argument("-s", metavar="startTime", type=common.time_arg("-s"), required=True,
                   help="start time")
    p.add_argument("-e", metavar="endTime", type=common.time_arg("-e"), required=True,
                   help="end time")
    common.add_output_options(p, "print XML")
    return p


@common.command("plus_availnodes")
def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.e <= args.s:
        p.error("-e: the end time must be later than the start time")
    data = common.call("plus_availnodes", "availnodes", {"start": args.s, "end": args.e})
    if args.x:
        print(views.availnodes_xml(data))
    elif args.json:
        common.print_json(data)
    else:
        print(f"{data['count']} nodes available from {format_time(data['start'])} "
              f"to {format_time(data['end'])}")
        for name in data["nodes"]:
            print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
