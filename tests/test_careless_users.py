"""What careless users (and hostile ones) meet in the core's answers: names
that cannot move another user's cursor, refusals that count what they
say, and nodes that run no jobs chosen last."""

from __future__ import annotations

import gc
import random
import tracemalloc
import xml.etree.ElementTree as ET

import pytest

from overlay.cli import views
from overlay.daemon.services.views import reservation_view
from overlay.language.model import Node, Request, ReservationError
from overlay.placement.eligible import node_satisfies
from test_manager import ALICE, T0, Env

HOSTILE_NAME = "x\x1b[2J\r\n    9 mallory    r\u2028"


def test_a_stored_control_character_is_printed_escaped(tmp_path):
    """An AR stored before names were checked (or by a hand-made client of
    an older daemon) prints escaped in the table, the detail view and XML."""
    env = Env(tmp_path)
    ar = env.reserve(nodes=1)
    ar.request = ar.request.with_changes(name=HOSTILE_NAME)
    view = reservation_view(ar, env.manager)
    table = views.table([[ar.id, ar.name, ar.owner + "\x07", "w", ar.start, ar.end, ""]])
    detail = views.detail(view)
    document = views.status_xml([view])
    for text in (table, detail, document):
        assert "\x1b" not in text and "\r" not in text and "\u2028" not in text and "\x07" not in text
    assert len(table.splitlines()) == 3
    assert "x\\x1b[2J\\r" in detail
    assert ET.fromstring(document.split("\n", 1)[1]).find("ar_summary/name").text.startswith("x\\x1b")


def test_a_busy_node_counts_as_matching_but_not_free(tmp_path, monkeypatch):
    env = Env(tmp_path)
    monkeypatch.setattr(env.backend, "blocked_nodes",
                        lambda request, inventory: {"n01": "host busy: job 7 of bob has no h_rt"})
    with pytest.raises(ReservationError) as refused:
        env.reserve(nodes=5)
    assert str(refused.value) == (
        "only 4 of the 5 requested nodes can be reserved for this window (5 nodes known, "
        "5 match the request, 4 free); host busy: job 7 of bob has no h_rt (1 nodes)")


EXEC_CLUSTER = """\
nodes:
  - {name: "arm[01-02]", slots: 4, memory: 8G, queues: [all.q], exec: none}
  - {name: "n[01-02]", slots: 4, memory: 16G, queues: [all.q], exec: local}
"""


def test_nodes_that_run_no_jobs_are_chosen_last_and_warned_of(tmp_path):
    env = Env(tmp_path, cluster=EXEC_CLUSTER)
    first = env.reserve(nodes=2)
    assert first.node_names == ["n01", "n02"]
    assert reservation_view(first, env.manager)["warnings"] == []
    second = env.reserve(nodes=1)
    assert second.node_names == ["arm01"]
    [warning] = reservation_view(second, env.manager)["warnings"]
    assert warning == ("arm01 runs no jobs (exec: none in the cluster file): jobs of this AR "
                       "cannot start there")
    assert f"warning:                    {warning}" in views.detail(
        reservation_view(second, env.manager))


def test_a_modify_keeps_its_nodes_before_preferring_ones_that_run_jobs(tmp_path):
    env = Env(tmp_path, cluster=EXEC_CLUSTER)
    env.reserve(nodes=2)
    held = env.reserve(nodes=1)
    env.manager.cancel(ALICE, 1, None)
    moved = env.manager.modify(ALICE, held.id, start=T0 + 7200, end=None, duration=None,
                               nodes=None, users=None)
    assert moved.node_names == ["arm01"]


def test_distinct_long_wildcards_are_not_kept_for_ever():
    """Refused requests with ever new -arch patterns used to fill fnmatch's
    cache of 32,768 compiled patterns (140 to 552 MB in the daemon)."""
    node = Node(name="n1", arch="lx-amd64", os="linux")
    noise = random.Random(11)
    tracemalloc.start()
    try:
        for number in range(2000):
            pattern = "*" + "".join(noise.choice("ab?x") for _ in range(240)) + f"*{number}"
            assert not node_satisfies(node, Request(start=0, end=1, nodes=1, arch=pattern))
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert kept < 3 * 2 ** 20, f"{kept / 2 ** 20:.1f} MiB kept"
