"""tests/support/slowdown.py: the measure that scales a timing bound by a busy machine."""

from __future__ import annotations

import time

from tests.support.slowdown import Slowdown


def test_ratio_is_the_mean_of_the_samples_in_the_window_and_never_below_one() -> None:
    """ratio() averages the samples taken within [since, until], reads 1 where none was
    taken, and never less than 1."""
    slowdown = Slowdown()
    slowdown.samples = [(10.0, 2.0), (11.0, 4.0), (12.0, 9.0), (13.0, 0.5)]
    assert slowdown.ratio(since=10.5, until=12.0) == 6.5
    assert slowdown.ratio(since=12.5) == 1.0
    assert slowdown.ratio(until=9.0) == 1.0
    assert slowdown.ratio() == (2.0 + 4.0 + 9.0 + 0.5) / 4


def test_samples_are_taken_while_open_and_stop_when_closed() -> None:
    """Open, it takes a sample every PERIOD_S, each at least 1 (wall time is never less than
    the CPU time spent in it); closed, it takes no more."""
    with Slowdown() as slowdown:
        time.sleep(Slowdown.PERIOD_S * 4)
    taken = len(slowdown.samples)
    assert taken >= 1 and all(ratio >= 0.99 for _at, ratio in slowdown.samples)
    time.sleep(Slowdown.PERIOD_S * 2)
    assert len(slowdown.samples) == taken
