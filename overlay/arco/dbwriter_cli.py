"""plus_dbwriter: fill the ARCo database from the reporting file, as Grid
Engine's dbwriter does, continuously (every -interval seconds) or once.

Not a thin client: it keeps a database (SQLAlchemy) and reads the
daemon's configuration (YAML) for the reporting file's default path.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import NoReturn

from sqlalchemy import make_url
from sqlalchemy.exc import SQLAlchemyError

from overlay.arco.dbwriter import DBWriter
from overlay.cli import common, options
from overlay.daemon import config
from overlay.language import limits
from overlay.persistence.store import make_engine
from overlay.wire import protocol

PROG = "plus_dbwriter"
log = logging.getLogger("plus.arco")
URL_FORMS = "sqlite:///path/to/arco.db or postgresql+psycopg://user:password@host/database"


def _url(text: str) -> str:
    """A SQLAlchemy URL of SQLite or PostgreSQL."""
    try:
        backend = make_url(text).get_backend_name()
    except Exception:       # make_url's errors vary with what is wrong in the text
        backend = None
    if backend not in ("sqlite", "postgresql"):
        raise options.OptionError(f"-url: '{limits.shown(text)}' is not a database URL; "
                                  f"accepted: {URL_FORMS}")
    return text


def _file(text: str) -> str:
    if not text or "\0" in text:
        raise options.OptionError(f"-reporting: '{limits.shown(text)}' is not a file name; "
                                  "accepted: the path of a reporting file")
    return text


def parser() -> common.Parser:
    p = common.Parser(PROG, "Fill the ARCo database (seed 000, Appendix 2: sge_ar, "
                      "sge_ar_attribute, sge_ar_log, sge_ar_usage, sge_ar_resource_usage, "
                      "sge_job, sge_job_usage and their views) from the reporting file "
                      "plus_scheduler writes, as Grid Engine's dbwriter does. It remembers, in "
                      "the database, where it stopped, and reads a rotated or truncated file "
                      "from the start.")
    p.epilog = ("exit status: 0 done, 1 the database or the reporting file cannot be used, "
                f"2 bad command line. The reporting file's default is found through PLUS_CONF "
                f"(default {protocol.DEFAULT_CONF}).")
    p.add_argument("-url", metavar="URL", type=_url, required=True,
                   help=f"the ARCo database: {URL_FORMS}")
    p.add_argument("-reporting", metavar="FILE", type=_file,
                   help="the reporting file (default: plus_scheduler's, accounting_file in its "
                        "state_dir)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("-interval", metavar="SECONDS", default=60,
                       type=common.count_arg("-interval", "the interval in seconds"),
                       help="seconds between two readings of the file (default 60)")
    group.add_argument("-once", action="store_true",
                       help="read what the file holds now, then exit")
    return p


def default_reporting() -> str:
    """The reporting file of plus_scheduler's configuration."""
    try:
        return config.load(protocol.conf_path()).accounting_path
    except config.ConfigError as exc:
        common.fail(PROG, f"{exc}; give -reporting FILE, or set PLUS_CONF to plus_scheduler's "
                          "configuration file", protocol.EXIT_REFUSED)


def why(error: Exception) -> str:
    """An error in one line: the database driver's own first line, or the system's."""
    if isinstance(error, OSError) and error.strerror:
        where = f" {limits.shown(error.filename)}" if error.filename else ""
        return f"cannot read{where}: {error.strerror}"
    text = str(getattr(error, "orig", None) or error).strip()
    return limits.shown(text.splitlines()[0] if text else type(error).__name__)


def follow(writer: DBWriter, interval: int) -> NoReturn:
    """Read new records every ``interval`` seconds, for ever; a failure
    (the database down, the file missing) is said once, until it changes."""
    said = None
    while True:
        try:
            done = writer.drain()
            if done.records or done.skipped:
                log.info("%d records written, %d lines skipped", done.records, done.skipped)
            said = None
        except (OSError, SQLAlchemyError) as error:
            if why(error) != said:
                said = why(error)
                log.error("%s; trying again every %d s", said, interval)
        time.sleep(interval)


@common.command(PROG)
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(format=f"{PROG}: %(message)s", level=logging.INFO, stream=sys.stderr)
    path = args.reporting or default_reporting()
    shown_url = make_url(args.url).render_as_string(hide_password=True)
    try:
        writer = DBWriter(make_engine(args.url), path)
    except (SQLAlchemyError, ImportError, OSError) as error:
        common.fail(PROG, f"cannot use the database {limits.shown(shown_url)}: {why(error)}",
                    protocol.EXIT_REFUSED)
    try:
        if not args.once:
            follow(writer, args.interval)
        try:
            done = writer.drain()
        except (OSError, SQLAlchemyError) as error:
            common.fail(PROG, why(error), protocol.EXIT_REFUSED)
        print(f"{done.records} records written, {done.skipped} lines skipped")
        return 0
    finally:
        writer.engine.dispose()


if __name__ == "__main__":
    sys.exit(main())
