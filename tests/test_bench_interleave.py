"""scripts/interleave.py: the order in which a benchmark's two sides take
turns, the bursts a series is cut into, and the spread printed beside each
median (scripts/bench_core.py prints what these return)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "interleave.py"
_spec = importlib.util.spec_from_file_location("bench_interleave", SCRIPT)
interleave = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = interleave     # its dataclass looks itself up there
_spec.loader.exec_module(interleave)


def test_the_sides_take_turns_round_by_round_in_the_order_given():
    assert list(interleave.alternate(3, ["ours", "SGE"])) == [
        (0, "ours"), (0, "SGE"), (1, "ours"), (1, "SGE"), (2, "ours"), (2, "SGE")]


def test_one_side_alone_runs_every_round_and_no_rounds_run_nothing():
    assert list(interleave.alternate(2, ["ours"])) == [(0, "ours"), (1, "ours")]
    assert list(interleave.alternate(0, ["ours", "SGE"])) == []


def test_bursts_keep_every_item_once_in_order_the_last_shorter():
    items = list(range(7))
    assert interleave.bursts(items, 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert interleave.bursts(items, 7) == [items]
    assert interleave.bursts([], 3) == []


def test_a_burst_of_nothing_is_refused_by_name():
    with pytest.raises(ValueError, match="at least 1 item, not 0"):
        interleave.bursts([1, 2], 0)


def test_spread_is_the_median_with_the_10th_and_90th_percentiles():
    found = interleave.spread([float(n) for n in range(11)])      # 0 .. 10
    assert (found.median, found.low, found.high) == (5.0, 1.0, 9.0)
    assert str(found) == "5.00 (1.00-9.00)"


def test_spread_stays_inside_a_short_series_and_ignores_its_order():
    found = interleave.spread([30.0, 10.0, 20.0])
    assert found.median == 20.0 and 10.0 <= found.low < 20.0 < found.high <= 30.0
    assert interleave.spread([7.5]) == interleave.Spread(7.5, 7.5, 7.5)
    with pytest.raises(ValueError, match="no samples"):
        interleave.spread([])


def test_percentiles_of_a_long_series():
    samples = [float(n) for n in range(1, 101)]                  # 1 .. 100
    assert interleave.percentile(samples, 50) == pytest.approx(50.5)
    assert interleave.percentile(samples, 99) == pytest.approx(99.01)
    assert interleave.percentile([3.0], 99) == 3.0


def test_the_ratio_is_of_medians_and_only_between_numbers():
    ours, theirs = interleave.Spread(2.0, 1.0, 9.0), interleave.Spread(8.0, 7.0, 8.5)
    assert interleave.ratio(ours, theirs) == 0.25
    assert interleave.ratio(ours, 4.0) == 0.5
    assert interleave.ratio(ours, None) is None
    assert interleave.ratio("0.2 / 0.9", theirs) is None
    assert interleave.ratio(ours, 0.0) is None


def test_numbers_print_two_decimals_below_100_and_whole_above():
    assert interleave.number(9.876) == "9.88"
    assert interleave.number(123.4) == "123"
