"""`rewake run`'s countdown while it waits for its mark: one line rewritten in place about once
a second on a terminal, one plain line a minute elsewhere, with the time pinned by a fake clock."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import Any

from rewake.instants import local_clock
from rewake.runner.process import waiting
from rewake.runner.process.waiting import Countdown, Settled, time_left, wait_for_mark

NOW = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
DUE = NOW + timedelta(hours=2, minutes=3, seconds=4)


class Terminal(io.StringIO):
    """A StringIO that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def ticks(countdown: Countdown, seconds: list[float]) -> None:
    for second in seconds:
        countdown.show(DUE, NOW + timedelta(seconds=second))


def test_time_left_counts_hours_minutes_and_seconds() -> None:
    """The time left reads h:mm:ss, with days past a day, never 0:00:00 before it is due."""
    assert time_left(DUE, NOW) == "2:03:04"
    assert time_left(NOW + timedelta(days=2, seconds=65), NOW) == "2 d 0:01:05"
    assert time_left(NOW + timedelta(milliseconds=200), NOW) == "0:00:01"
    assert time_left(NOW - timedelta(seconds=5), NOW) == "0:00:00"


def test_a_terminal_gets_one_line_rewritten_about_once_a_second() -> None:
    """On a terminal each refresh starts with a carriage return and ends clearing the rest of
    the line, no newline until the wait ends; ticks within a second of the last refresh write
    nothing."""
    out = Terminal()
    countdown = Countdown(out, live=True)
    ticks(countdown, [0, 0.25, 0.5, 0.75, 1.0, 1.25, 2.0])
    written = out.getvalue()
    assert written.count("\r") == 3 and "\n" not in written
    refreshes = written.split("\r")[1:]
    assert refreshes[0].startswith("⏳ auto-resume in 2:03:04, due at ")
    assert f"due at {local_clock(DUE)}" in refreshes[0]
    assert refreshes[1].startswith("⏳ auto-resume in 2:03:03,")
    assert refreshes[2].startswith("⏳ auto-resume in 2:03:02,")
    assert all(line.endswith("\x1b[K") for line in refreshes)
    countdown.end()
    assert out.getvalue().endswith("\x1b[K\n")


def test_a_log_gets_a_plain_line_a_minute_and_no_escape_sequence() -> None:
    """Not on a terminal: a whole line at once, then nothing until a minute has passed, and no
    carriage return or escape sequence at all; ending the wait adds nothing."""
    out = io.StringIO()
    countdown = Countdown(out, live=False, every_s=60)
    ticks(countdown, [0, 1, 30, 59.9, 60, 61, 119, 120.5])
    countdown.end()
    lines = out.getvalue().splitlines(keepends=True)
    assert len(lines) == 3 and all(line.endswith("\n") for line in lines)
    assert lines[0] == (f"⏳ auto-resume due at {local_clock(DUE)} (in 2 h 3 min); Ctrl-C stops "
                        "waiting and leaves the mark armed\n")  # fmt: skip
    assert "(in 2 h 2 min)" in lines[1] and "(in 2 h 1 min)" in lines[2]
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()


def test_a_clock_set_back_refreshes_at_once() -> None:
    """A wall clock that jumps back does not freeze the countdown for the jump's length."""
    out = io.StringIO()
    countdown = Countdown(out, live=False, every_s=60)
    ticks(countdown, [100, 10])
    assert out.getvalue().count("\n") == 2


def test_wait_for_mark_ends_its_live_line_before_it_returns() -> None:
    """wait_for_mark counts down on a terminal it is given and ends the line when the mark
    settles, so the next message starts on a line of its own."""

    class Store(waiting.LocalStore):
        def __init__(self) -> None:
            self.polls = 0

        def get_mark(self, root_id: str) -> dict[str, Any]:
            self.polls += 1
            state = "armed" if self.polls < 3 else "cleared"
            return {"id": 1, "attempt": 1, "state": state, "due_at": DUE.isoformat()}

    clock = iter(NOW + timedelta(seconds=s) for s in range(100))
    ticks = iter(range(0, 10**6, 100))  # each look at the time 100 s on: a poll every turn
    out = Terminal()
    done = wait_for_mark(Store(), "s1", {"id": 1, "due_at": DUE.isoformat()}, out=out,
                         clock=lambda: next(clock), sleep=lambda _s: None, poll_s=0,
                         monotonic=lambda: next(ticks))  # fmt: skip
    assert isinstance(done, Settled)
    written = out.getvalue()
    assert written.count("\r⏳ auto-resume in ") == 3 and written.endswith("\x1b[K\n")


def test_a_wait_minutes_long_asks_the_store_a_few_times_not_every_two_seconds() -> None:
    """A mark due in 4 minutes: the waiting rewake run asks the store a handful of times before
    it is due (half the time left, at least 2 s), not the 120 of a 2 s poll."""
    due = NOW + timedelta(minutes=4)
    elapsed = [0.0]

    class Store(waiting.LocalStore):
        def __init__(self) -> None:
            self.polls = 0

        def get_mark(self, root_id: str) -> dict[str, Any]:
            self.polls += 1
            settled = elapsed[0] >= 240
            return {"id": 1, "attempt": 1, "state": "done" if settled else "armed",
                    "due_at": due.isoformat()}  # fmt: skip

    def sleep(seconds: float) -> None:
        elapsed[0] += seconds

    store = Store()
    done = wait_for_mark(
        store, "s1", {"id": 1, "due_at": due.isoformat()}, out=io.StringIO(),
        clock=lambda: NOW + timedelta(seconds=elapsed[0]), sleep=sleep,
        monotonic=lambda: elapsed[0],
    )  # fmt: skip
    assert isinstance(done, Settled)
    assert 3 <= store.polls <= 15, store.polls
