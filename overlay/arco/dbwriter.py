"""Fill ARCo from a reporting file, batch by batch, as Grid Engine's
dbwriter does: each batch reads at most ``batch_bytes`` of whole lines
from where the last one stopped, and writes their records and the new
position in one transaction, so a huge file never stalls a batch and a
killed dbwriter loses nothing.

A malformed line is skipped with one warning naming it, and never costs
the others: should the database still refuse a record that passed the
checks, the batch is written again record by record, each in a savepoint,
and only the refused ones are skipped.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import BinaryIO

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DataError, IntegrityError

from overlay.arco import position, schema
from overlay.arco.loader import Loader
from overlay.arco.records import Record, parse

log = logging.getLogger("plus.arco")

BATCH_BYTES = 4 * 2**20
REFUSED = (DataError, IntegrityError)
"""What the database says of a record it will not take (not of itself:
a lost connection ends the batch, to be tried again)."""


@dataclass
class Progress:
    """What a batch, or a drain, did."""

    records: int = 0        # written to the database
    skipped: int = 0        # malformed lines, each with its warning
    read: int = 0           # bytes consumed
    at_end: bool = True     # nothing more to read for now


@dataclass
class Chunk:
    """What a batch read."""

    lines: list[str]
    size: int               # the bytes they take
    at_end: bool            # the file ends there, for now
    long_line: bool = False     # one line, skipped, is all it holds


def _first_line(error: Exception) -> str:
    return str(getattr(error, "orig", None) or error).strip().splitlines()[0]


class DBWriter:
    """Reads one reporting file into one ARCo database."""

    def __init__(self, engine: Engine, path: str, batch_bytes: int = BATCH_BYTES) -> None:
        self.engine, self.path, self.batch_bytes = engine, os.path.abspath(path), batch_bytes
        schema.install(engine)
        with engine.begin() as connection:
            schema.lock(connection)
            position.create(connection)

    def drain(self) -> Progress:
        """Batches until the end of the file as it was when each began."""
        total = Progress()
        while True:
            done = self.batch()
            total.records += done.records
            total.skipped += done.skipped
            total.read += done.read
            if done.at_end:
                return total

    def batch(self) -> Progress:
        """One batch; OSError if the file cannot be read."""
        with self.engine.begin() as connection, open(self.path, "rb") as handle:
            schema.lock(connection)
            start = position.resume(connection, self.path, handle)
            chunk = self._read(handle, start)
            records, skipped = [], int(chunk.long_line)
            for number, line in enumerate(chunk.lines, start.line):
                try:
                    record = parse(number, line)
                except ValueError as error:
                    self._skip(number, str(error))
                    skipped += 1
                    continue
                if record is not None:
                    records.append(record)
            written = self._load(connection, records)
            position.save(connection, self.path, handle, position.Position(
                start.offset + chunk.size, start.line + len(chunk.lines) + chunk.long_line))
        return Progress(written, skipped + len(records) - written, chunk.size, chunk.at_end)

    def _read(self, handle: BinaryIO, start: position.Position) -> Chunk:
        """The whole lines of at most batch_bytes from ``start``; a line
        longer than that is skipped, one still being written left alone."""
        handle.seek(start.offset)
        data = handle.read(self.batch_bytes)
        end = data.rfind(b"\n") + 1
        if end:
            lines = data[:end].decode("utf-8", errors="replace").split("\n")[:-1]
            return Chunk(lines, end, len(data) < self.batch_bytes)
        if len(data) < self.batch_bytes:
            return Chunk([], 0, True)
        size = len(data)
        while (piece := handle.read(self.batch_bytes)) and b"\n" not in piece:
            size += len(piece)
        if not piece:
            return Chunk([], 0, True)
        self._skip(start.line, f"longer than {self.batch_bytes} bytes")
        return Chunk([], size + piece.index(b"\n") + 1, False, long_line=True)

    def _skip(self, line: int, why: str) -> None:
        log.warning("%s:%d: skipped: %s", self.path, line, why)

    def _load(self, connection: Connection, records: list[Record]) -> int:
        """Write the records; how many the database took."""
        loader = Loader(connection)
        try:
            with connection.begin_nested():
                for record in records:
                    loader.load(record)
            return len(records)
        except REFUSED:
            pass
        loader, written = Loader(connection), 0
        for record in records:
            try:
                with connection.begin_nested():
                    loader.load(record)
                written += 1
            except REFUSED as error:
                loader.forget()
                self._skip(record.line, f"the database refused the {record.kind} record: "
                                        f"{_first_line(error)}")
        return written
