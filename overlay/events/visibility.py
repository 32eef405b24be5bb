"""Who sees an event: the AR's owner, the users its access list names (who
may run jobs in it), and managers; a webhook of a user's takes its owner's
own ARs, one of a manager's may take every AR's. A job's event names the
job's owner in its access list (overlay.events.catalog.job_event), so they
see it too."""

from __future__ import annotations

import json
from typing import Iterable

from overlay.events.catalog import ENDING_SOON
from overlay.kit.users import listed
from overlay.persistence.events import Event


def sees(event: Event, user: str, groups: Iterable[str], manager: bool) -> bool:
    """Whether ``user`` (a member of ``groups``) may see ``event``."""
    return manager or event.owner == user or listed(event.acl, user, groups)


def chosen(event: Event, types: Iterable[str], lead: int | None) -> bool:
    """Whether a subscriber that chose ``types`` (none: every type) and the
    ending-soon ``lead`` (none: no ending-soon events but the notices ARs
    ask for) takes ``event``."""
    types = tuple(types)
    if types and event.type not in types:
        return False
    if event.type == ENDING_SOON:
        told = json.loads(event.data)
        return told.get("notice", False) or lead is not None and told.get("lead") == lead
    return True
