"""What the backends' end-to-end tests of approval share: ARs a policy
holds are nowhere on the batch system until a manager approves them, and
one denied or lapsed never appears there."""

from __future__ import annotations

import time
from typing import Callable

APPROVAL_SETTINGS = """\
approval_timeout: 20
policies:
  big: {type: approval, max_nodes: 1}
"""
"""Requests of more than one node wait for a manager; unanswered, 20 s."""


def _wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.2)


def on_the_batch_system_only_once_approved(daemon, exists: Callable[[int], bool],
                                           timeout: float = 60) -> None:
    """``exists(ar_id)``: whether the AR's objects are on the batch system.
    Three held ARs, then a granted one (the control: once its objects are
    there, the enforcer has looked at the held ones too); one held AR
    approved appears, one denied and one lapsed never do."""
    def reserve(hours: int, nodes: int) -> dict:
        return daemon.reserve("plusu1", "-s", f"now+{hours}h", "-D", "1h", "-n", str(nodes))

    approved, denied, lapsing = reserve(2, 2), reserve(4, 2), reserve(6, 2)
    assert [ar["state"] for ar in (approved, denied, lapsing)] == ["h", "h", "h"]
    control = reserve(8, 1)
    _wait(lambda: exists(control["id"]), timeout, "the granted AR on the batch system")
    assert not any(exists(ar["id"]) for ar in (approved, denied, lapsing))
    daemon.ok("plusmgr", "plus_deny", str(denied["id"]), "-reason", "not now")
    daemon.ok("plusmgr", "plus_approve", str(approved["id"]))
    _wait(lambda: exists(approved["id"]), timeout, "the approved AR on the batch system")
    _wait(lambda: daemon.status("-r", str(lapsing["id"]))[0]["state"] == "d", 60,
          "the unanswered AR to lapse")
    later = reserve(10, 1)
    _wait(lambda: exists(later["id"]), timeout, "a later granted AR on the batch system")
    assert not exists(denied["id"]) and not exists(lapsing["id"])
    assert daemon.status("-r", str(lapsing["id"]))[0]["message"].startswith("lapsed: ")
