"""Where plus_dbwriter stopped in a reporting file, kept in the ARCo
database itself and saved in the transaction that wrote the records before
it: a restart continues there, never reading a line twice or losing one.

The file is known as overlay.reporting.filemark knows it: another file at the path
(rotated), one shorter than the offset (truncated), or one whose first
bytes changed (rewritten in place) is read from the start.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import BinaryIO

from sqlalchemy import Connection, text

from overlay.reporting import filemark

log = logging.getLogger("plus.arco")

TABLE = """
CREATE TABLE IF NOT EXISTS plus_dbwriter_position (
   path text,
   identity text,
   head_length integer,
   head text,
   byte_offset bigint,
   line bigint,
   PRIMARY KEY (path)
)"""
_LOAD = text("SELECT identity, head_length, head, byte_offset, line FROM plus_dbwriter_position "
             "WHERE path = :path")
_UPDATE = text("UPDATE plus_dbwriter_position SET identity = :identity, head_length = :length, "
               "head = :head, byte_offset = :offset, line = :line WHERE path = :path")
_INSERT = text("INSERT INTO plus_dbwriter_position (path, identity, head_length, head, "
               "byte_offset, line) VALUES (:path, :identity, :length, :head, :offset, :line)")


@dataclass(frozen=True)
class Position:
    """The next byte to read and the number of its line."""

    offset: int = 0
    line: int = 1


def create(connection: Connection) -> None:
    connection.exec_driver_sql(TABLE)


def resume(connection: Connection, path: str, handle: BinaryIO) -> Position:
    """Where to go on reading the file open in ``handle``."""
    row = connection.execute(_LOAD, {"path": path}).first()
    if row is None:
        return Position()
    identity, length, head, offset, line = row
    if filemark.still(handle, filemark.Mark(identity, length, head, offset)):
        return Position(offset, line)
    log.warning("%s is not the file read up to byte %d before (rotated, truncated or rewritten): "
                "reading it from the start", path, offset)
    return Position()


def save(connection: Connection, path: str, handle: BinaryIO, position: Position) -> None:
    known = filemark.mark(handle, position.offset)
    values = {"path": path, "identity": known.identity, "length": known.head_length,
              "head": known.head, "offset": position.offset, "line": position.line}
    if connection.execute(_UPDATE, values).rowcount == 0:
        connection.execute(_INSERT, values)
