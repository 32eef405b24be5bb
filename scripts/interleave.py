"""Pure helpers for benchmarks that put us beside another system in one run:
the order the two sides take turns in, the bursts a long series is cut
into so that both meet the same machine, and a figure's median with its
spread (p10-p90), so a loaded machine shows in the figures rather than
hiding in them."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Iterator, Sequence, TypeVar

Item = TypeVar("Item")
Side = TypeVar("Side")


def alternate(rounds: int, sides: Sequence[Side]) -> Iterator[tuple[int, Side]]:
    """(round, side) in the order the sides take turns: within each round
    every side once, in the order given (ours, theirs, ours, theirs, ...)."""
    for turn in range(rounds):
        for side in sides:
            yield turn, side


def bursts(items: Sequence[Item], size: int) -> list[Sequence[Item]]:
    """``items`` cut in order into bursts of ``size`` (the last may be
    shorter): each side is given the same burst in a round."""
    if size < 1:
        raise ValueError(f"a burst holds at least 1 item, not {size}")
    return [items[first:first + size] for first in range(0, len(items), size)]


@dataclass(frozen=True)
class Spread:
    """A figure's median and its 10th and 90th percentiles."""

    median: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{number(self.median)} ({number(self.low)}-{number(self.high)})"


def spread(samples: Sequence[float]) -> Spread:
    """The median and p10-p90 of ``samples`` (inclusive quantiles, so a
    short series gives values inside its own range)."""
    if not samples:
        raise ValueError("no samples to summarise")
    if len(samples) == 1:
        return Spread(samples[0], samples[0], samples[0])
    deciles = statistics.quantiles(samples, n=10, method="inclusive")
    return Spread(statistics.median(samples), deciles[0], deciles[-1])


def percentile(samples: Sequence[float], percent: int) -> float:
    """The ``percent``-th percentile (1-99) of ``samples``, inclusive."""
    if not samples:
        raise ValueError("no samples to summarise")
    if len(samples) == 1:
        return samples[0]
    return statistics.quantiles(samples, n=100, method="inclusive")[percent - 1]


def ratio(ours: object, theirs: object) -> float | None:
    """Ours / theirs of two figures' medians, or None when either is not a
    number (a figure only one side has)."""
    mine, other = (value.median if isinstance(value, Spread) else value for value in (ours, theirs))
    if isinstance(mine, (int, float)) and isinstance(other, (int, float)) and other:
        return mine / other
    return None


def number(value: float) -> str:
    """A figure as the tables print it: two decimals below 100."""
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"
