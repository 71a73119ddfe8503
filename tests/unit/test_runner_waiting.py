"""`rewake run --auto-resume` waiting for its mark: it fires only the mark it armed, and only
while the session's record is still at the attempt that mark resumes."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rewake.marks.rules import SweepersWill
from rewake.runner.process import waiting
from rewake.runner.process.waiting import Fire, Settled, wait_for_mark
from rewake.runner.store import records
from rewake.runner.store.records import RunRecord
from rewake.runner.store.stores import LocalStore

NOW = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
DUE = (NOW - timedelta(seconds=1)).isoformat()


def mark(mark_id: int, attempt: int, state: str = "armed") -> dict[str, Any]:
    return {"id": mark_id, "attempt": attempt, "state": state, "due_at": DUE}


class _Store(LocalStore):
    """A local store whose get_mark answers from a script (the last answer repeats), and on
    which no sweeper is seen, so that rewake run fires the mark itself."""

    def __init__(self, *answers: dict[str, Any]) -> None:
        self.answers = list(answers)

    def what_sweepers_will_do(self) -> SweepersWill:
        return "nothing"

    def get_mark(self, root_id: str) -> dict[str, Any]:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


@pytest.fixture
def fired(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[int]:
    """The mark ids this process claimed (self_fire stubbed: it would claim in the database)."""
    monkeypatch.setenv("REWAKE_STATE_DIR", str(tmp_path))
    claimed: list[int] = []

    def self_fire(store: LocalStore, mark_id: int, now: datetime) -> Fire:
        claimed.append(mark_id)
        return Fire(store, SimpleNamespace(mark_id=mark_id))

    monkeypatch.setattr(waiting, "self_fire", self_fire)
    return claimed


def save_record(attempt: int) -> None:
    records.save(RunRecord(root_id="s1", run_id="r1", provider="claude", cwd="/tmp",
                           args=["-p", "x"], cli_session_id="abc", attempt=attempt))  # fmt: skip


def wait(store: _Store, armed: dict[str, Any], attempt: int) -> Fire | Settled:
    return wait_for_mark(store, "s1", armed, out=io.StringIO(), clock=lambda: NOW,
                         sleep=lambda _s: None, attempt=attempt)  # fmt: skip


def test_a_mark_armed_by_a_later_attempt_settles_the_wait(fired: list[int]) -> None:
    """When a poll returns another mark id than the one armed, the wait ends Settled (taken
    over) and that mark is never fired with this process's stale record."""
    save_record(2)  # the sweeper's resume ran attempt 2 and armed mark 2
    done = wait(_Store(mark(2, 2)), mark(1, 1), attempt=1)
    assert isinstance(done, Settled) and done.taken_over is not None
    assert "attempt 2 now owns mark 2" in done.taken_over
    assert fired == []


def test_a_record_moved_past_the_marked_attempt_refuses_to_fire(fired: list[int]) -> None:
    """Before firing, the record is reloaded: when it is no longer at the attempt the mark
    resumes (another rewake run resumed it), the wait ends Settled and nothing is claimed;
    a record still at that attempt fires."""
    save_record(2)
    done = wait(_Store(mark(1, 1)), mark(1, 1), attempt=1)
    assert isinstance(done, Settled) and done.taken_over is not None
    assert "record is at attempt 2" in done.taken_over and fired == []
    save_record(1)
    assert isinstance(wait(_Store(mark(1, 1)), mark(1, 1), attempt=1), Fire)
    assert fired == [1]


def test_a_mark_for_another_attempt_is_never_fired(fired: list[int]) -> None:
    """A mark whose attempt is not the one this run armed it for is refused before the claim."""
    save_record(1)
    done = wait(_Store(mark(1, 3)), mark(1, 3), attempt=1)
    assert isinstance(done, Settled) and done.taken_over is not None and fired == []
