"""Whether a file is still the one read up to an offset, for readers that
follow a growing file (plus_dbwriter, the daemon's view of its reporting
file): the same identity (device and inode), at least as long, and the
same first bytes (a digest of up to HEAD of them, never beyond what was
read). Another file at the path (rotated), a shorter one (truncated), or
one whose first bytes changed (rewritten in place) is read from the start.
"""

from __future__ import annotations

import hashlib
import os
from typing import BinaryIO, NamedTuple

HEAD = 4096


class Mark(NamedTuple):
    identity: str
    head_length: int
    head: str
    offset: int


def identity(handle: BinaryIO) -> str:
    status = os.fstat(handle.fileno())
    return f"{status.st_dev}:{status.st_ino}"


def head(handle: BinaryIO, length: int) -> str:
    return hashlib.sha256(os.pread(handle.fileno(), length, 0)).hexdigest()


def mark(handle: BinaryIO, offset: int) -> Mark:
    """What to know the file by once it is read up to ``offset``."""
    length = min(offset, HEAD)
    return Mark(identity(handle), length, head(handle, length), offset)


def still(handle: BinaryIO, known: Mark) -> bool:
    """Whether the open file is the one ``known`` was taken of."""
    return (known.identity == identity(handle) and
            os.fstat(handle.fileno()).st_size >= known.offset and
            head(handle, known.head_length) == known.head)
