"""What Grid Engine's AR commands share: one-line usage errors with exit
status 1 (qrsub, qrstat and qrdel exit 1, where the PluS commands exit 2),
and the defaults files read before the command line: the site's beside
plus_scheduler's configuration (8.1.9: $SGE_ROOT/$SGE_CELL/common/NAME),
then the user's ~/.NAME."""

from __future__ import annotations

import os
import sys

from overlay.api.commands import common, protocol, shown

EXIT_ERROR = 1
"""qrsub's, qrstat's and qrdel's status for a bad option and a refusal."""
MAX_DEFAULTS = 64 * 1024


class Parser(common.Parser):
    """Refusals are one line and exit 1, as 8.1.9's commands' are."""

    def error(self, message: str):
        sys.stderr.write(f"{self.prog}: {message} (see {self.prog.split(':')[0]} -help)\n")
        sys.exit(EXIT_ERROR)


def defaults(name: str, prog: str) -> list[tuple[str, list[str]]]:
    """(where, words) of the site's and the user's defaults files ``name``
    (sge_ar_request, sge_qrstat) that exist; lines starting with # are
    comments."""
    found = []
    site = os.path.join(os.path.dirname(protocol.conf_path()), name)
    for path in (site, os.path.expanduser(f"~/.{name}")):
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read(MAX_DEFAULTS + 1)
        except FileNotFoundError:
            continue
        except common.READ_ERRORS as exc:
            common.fail(prog, f"cannot read the defaults file {shown(path)} "
                              f"({common.unreadable(exc)})", EXIT_ERROR)
        if len(text) > MAX_DEFAULTS:
            common.fail(prog, f"the defaults file {shown(path)} is longer than {MAX_DEFAULTS} "
                              "bytes", EXIT_ERROR)
        words = [w for line in text.splitlines() if not line.lstrip().startswith("#")
                 for w in line.split()]
        found.append((path, words))
    return found


def merged(parser: common.Parser, prog: str, sources: list[tuple[str, list[str]]]):
    """The options of each source in turn, a later source's option
    replacing an earlier one's (8.1.9: the command line wins)."""
    result = None
    for where, words in sources:
        parser.prog = f"{prog}: {where}" if where else prog
        args = parser.parse_args(words)
        if result is None:
            result = args
            continue
        for name, value in vars(args).items():
            if value not in (None, [], False):
                setattr(result, name, value)
    parser.prog = prog
    return result
