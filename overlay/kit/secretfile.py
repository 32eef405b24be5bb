"""Files holding a secret (a site's token, a ResKey, the daemon's signing
keys) are refused when others may read or change them, as ssh refuses such
a private key: a secret others can read is no longer one, and one they can
change is not its holder's. Standard library only: the thin clients use it."""

from __future__ import annotations

import os

from overlay.language.limits import shown


class OpenToOthers(ValueError):
    """A secret's file whose mode lets others read or change it."""


def check_private(descriptor: int, path: str, what: str) -> None:
    """Raise OpenToOthers unless the open file's owner alone may read or
    write it (no group or other bits, as ssh asks of a private key)."""
    mode = os.fstat(descriptor).st_mode & 0o777
    if mode & 0o077:
        raise OpenToOthers(f"the {what} is open to others (mode {mode:04o}); like ssh with a "
                           f"private key, it is used only when its owner alone may read it: "
                           f"chmod 600 {shown(path)}")
