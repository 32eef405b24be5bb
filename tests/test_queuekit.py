"""The kit for backends that keep a queue per AR, on a batch system of
words: the order of its hooks, the memo that spares commands, drift, the
ledger that outlives a crash, and the reconcile that drops what the
store lacks. Grid Engine's and TORQUE's tests check it on theirs."""

from __future__ import annotations

import json

from overlay.kit.queuekit import Ledger, QueueBackend
from overlay.language.model import Allocation, Request, Reservation, State

T0 = 1_800_000_000


class WordsBackend(QueueBackend):
    """A batch system that only notes what it is told."""

    name = "words"

    def __init__(self, ledger: Ledger) -> None:
        super().__init__(ledger)
        self.said: list[str] = []

    def nodes(self):
        return []

    def fingerprint(self, ar):
        return (tuple(ar.node_names), ar.end)

    def create(self, ar):
        self.said.append(f"create {ar.id} owned={self.ledger.owns(ar.id)}")

    def keep_others_off(self, ar, hosts):
        self.said.append(f"others off {','.join(hosts)} open={ar.id in self.ledger.active_ids()}")

    def open_queue(self, ar, shut):
        self.said.append(f"{'shut' if shut else 'open'} {ar.id}")

    def opened(self, ar, shut):
        self.said.append(f"opened {ar.id}")

    def give_back(self, ar):
        self.ledger.set_active(ar.id, None)
        self.said.append(f"give back {ar.id}")

    def remove(self, ar_id):
        self.ledger.set_active(ar_id, None)
        self.said.append(f"remove {ar_id}")

    def ar_of(self, queue):
        return int(queue[1:]) if queue.startswith("R") and queue[1:].isdigit() else None

    def window_granted(self, ar):
        self.said.append(f"window {ar.id}")

    def window_dropped(self, ar_id):
        self.said.append(f"no window {ar_id}")

    def reconciled(self, reservations):
        self.said.append(f"ahead {[ar.id for ar in self.windows_ahead(reservations)]}")


def reservation(ar_id: int, hosts=("n1",), state=State.WAITING, hard_error=False) -> Reservation:
    request = Request(start=T0, end=T0 + 3600, nodes=len(hosts), hard_error=hard_error)
    return Reservation(id=ar_id, owner="u", group="u", request=request, state=state,
                       submission_time=T0, allocations=[Allocation(h, 1) for h in hosts])


def backend(tmp_path) -> WordsBackend:
    return WordsBackend(Ledger(str(tmp_path / "ledger.json")))


def test_grant_claims_then_creates_once_per_fingerprint(tmp_path):
    kit = backend(tmp_path)
    ar = reservation(1)
    kit.prepare(ar)
    kit.prepare(ar)
    assert kit.said == ["create 1 owned=True", "window 1"]
    kit.modify(ar, reservation(1, ("n1", "n2")))
    assert kit.said[2:] == ["create 1 owned=True", "window 1"]


def test_the_window_opens_once_and_keeps_others_off_every_time(tmp_path):
    kit = backend(tmp_path)
    ar = reservation(2, ("n2", "n1"), state=State.RUNNING)
    kit.prepare(ar)
    kit.activate(ar)
    kit.activate(ar)
    assert kit.said[2:] == ["others off n1,n2 open=True", "open 2", "opened 2",
                            "others off n1,n2 open=True"]
    kit.activate(reservation(2, ("n2", "n1"), state=State.ERROR, hard_error=True))
    assert kit.said[-2:] == ["shut 2", "opened 2"]


def test_drift_makes_the_next_call_redo_it(tmp_path):
    kit = backend(tmp_path)
    ar = reservation(3, state=State.RUNNING)
    kit.prepare(ar)
    kit._applied.notice(3, usable=False)            # prepared and shut: as applied
    kit.prepare(ar)
    assert kit.said.count("create 3 owned=True") == 1
    kit._applied.notice(3, usable=True)             # started by hand before its window
    kit.prepare(ar)
    assert kit.said.count("create 3 owned=True") == 2
    kit.activate(ar)
    kit._applied.notice(3, usable=None)             # deleted by hand
    kit.activate(ar)
    assert kit.said.count("open 3") == 2


def test_cancel_gives_back_once_and_keeps_the_objects(tmp_path):
    kit = backend(tmp_path)
    ar = reservation(4, state=State.RUNNING)
    kit.prepare(ar)
    kit.activate(ar)
    kit.release(ar)
    kit.release(ar)
    assert kit.said[-2:] == ["give back 4", "no window 4"]
    assert kit.ledger.owns(4) and kit.ledger.active_ids() == set()
    kit.teardown(ar)
    kit.teardown(ar)
    assert kit.said[-2:] == ["remove 4", "no window 4"] and not kit.ledger.owns(4)


def test_after_a_crash_reconcile_drops_what_the_store_lacks_and_closes_what_it_closed(tmp_path):
    kit = backend(tmp_path)
    kept, gone, ended = (reservation(5, state=State.RUNNING), reservation(6),
                         reservation(7, state=State.RUNNING))
    for ar in (kept, gone, ended):
        kit.prepare(ar)
    kit.activate(kept)
    kit.activate(ended)
    ended.state = State.EXITED
    again = backend(tmp_path)                      # a restart: the ledger, no memo
    again.reconcile([kept, ended])
    assert again.said == ["remove 6", "no window 6", "ahead [5]"]
    assert again.ledger.active_ids() == {5}
    saved = json.loads((tmp_path / "ledger.json").read_text())
    assert saved == {"ars": [5, 7], "active": {"5": ["n1"]}}
    assert again.is_ar_queue("R5") and not again.is_ar_queue("R6") and not again.is_ar_queue(None)


def test_a_new_leader_reads_the_ledger_its_predecessor_wrote(tmp_path):
    """Daemons that may lead share the ledger: one that stood by reads it
    again when it leads, so it removes what the old leader made for an AR
    destroyed since, and applies the open one anew."""
    standby = backend(tmp_path)
    standby.stand_by()
    leader = backend(tmp_path)
    kept, gone = reservation(8, state=State.RUNNING), reservation(9, ("n2",), state=State.RUNNING)
    for ar in (kept, gone):
        leader.prepare(ar)
        leader.activate(ar)
    standby.reconcile([kept])                         # the leader died; 9 was destroyed meanwhile
    assert standby.said == ["remove 9", "no window 9", "ahead [8]"]
    assert standby.ledger.owned() == [8] and standby.ledger.active_ids() == {8}
    standby.activate(kept)
    assert standby.said[-3:] == ["others off n1 open=True", "open 8", "opened 8"]
