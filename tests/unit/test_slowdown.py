"""tests/support/slowdown.py: the measures that scale a timing bound, and a wait, by a busy
machine."""

from __future__ import annotations

import os
import time

import pytest

from tests.support.slowdown import MOST_STRETCH, Slowdown, load_stretch
from tests.support.sweeper import wait_until


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


def test_load_stretch_is_the_load_per_core_between_one_and_the_most(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Load 6 on two cores stretches a wait 3 times; an idle machine not at all; a load of 40
    no more than MOST_STRETCH."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1})
    for load, stretch in ((6.0, 3.0), (0.3, 1.0), (40.0, MOST_STRETCH)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, load, load))
        assert load_stretch() == stretch


def test_a_wait_past_its_idle_timeout_goes_on_while_the_machine_is_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """wait_until's timeout is an idle machine's: under a load of 8 on two cores a wait of
    0.1 s that never succeeds lasts at least 0.4 s, and a predicate that holds at 0.25 s is
    seen; on an idle machine the same wait gives up before it."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1})
    monkeypatch.setattr(os, "getloadavg", lambda: (8.0, 8.0, 8.0))
    began = time.monotonic()
    assert not wait_until(lambda: False, 0.1, poll_s=0.01)
    assert time.monotonic() - began >= 0.4
    began = time.monotonic()
    assert wait_until(lambda: time.monotonic() - began >= 0.25, 0.1, poll_s=0.01)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 0.5, 0.5))
    began = time.monotonic()
    assert not wait_until(lambda: time.monotonic() - began >= 5, 0.1, poll_s=0.01)
