"""The rate limit on log lines a client can cause (overlay.log.ratelog): a
burst per key and interval, then silence, then a line that says how many
were held back; keys bounded, so invented keys cost no memory."""

from __future__ import annotations

import logging

from overlay.log.ratelog import RateLimitedLog, RateLimitFilter


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_per_key_then_the_count_of_what_was_held_back(caplog):
    clock = Clock()
    limited = RateLimitedLog(logging.getLogger("t"), interval=60, burst=3, clock=clock)
    with caplog.at_level(logging.INFO, "t"):
        logged = [limited.info("alice", "line %d", n) for n in range(10)]
        assert logged == [True] * 3 + [False] * 7
        assert limited.info("bob", "bob's line")         # another key has its own burst
        clock.now = 61
        assert limited.info("alice", "line %d", 10)
    assert [r.getMessage() for r in caplog.records] == [
        "line 0", "line 1", "line 2", "bob's line", "line 10 (7 more such messages held back)"]


def test_invented_keys_are_forgotten_oldest_first_and_their_count_told(caplog):
    clock = Clock()
    limited = RateLimitedLog(logging.getLogger("t"), interval=60, burst=1, keys=4, clock=clock)
    with caplog.at_level(logging.INFO, "t"):
        limited.info("first", "first")
        limited.info("first", "held")                   # held back under "first"
        for key in range(10):
            limited.info(key, "key %s", key)
    assert len(limited._windows) == 4
    assert caplog.records[-1].getMessage() == "key 9"
    assert "key 3 (1 more such messages held back)" in [r.getMessage() for r in caplog.records]


def test_a_librarys_own_lines_are_limited_by_their_template():
    limit = RateLimitFilter(interval=60, burst=2)
    records = [logging.LogRecord("uvicorn.error", logging.WARNING, "", 0,
                                 "Invalid HTTP request received.", None, None) for _ in range(5)]
    assert [limit.filter(r) for r in records] == [True, True, False, False, False]
