"""The socket's requests counted by operation and outcome (granted, or the
kind of refusal), with a histogram of the time each took, for /metrics.
Only operations the daemon offers are named; anything else a client sends
counts as ``other``, so no client can make the series grow."""

from __future__ import annotations

import bisect
import threading
from collections import Counter
from typing import Collection

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Upper bounds (seconds) of the latency histogram's buckets; +Inf follows."""
OTHER = "other"


class RequestStats:
    """Running counts, changed by ``record`` and copied by ``snapshot``."""

    def __init__(self, operations: Collection[str]) -> None:
        self.operations = frozenset(operations)
        self._lock = threading.Lock()
        self._outcomes: Counter = Counter()
        self._buckets: dict[str, list[int]] = {}
        self._sums: Counter = Counter()

    def name(self, operation: object) -> str:
        """The label an operation is counted under."""
        return operation if isinstance(operation, str) and operation in self.operations \
            else OTHER

    def record(self, operation: object, outcome: str, seconds: float) -> None:
        """One request of ``operation`` answered with ``outcome`` (``ok``,
        or the refusal's kind) after ``seconds``."""
        name = self.name(operation)
        index = bisect.bisect_left(BUCKETS, seconds)
        with self._lock:
            self._outcomes[name, outcome] += 1
            counts = self._buckets.get(name)
            if counts is None:
                counts = self._buckets[name] = [0] * (len(BUCKETS) + 1)
            counts[index] += 1
            self._sums[name] += seconds

    def snapshot(self) -> dict:
        """``requests``: [operation, outcome, count]; ``latency``: the bucket
        bounds and, per operation, [operation, cumulative counts (the last
        is +Inf's, the count), sum of seconds]."""
        with self._lock:
            outcomes = sorted([*key, count] for key, count in self._outcomes.items())
            series = [[name, list(counts), self._sums[name]]
                      for name, counts in sorted(self._buckets.items())]
        for entry in series:
            running = 0
            for i, count in enumerate(entry[1]):
                running += count
                entry[1][i] = running
        return {"requests": outcomes, "latency": {"buckets": list(BUCKETS), "series": series}}
