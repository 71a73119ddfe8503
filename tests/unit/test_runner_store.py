"""LocalStore when the database itself fails: one `store_unavailable` StoreError (never a
traceback), the commands' one line and exit 5, and a report that meets it kept in the outbox."""

from __future__ import annotations

import io
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from rewake.cli import main
from rewake.runner.store.stores import LocalStore, StoreError
from rewake.settings import Settings

FIXED = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


def store_on(url: str) -> LocalStore:
    return LocalStore(Settings(database_url=url), clock=lambda: FIXED)


@pytest.fixture
def corrupt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A rewake.db that is not a database, as the commands' REWAKE_DATABASE_URL."""
    path = tmp_path / "rewake.db"
    path.write_bytes(b"not a database, only junk " * 40)
    monkeypatch.setenv("REWAKE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("REWAKE_DATABASE_URL", f"sqlite:///{path}")
    monkeypatch.delenv("REWAKE_URL", raising=False)
    return path


def test_a_corrupt_database_file_is_store_unavailable(corrupt: Path) -> None:
    """Opening a file that is not a database: store_unavailable naming the URL, one line."""
    with pytest.raises(StoreError) as failed:
        store_on(f"sqlite:///{corrupt}")
    assert failed.value.code == "store_unavailable"
    assert failed.value.detail == f"sqlite:///{corrupt}: file is not a database"


def test_a_database_in_a_missing_directory_is_store_unavailable(tmp_path: Path) -> None:
    """sqlite:////nonexistent/dir/x.db: store_unavailable (unable to open database file)."""
    url = f"sqlite:///{tmp_path / 'nonexistent' / 'dir' / 'x.db'}"
    with pytest.raises(StoreError) as failed:
        store_on(url)
    assert failed.value.code == "store_unavailable"
    assert "unable to open database file" in failed.value.detail and "\n" not in failed.value.detail


def test_the_password_never_reaches_the_message() -> None:
    """A PostgreSQL URL that cannot connect: the detail shows the URL with its password hidden."""
    pytest.importorskip("psycopg")
    url = "postgresql+psycopg://rewake:s3cret@127.0.0.1:9/rewake?connect_timeout=2"
    with pytest.raises(StoreError) as failed:
        store_on(url)
    assert failed.value.code == "store_unavailable"
    assert "s3cret" not in failed.value.detail and "***" in failed.value.detail


@pytest.mark.parametrize("argv", [["show", "claude-x"], ["ls"], ["auto-resume", "claude-x", "on"]])
def test_the_views_say_one_line_and_exit_5_on_a_corrupt_database(
    corrupt: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """`rewake show/ls/auto-resume` on a corrupt rewake.db: exit 5, one stderr line naming
    store_unavailable, no traceback."""
    assert main(argv) == 5
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "store_unavailable" in err[0] and "file is not a database" in err[0]


def test_rewake_run_says_one_line_and_exits_5_on_a_corrupt_database(corrupt: Path) -> None:
    """`rewake run` on a corrupt rewake.db (its own process: the session lock lives as long as
    the process): exit 5, one stderr line, no traceback, nothing started."""
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "rewake", "run", "--name", "t1", "claude", "--", "fix it"],
        capture_output=True, text=True, env=dict(os.environ), timeout=60, check=False,
    )  # fmt: skip
    err = done.stderr.strip().splitlines()
    assert done.returncode == 5 and len(err) == 1, done.stderr
    assert "store_unavailable" in err[0] and "nothing was started" in err[0]


@pytest.fixture
def locked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalStore]:
    """A migrated store whose database another connection holds with BEGIN IMMEDIATE; the busy
    timeout cut to 50 ms so the write gives up at once."""
    monkeypatch.setattr("rewake.db.engine.SQLITE_BUSY_TIMEOUT_MS", 50)
    monkeypatch.setenv("REWAKE_STATE_DIR", str(tmp_path / "state"))
    store = store_on(f"sqlite:///{tmp_path / 'r.db'}")
    holder = sqlite3.connect(tmp_path / "r.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield store
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        store.close()


def test_a_locked_database_is_store_unavailable(locked: LocalStore) -> None:
    """A write that meets a database locked past the busy timeout: store_unavailable
    (database is locked), not OperationalError."""
    with pytest.raises(StoreError) as failed:
        locked.record_attempt("s1", "r1", 1, "started")
    assert failed.value.code == "store_unavailable"
    assert failed.value.detail.endswith(": database is locked")


def test_a_report_that_meets_a_locked_database_goes_to_the_outbox(
    locked: LocalStore, tmp_path: Path
) -> None:
    """`rewake run`'s failure report on a locked local database is kept in
    <state>/outbox/ (as for an unreachable service) and the terminal names the file."""
    from rewake.parsers.verdict import Verdict
    from rewake.runner.clis.providers import provider_named
    from rewake.runner.process.attempts import Options, Runner
    from rewake.runner.process.outcome import Classified
    from rewake.runner.process.supervise import Finished
    from rewake.runner.store.records import RunRecord

    record = RunRecord(root_id="o1", run_id="r1", provider="claude", cwd=str(tmp_path),
                       args=["-p", "x"])  # fmt: skip
    out = io.StringIO()
    runner = Runner(locked, record, provider_named("claude"), Options(clock=lambda: FIXED),
                    out=out, err=out)  # fmt: skip
    finished: Any = Finished(exit_code=1, events=[], tail="boom", session_id=None, started=True,
                             halted=True, ended_at=FIXED, log=tmp_path / "a.log")  # fmt: skip
    verdict = Classified(True, Verdict(kind="none"), False, None)
    assert runner._record_end(finished, verdict, 1) is None
    kept = tmp_path / "state" / "outbox" / "o1-r1-1.json"
    assert kept.exists() and str(kept) in out.getvalue()
    assert "store_unavailable" in out.getvalue()
