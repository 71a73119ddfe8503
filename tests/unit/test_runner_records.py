"""rewake run's local state: records that cannot be read, names that would leave the state
directory, ids that could pass as options, the outbox, the session lock and the manual-resume
refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewake.runner.process.guard import SessionBusy, SessionLock, manual_resume_refusal
from rewake.runner.store import records
from rewake.runner.store.records import RecordError, RunRecord


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REWAKE_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def record(**changes: object) -> RunRecord:
    base = RunRecord(root_id="s1", run_id="r1", provider="claude", cwd="/w", args=["-p", "x"])
    for key, value in changes.items():
        setattr(base, key, value)
    return base


def test_a_corrupt_record_raises_record_error(state: Path) -> None:
    """A record that is not JSON, or not a record, is a RecordError naming the file."""
    (state / "runs").mkdir(parents=True)
    (state / "runs" / "s1.json").write_text("{not json")
    with pytest.raises(RecordError, match=r"s1\.json"):
        records.load("s1")
    (state / "runs" / "s1.json").write_text(json.dumps({"root_id": "s1"}))
    with pytest.raises(RecordError, match=r"s1\.json"):
        records.load("s1")


def test_a_stored_id_that_could_be_a_flag_is_refused(state: Path) -> None:
    """An old record whose CLI session id starts with `-` is refused at load, never used."""
    records.save(record(cli_session_id="--dangerously-skip-permissions"))
    with pytest.raises(RecordError, match="not a session id"):
        records.load("s1")


def test_an_unusable_state_directory_raises_record_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A state directory under a file cannot be created: RecordError, not NotADirectoryError."""
    monkeypatch.setenv("REWAKE_STATE_DIR", "/dev/null/x")
    with pytest.raises(RecordError, match="/dev/null/x"):
        records.save(record())
    with pytest.raises(RecordError, match="/dev/null/x"):
        records.load("s1")


@pytest.mark.parametrize("name", ["../../x", "a/b", "", ".hidden"])
def test_names_that_leave_the_state_directory_are_refused(name: str) -> None:
    """Record, log and lock paths refuse a name that is not a plain session name."""
    for path in (lambda: records.record_path(name), lambda: records.log_path(name, "r1", 1),
                 lambda: records.lock_path(name)):  # fmt: skip
        with pytest.raises(RecordError):
            path()


def test_the_outbox_keeps_the_report_and_its_route(state: Path) -> None:
    """A report the store did not take is kept as JSON with the route to replay it to."""
    path = records.save_outbox("s1", "r1", 2, {"attempt": 2, "message": "limit"})
    assert path == state / "outbox" / "s1-r1-2.json"
    kept = json.loads(path.read_text())
    assert kept["route"] == "/api/agent/runs/s1/runs/r1/failures"
    assert kept["body"]["attempt"] == 2


def test_the_session_lock_is_exclusive_until_released() -> None:
    """A second holder of the same session's lock is refused (SessionBusy names the first),
    and can take it once the first lets go."""
    first, second = SessionLock("s1"), SessionLock("s1")
    first.acquire("first run")
    with pytest.raises(SessionBusy, match="first run"):
        second.acquire("resume by hand")
    first.release()
    assert second.try_acquire("resume by hand")
    second.release()


@pytest.mark.parametrize(
    ("mark_state", "cancelled", "refused"),
    [("sending", False, "being sent"), ("uncertain", False, "may have run"),
     ("armed", True, "cancelled"), ("armed", False, None), ("done", False, None)],
)  # fmt: skip
def test_manual_resume_refusals(mark_state: str, cancelled: bool, refused: str | None) -> None:
    """A resume by hand is refused while the mark is sending or uncertain, or the session is
    cancelled; otherwise allowed."""
    session = {"root_id": "s1", "state": "cancelled" if cancelled else "paused",
               "cancelled_at": "2030-01-01T00:00:00Z" if cancelled else None}  # fmt: skip
    reason = manual_resume_refusal({"id": 1, "state": mark_state}, session)
    assert (reason is None) if refused is None else (reason is not None and refused in reason)


def test_a_resume_of_an_attempt_that_moved_on_exits_superseded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`rewake run --resume-of` for a mark of attempt 1 when the record is at attempt 2 runs
    nothing and exits with the one status that means it (Exit.SUPERSEDED, 7)."""
    from rewake.cli import main
    from rewake.exits import Exit

    records.save(record(attempt=2))
    monkeypatch.setenv("REWAKE_ROOT_ID", "s1")
    monkeypatch.setenv("REWAKE_EXPECTED_ATTEMPT", "1")
    assert main(["run", "--resume-of", "5"]) == Exit.SUPERSEDED == 7


def test_a_resume_by_hand_before_the_reset_is_warned_about(tmp_path: Path) -> None:
    """`rewake run --resume` before the stated reset says when it resets and that resuming now
    will most likely stop on the same limit; after the reset, or for another failure, nothing."""
    from datetime import UTC, datetime, timedelta

    from rewake.runner.commands.run import _before_the_reset
    from rewake.runner.store.stores import LocalStore
    from rewake.settings import Settings

    seen = datetime(2026, 4, 1, 13, 42, 35, tzinfo=UTC)
    store = LocalStore(Settings(database_url=f"sqlite:///{tmp_path / 'r.db'}"), clock=lambda: seen)
    try:
        body = {"attempt": 1, "observed_at": seen.isoformat(), "provider": "claude",
                "message": "You've hit your limit · resets 8pm (Europe/Berlin)"}  # fmt: skip
        store.report_failure("s1", "r1", body)
        store.report_failure("s2", "r1", body | {"message": "Error: ENOENT"})
        limited, other = store.get_session("s1"), store.get_session("s2")
    finally:
        store.close()
    said = _before_the_reset(limited, seen)
    assert said is not None and "most likely stop on the same limit" in said
    assert "in 4 h 17 min" in said  # 18:00Z is 20:00 in Berlin
    assert _before_the_reset(limited, seen + timedelta(hours=5)) is None
    assert _before_the_reset(other, seen) is None
