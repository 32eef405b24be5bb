"""A listing's rows kept encoded per AR copy (issue 34: other users'
latency while clients loop on listings): the reply is byte for byte what
encoding the rows afresh gives, follows every change, and forgets ARs gone."""

from __future__ import annotations

import json
import socket
from dataclasses import replace

from overlay.daemon.services.views import SummaryCache, summary_rows
from overlay.language.model import Request, State
from overlay.wire import fastjson, protocol
from test_store import new_ar


def _ars(count: int) -> dict:
    made = {}
    for ar_id in range(1, count + 1):
        request = Request(start=1000 * ar_id, end=1000 * ar_id + 500, nodes=2, name=f"ar{ar_id}")
        made[ar_id] = replace(new_ar(allocations=(("n1", 1), (f"n{ar_id}", 2)), request=request,
                                     message=f"note {ar_id}"), id=ar_id)
    made[2] = replace(made[2], request=replace(made[2].request, maint=True))
    return made


def _fresh(ars, with_nodes: bool, messages: bool) -> str:
    return fastjson.dumps(summary_rows(ars, with_nodes, messages))


def test_the_rows_are_what_encoding_them_afresh_gives_for_every_column_choice():
    current = _ars(5)
    cache = SummaryCache()
    for with_nodes in (False, True):
        for messages in (False, True):
            listed = [current[i] for i in (5, 1, 2)]
            for _ in range(2):                          # made, then kept
                assert cache.encoded(listed, with_nodes, messages, current).json == \
                    _fresh(listed, with_nodes, messages)
    assert json.loads(cache.encoded([current[2]], False, False, current).json)[0][1] == "[M]ar2"


def test_a_changed_ar_is_listed_as_it_is_now():
    current = _ars(3)
    cache = SummaryCache()
    cache.encoded(list(current.values()), True, False, current)
    current[2] = replace(current[2], state=State.RUNNING,
                         request=Request(start=1, end=2, nodes=1), allocations=[])
    listed = list(current.values())
    assert cache.encoded(listed, True, False, current).json == _fresh(listed, True, False)


def test_rows_of_ars_gone_are_forgotten_once_they_outnumber_the_ars():
    cache = SummaryCache()
    many = _ars(1500)
    cache.encoded(list(many.values()), False, False, many)
    few = {ar_id: many[ar_id] for ar_id in (1, 2)}
    cache.encoded(list(few.values()), False, False, few)
    kept = cache._rows[False, False]
    assert sorted(kept) == [1, 2]
    assert cache.encoded([few[1]], False, False, few).json == _fresh([few[1]], False, False)


def test_an_encoded_reply_reads_as_the_same_reply_written_whole():
    rows = summary_rows(_ars(3).values(), True, True)
    left, right = socket.socketpair()
    with left, right:
        protocol.send_message(left, {"ok": True, "data": protocol.Encoded(fastjson.dumps(rows))})
        protocol.send_message(left, {"ok": True, "data": rows})
        reader = right.makefile("rb")
        spliced, whole = reader.readline(), reader.readline()
    assert json.loads(spliced) == json.loads(whole) == json.loads(json.dumps(
        {"ok": True, "data": rows}))
