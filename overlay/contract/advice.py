"""What a message about an AR tells its users to do next, handed to the
reservation hooks (overlay.contract.hookspecs): how jobs are submitted
into it on this backend, and the site's zone for its times, so that a
plugin that mails or posts about ARs need not know the backend."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Advice:
    """The site's ``zone`` (plus.yaml's ``timezone``) and the way to the
    backend's submit line."""

    zone: str
    _submit: Callable[[], str | None]

    def submit_line(self) -> str | None:
        """How the AR's users submit a job into it (``Backend.submit_hint``,
        e.g. ``sbatch --reservation=R5 job.sh``), None if the backend has
        no word for it. It asks the backend, which a hook (run under the
        use cases' lock) must not: call it afterwards, as the mail plugin's
        sender thread does."""
        return self._submit()

    def local(self, epoch: int) -> str:
        """``epoch`` in the site's zone, as people read it:
        ``2026-11-24 09:00:00 CET``."""
        return dt.datetime.fromtimestamp(epoch, zoneinfo.ZoneInfo(self.zone)).strftime(
            "%Y-%m-%d %H:%M:%S %Z")

    def typed(self, epoch: int) -> str:
        """``epoch`` as a command's time option takes it, in the site's zone
        with its offset (``2026-11-24T09:00+01:00``): what a user pastes
        into ``plus_modify -e``."""
        stamp = dt.datetime.fromtimestamp(epoch, zoneinfo.ZoneInfo(self.zone))
        return stamp.isoformat(timespec="minutes")
