"""`rewake hook claude` reads a transcript only where Claude Code keeps them (issue 30, item 4).

The payload's `transcript_path` is read and stored as the failure's events: a path to a
credentials file, a symlink out of Claude's projects folder or a `..` walk must not be read, a
FIFO must not hold the hook, and a refused path still leaves the failure reported from the
payload alone.
"""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from rewake.runner.hook import claude as hook
from rewake.runner.hook.transcript import TranscriptTail, projects_dir, read_transcript_tail

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SID = "00893aaf-19fa-41d2-8238-13269b9b3ca0"
SECRET = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG"
ROW = {"type": "assistant", "uuid": "a1", "message": {"content": "API Error: 429"}}


class RecordingStore:
    """Keeps the reports it is given; answers as a store does when nothing is offered."""

    actor = "local:test"

    def __init__(self) -> None:
        self.reports: list[dict[str, Any]] = []

    def get_session(self, root_id: str) -> dict[str, Any]:
        from rewake.runner.store.base import StoreError

        raise StoreError("session_not_found", root_id, 404)

    def report_failure(self, root_id: str, run_id: str, body: Any) -> dict[str, Any]:
        self.reports.append(dict(body))
        return {"failure_kind": "provider_quota", "auto_resume": {"available": False}}

    def close(self) -> None:
        pass


@pytest.fixture
def claude_dir(tmp_path: Path) -> Path:
    """CLAUDE_CONFIG_DIR with one session's transcript under projects/, and a secret beside it."""
    folder = tmp_path / "claude"
    (folder / "projects" / "p").mkdir(parents=True)
    (folder / "projects" / "p" / f"{SID}.jsonl").write_text(json.dumps(ROW) + "\n")
    (tmp_path / "credentials").write_text(json.dumps({"secret": SECRET}) + "\n")
    return folder


def env_of(claude_dir: Path) -> dict[str, str]:
    return {"CLAUDE_CONFIG_DIR": str(claude_dir), "REWAKE_STATE_DIR": str(claude_dir / "state")}


def report(claude_dir: Path, transcript_path: str) -> tuple[RecordingStore, list[str]]:
    store = RecordingStore()
    payload = {"session_id": SID, "transcript_path": transcript_path, "cwd": str(claude_dir),
               "hook_event_name": "StopFailure", "error": "rate_limit",
               "last_assistant_message": "API Error: Rate limit reached"}  # fmt: skip
    result = hook.run_hook(json.dumps(payload), now=NOW, env=env_of(claude_dir),
                           open_store=lambda: store,  # type: ignore[arg-type,return-value]
                           auto_resume=False, zone="UTC")  # fmt: skip
    return store, result.lines


def test_a_transcript_in_the_projects_folder_is_read(claude_dir: Path) -> None:
    """The path Claude Code hands over, inside its projects folder, is read as before."""
    path = claude_dir / "projects" / "p" / f"{SID}.jsonl"
    tail = read_transcript_tail(str(path), env_of(claude_dir))
    assert (tail.events, tail.problem) == ([ROW], None)


def test_a_link_that_stays_inside_the_projects_folder_is_read(claude_dir: Path) -> None:
    """A symlink whose target is itself a transcript in the folder is followed."""
    link = claude_dir / "projects" / "p" / "link.jsonl"
    link.symlink_to(claude_dir / "projects" / "p" / f"{SID}.jsonl")
    assert read_transcript_tail(str(link), env_of(claude_dir)).events == [ROW]


def test_the_projects_folder_is_under_home_without_claude_config_dir(tmp_path: Path) -> None:
    """Without CLAUDE_CONFIG_DIR, ~/.claude/projects (HOME from the environment)."""
    assert projects_dir({"HOME": str(tmp_path)}) == tmp_path / ".claude" / "projects"


def outside_paths(claude_dir: Path) -> dict[str, str]:
    secret = claude_dir.parent / "credentials"
    link = claude_dir / "projects" / "p" / "evil.jsonl"
    link.symlink_to(secret)
    linked_folder = claude_dir / "projects" / "elsewhere"
    linked_folder.symlink_to(claude_dir.parent)
    return {
        "a file outside": str(secret),
        "a symlink out": str(link),
        "a .. walk out": str(claude_dir / "projects" / ".." / ".." / "credentials"),
        "a linked folder out": str(linked_folder / "credentials"),
        "the folder itself": str(claude_dir / "projects"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "a file outside",
        "a symlink out",
        "a .. walk out",
        "a linked folder out",
        "the folder itself",
    ],
)
def test_a_path_out_of_the_projects_folder_is_not_read(claude_dir: Path, case: str) -> None:
    """Outside Claude's projects folder, however reached, nothing is read: a problem instead."""
    tail = read_transcript_tail(outside_paths(claude_dir)[case], env_of(claude_dir))
    assert tail.events == [] and tail.problem


@pytest.mark.parametrize("case", ["a file outside", "a symlink out", "a .. walk out"])
def test_a_refused_path_still_reports_the_failure_without_its_text(
    claude_dir: Path, case: str
) -> None:
    """The failure is reported from the payload alone; the secret is in no report."""
    store, lines = report(claude_dir, outside_paths(claude_dir)[case])
    assert len(store.reports) == 1
    assert "events" not in store.reports[0]
    assert SECRET not in json.dumps(store.reports)
    assert store.reports[0]["message"].startswith("API Error: Rate limit reached")
    assert any("not a file in Claude Code's projects folder" in line for line in lines)


def test_a_fifo_does_not_hold_the_hook_and_the_failure_is_reported(claude_dir: Path) -> None:
    """A FIFO named as the transcript (no writer) is refused at once, and the failure is
    reported: opening it for reading would block until the hook's time limit."""
    fifo = claude_dir / "projects" / "p" / "fifo.jsonl"
    os.mkfifo(fifo)
    done: list[tuple[RecordingStore, list[str]]] = []
    worker = threading.Thread(target=lambda: done.append(report(claude_dir, str(fifo))),
                              daemon=True)  # fmt: skip
    worker.start()
    worker.join(5)
    if worker.is_alive():
        # Let the blocked open go, so the test process can end.
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(5)
        pytest.fail("the hook blocked on a FIFO named as the transcript")
    store, lines = done[0]
    assert len(store.reports) == 1 and "events" not in store.reports[0]
    assert any("not a regular file" in line for line in lines)


def test_a_path_with_a_nul_is_a_problem_not_a_crash(claude_dir: Path) -> None:
    """A NUL in the path (JSON allows \\u0000) is one problem line."""
    tail = read_transcript_tail(str(claude_dir / "projects" / "a\x00b"), env_of(claude_dir))
    assert tail == TranscriptTail(problem=tail.problem) and tail.problem
