"""Fair charging after an early release: the policies count what an AR
held until its release, not what it asked, and plus_account shows the
node-hours asked, used and released apart from those held."""

from __future__ import annotations

from overlay.cli.account import report
from overlay.contract.policy import context_for, used_part
from overlay.language.model import Allocation, Request, Reservation, State
from overlay.reporting.accounting import ACCT, collect

HOUR = 3600


def ar(state: State, finished: int | None, nodes: int = 2) -> Reservation:
    return Reservation(7, "plusu1", "plusgrp", Request(start=0, end=10 * HOUR, nodes=nodes),
                       state, 0, [Allocation(f"n{i}", 4) for i in range(nodes)],
                       finished_time=finished)


def test_a_released_ar_counts_until_its_release():
    released = ar(State.EXITED, 2 * HOUR)
    assert used_part(released).end == 2 * HOUR
    assert used_part(ar(State.EXITED, 10 * HOUR + 5)).end == 10 * HOUR     # ended at its end
    usage = context_for(3 * HOUR, (), [released]).usage("plusu1", 0, 10 * HOUR)
    assert usage.node_hours == 4.0                         # 2 nodes x 2 h held, not x 10 h asked


def test_plus_account_shows_asked_used_and_released_apart():
    lines = [
        "100:new_ar:100:7:plusu1\n",
        f"100:ar_attribute:100:100:7:nightly:sge:0:{10 * HOUR}:NONE:n1=4,n2=4\n",
        f"{2 * HOUR}:ar_acct:{2 * HOUR}:100:7:R7:n1:4\n",
        f"{2 * HOUR}:ar_acct:{2 * HOUR}:100:7:R7:n2:4\n",
        f"{2 * HOUR}:ar_log:{2 * HOUR}:100:7:x:TERMINATED:AR released, no job ran in it "
        "for 600 s (idle_release)\n"]
    acct = dict.fromkeys(ACCT, "0") | {"owner": "plusu1", "start_time": "60",
                                        "end_time": str(HOUR + 60), "arid": "7"}
    lines.append(f"{HOUR}:acct:" + ":".join(acct[name] for name in ACCT) + "\n")
    jobs: list = []
    ars = collect(lines, jobs=jobs)
    table = report(ars, 0, 20 * HOUR, None, None, False, False, jobs)
    header, _, total = table.splitlines()
    assert header.split()[-3:] == ["asked-nh", "used-nh", "released-nh"]
    # TOTAL, 1 AR, 2 h held on 2 nodes (4 node-hours, 16 slot-hours charged); 20 asked,
    # the job's 1 used, 16 released
    assert total.split() == ["TOTAL", "1", "2:0:0", "4.00", "16.00", "20.00", "1.00", "16.00"]
