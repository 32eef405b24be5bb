"""Idempotency keys: a request retried with its key (a coordinator that
lost the answer) finds the AR it made instead of making a second one; the
key outlives a restart; a key given to another request is refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from overlay.language.model import InvalidRequest, Operation, Request
from test_manager import ALICE, BOB, HOUR, T0, Env


def test_a_retried_request_finds_the_ar_it_made(tmp_path):
    env = Env(tmp_path)
    ask = Request(T0 + HOUR, T0 + 2 * HOUR, 2)
    first = env.manager.reserve(ALICE, ask, True, "coalloc-7:site-a")
    again = env.manager.reserve(ALICE, ask, True, "coalloc-7:site-a")
    assert again.id == first.id and again.pending == Operation.RESERVE
    assert len(env.manager.ars) == 1
    env.manager.commit(ALICE, first.id)
    env.restart()
    assert env.manager.reserve(ALICE, ask, True, "coalloc-7:site-a").pending is None
    other = env.manager.reserve(BOB, ask, True, "coalloc-7:site-a")      # keys are per user
    assert other.id != first.id
    with pytest.raises(InvalidRequest, match=f"given before to another request \\(AR {first.id}\\)"):
        env.manager.reserve(ALICE, replace(ask, nodes=3), True, "coalloc-7:site-a")
    env.manager.destroy(ALICE, first.id, None)
    assert env.manager.reserve(ALICE, ask, True, "coalloc-7:site-a").id != first.id
