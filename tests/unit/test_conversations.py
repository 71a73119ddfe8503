"""Whether a conversation moved on since its failed attempt, read from each CLI's own store
(issue 25). The rows are shaped as Claude Code 2.1.332, Codex 0.171.0 and Gemini CLI 0.61.0
wrote them against the loopback mock (docs/run.md, "Who continues a paused conversation")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from rewake.runner.clis.conversations import check, claude_holder, with_native
from tests.support.slowdown import Wait

SID = "daa19375-d3eb-4965-9972-1db7f1288a4c"
FAILED_AT = datetime(2026, 12, 7, 11, 31, 12, tzinfo=UTC)


def at(seconds: float) -> str:
    """An instant `seconds` after the failure, as the CLIs write it."""
    return (FAILED_AT + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


#: The failed turn: the prompt, then Claude's synthetic error row (both before the failure
#: was observed).
CLAUDE_FAILED_TURN = [
    {"type": "mode", "sessionId": SID},
    {"type": "user", "uuid": "u1", "timestamp": at(-2), "sessionId": SID,
     "message": {"role": "user", "content": "hi"}},
    {"type": "assistant", "uuid": "a1", "timestamp": at(-1), "sessionId": SID,
     "isApiErrorMessage": True, "message": {"role": "assistant", "model": "<synthetic>",
     "content": [{"type": "text", "text": "You've hit your Opus limit · resets 11:31am (UTC)"}]}},
]  # fmt: skip
#: What choosing "Wait here, then continue automatically" leaves in the transcript: the local
#: command /rate-limit-options and its answer (no hook fires).
WAIT_HERE = [
    {"type": "user", "timestamp": at(2), "isMeta": True, "sessionId": SID,
     "message": {"role": "user", "content": "<local-command-caveat>Caveat</local-command-caveat>"}},
    {"type": "user", "timestamp": at(2), "sessionId": SID, "message": {"role": "user", "content":
     "<command-name>/rate-limit-options</command-name>"}},
    {"type": "user", "timestamp": at(2), "sessionId": SID, "message": {"role": "user", "content":
     "<local-command-stdout>Claude Code will continue automatically at 11:31am. Keep this "
     "session open; it may still pause for permission prompts.</local-command-stdout>"}},
]  # fmt: skip


def claude_env(tmp_path: Path, rows: list[dict[str, Any]]) -> dict[str, str]:
    jsonl(tmp_path / "claude" / "projects" / "-work" / f"{SID}.jsonl", rows)
    return {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "HOME": str(tmp_path / "home")}


def register(env: dict[str, str], pid: int, proc_start: str | None) -> None:
    """Claude Code's registration of an interactive session: sessions/<pid>.json."""
    entry: dict[str, Any] = {"pid": pid, "sessionId": SID, "cwd": "/work", "kind": "interactive"}
    if proc_start is not None:
        entry["procStart"] = proc_start
    folder = Path(env["CLAUDE_CONFIG_DIR"]) / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{pid}.json").write_text(json.dumps(entry))


def start_time(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19]


def claude_answer(seconds: float) -> dict[str, Any]:
    """A model's answer in Claude's transcript, `seconds` after the failure."""
    message = {"role": "assistant", "model": "claude-opus-5", "content": "done"}
    return {"type": "assistant", "timestamp": at(seconds), "sessionId": SID, "message": message}


def test_a_model_answer_after_the_failure_means_claude_moved_on(tmp_path: Path) -> None:
    """Claude answered after the failed attempt (its own continuation, or a prompt's):
    moved on, saying when."""
    answer = claude_answer(75)
    found = check("claude", SID, FAILED_AT, claude_env(tmp_path, [*CLAUDE_FAILED_TURN, answer]))
    assert found.state == "moved_on"
    assert "Claude continued this conversation at 11:32:27 UTC" in found.reason


def test_a_prompt_typed_after_the_failure_means_moved_on(tmp_path: Path) -> None:
    """A prompt typed by hand after the failure, even one that hit the limit again."""
    typed = {"type": "user", "timestamp": at(30), "sessionId": SID,
             "message": {"role": "user", "content": "go on"}}  # fmt: skip
    found = check("claude", SID, FAILED_AT, claude_env(tmp_path, [*CLAUDE_FAILED_TURN, typed]))
    assert found.state == "moved_on" and "typed" in found.reason


def test_the_failed_turn_alone_is_unchanged(tmp_path: Path) -> None:
    """Only the failed turn (its prompt and synthetic error row): resume."""
    found = check("claude", SID, FAILED_AT, claude_env(tmp_path, CLAUDE_FAILED_TURN))
    assert found.state == "unchanged"


def test_wait_here_with_the_session_open_stands_rewake_down(tmp_path: Path) -> None:
    """ "Wait here" chosen and the interactive Claude still running (this test's own process
    stands in for it): Claude continues by itself, so rewake must not."""
    env = claude_env(tmp_path, [*CLAUDE_FAILED_TURN, *WAIT_HERE])
    register(env, os.getpid(), start_time(os.getpid()))
    found = check("claude", SID, FAILED_AT, env)
    assert found.state == "moved_on"
    assert f"pid {os.getpid()}" in found.reason and "Wait here" in found.reason


def test_wait_here_in_a_session_since_closed_is_resumed(tmp_path: Path) -> None:
    """ "Wait here" chosen, then the session closed before the reset (its process gone):
    nobody continues it, so rewake does."""
    env = claude_env(tmp_path, [*CLAUDE_FAILED_TURN, *WAIT_HERE])
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    register(env, int(gone.stdout), None)
    assert check("claude", SID, FAILED_AT, env).state == "unchanged"


def test_a_registration_whose_pid_is_another_process_holds_nothing(tmp_path: Path) -> None:
    """A pid reused by another process (its start time differs from the one registered)."""
    env = claude_env(tmp_path, CLAUDE_FAILED_TURN)
    register(env, os.getpid(), "1")
    assert claude_holder(SID, env) is None


def test_a_registered_claude_that_ended_unreaped_holds_nothing(tmp_path: Path) -> None:
    """A Claude that exited but whose parent has not reaped it yet (a zombie: its pid and start
    time still answer) no longer holds the conversation."""
    env = claude_env(tmp_path, CLAUDE_FAILED_TURN)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        started = start_time(child.pid)
        register(env, child.pid, started)
        wait = Wait(30)
        while Path(f"/proc/{child.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
            assert not wait.over(), "the child never ended"
            time.sleep(0.05)
        assert claude_holder(SID, env) is None
    finally:
        child.wait()


def test_an_open_session_holds_the_conversation_even_without_wait_here(tmp_path: Path) -> None:
    """An interactive Claude still has the conversation open ("Stop and wait"): a headless
    Claude beside it would be a second writer, so none is started."""
    env = claude_env(tmp_path, CLAUDE_FAILED_TURN)
    register(env, os.getpid(), start_time(os.getpid()))
    found = check("claude", SID, FAILED_AT, env)
    assert found.state == "moved_on" and "no headless Claude" in found.reason


def test_no_transcript_is_unknown(tmp_path: Path) -> None:
    """The store cannot be found: unknown, saying where it looked."""
    found = check("claude", SID, FAILED_AT, {"CLAUDE_CONFIG_DIR": str(tmp_path)})
    assert found.state == "unknown" and str(tmp_path) in found.reason


THREAD = "01a25044-e6fb-7171-99a4-3cd6ee8aef62"


def rollout(tmp_path: Path, rows: list[dict[str, Any]]) -> dict[str, str]:
    name = f"rollout-2026-12-07T11-31-10-{THREAD}.jsonl"
    jsonl(tmp_path / "codex" / "sessions" / "2026" / "12" / "07" / name, rows)
    return {"CODEX_HOME": str(tmp_path / "codex")}


def codex_message(role: str, text: str, seconds: float) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"timestamp": at(seconds), "type": "response_item", "payload": {"type": "message",
            "role": role, "content": [{"type": kind, "text": text}]}}  # fmt: skip


CODEX_FAILED_TURN = [
    {"timestamp": at(-2), "type": "session_meta", "payload": {"id": THREAD}},
    codex_message("developer", "<skills_instructions>", -2),
    codex_message("user", "<environment_context>", -2),
    codex_message("user", "fix the tests", -2),
    {"timestamp": at(-1), "type": "event_msg", "payload": {"type": "error", "message": "limit"}},
]


@pytest.mark.parametrize(("row", "state"), [
    (codex_message("assistant", "fixed", 40), "moved_on"),
    (codex_message("user", "go on", 40), "moved_on"),
    ({"timestamp": at(40), "type": "event_msg", "payload": {"type": "token_count"}}, "unchanged"),
])  # fmt: skip
def test_codex_moved_on_only_with_a_message_after_the_failure(
    tmp_path: Path, row: dict[str, Any], state: str
) -> None:
    """A user or assistant message in the thread's rollout after the failure moves it on;
    other events do not."""
    env = rollout(tmp_path, [*CODEX_FAILED_TURN, row])
    assert check("codex", THREAD, FAILED_AT, env).state == state


def test_codex_without_a_rollout_is_unknown(tmp_path: Path) -> None:
    """No rollout of the thread: unknown."""
    assert check("codex", THREAD, FAILED_AT, {"CODEX_HOME": str(tmp_path)}).state == "unknown"


GEMINI = "d3f47894-5392-4d06-966d-eaf5df9cbf80"


def chat(tmp_path: Path, session_id: str, rows: list[dict[str, Any]], name: str) -> None:
    head = {"sessionId": session_id, "projectHash": "x", "startTime": at(-3), "kind": "main"}
    path = tmp_path / ".gemini" / "tmp" / "work" / "chats" / f"session-2026-12-07T11-31-{name}"
    jsonl(path, [head, *rows])


def test_gemini_moved_on_with_an_answer_in_its_own_chat_only(tmp_path: Path) -> None:
    """An answer after the failure in the chat whose sessionId is the id moves it on; another
    chat whose file name shares the id's first 8 characters is not read as it."""
    failed = [{"id": "1", "timestamp": at(-2), "type": "user", "content": [{"text": "hi"}]}]
    other = [{"id": "9", "timestamp": at(50), "type": "gemini", "content": "another chat"}]
    chat(tmp_path, GEMINI[:8] + "-0000-4000-8000-000000000000", other, f"{GEMINI[:8]}.jsonl")
    env = {"HOME": str(tmp_path)}
    chat(tmp_path, GEMINI, failed, f"a-{GEMINI[:8]}.jsonl")
    assert check("gemini", GEMINI, FAILED_AT, env).state == "unchanged"
    answered = [*failed, {"id": "2", "timestamp": at(50), "type": "gemini", "content": "ok"}]
    chat(tmp_path, GEMINI, answered, f"a-{GEMINI[:8]}.jsonl")
    found = check("gemini", GEMINI, FAILED_AT, env)
    assert found.state == "moved_on" and "Gemini answered" in found.reason


def armed_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, int]:
    """A Claude session whose attempt 1 failed at FAILED_AT, recorded as the hook records it,
    with auto-resume on and `rewake run --resume-of`'s environment: (its root id, its mark's
    id); no `claude` on PATH (were one started, the exit would say so: 127)."""
    from rewake.runner.store import records
    from rewake.runner.store.records import RunRecord
    from rewake.runner.store.stores import LocalStore

    root_id = f"claude-{SID}"
    env = {
        "REWAKE_STATE_DIR": str(tmp_path / "state"),
        "REWAKE_ROOT_ID": root_id,
        "PATH": str(tmp_path / "bin"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
    }
    for name in ("REWAKE_URL", "REWAKE_DATABASE_URL", "REWAKE_EXPECTED_ATTEMPT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    store = LocalStore.from_settings(env, clock=lambda: FAILED_AT)
    try:
        store.report_failure(root_id, "interactive", {
            "attempt": 1, "observed_at": FAILED_AT.isoformat(), "provider": "claude",
            "message": "You've hit your Opus limit · resets 11:31am (UTC)"})  # fmt: skip
        mark_id = int(store.set_auto_resume(root_id, enabled=True)["id"])
    finally:
        store.close()
    records.save(RunRecord(root_id, "interactive", "claude", cwd=str(tmp_path), args=["--", "hi"],
                           cli_session_id=SID, attempt=1, extra={"origin": "hook"}))  # fmt: skip
    return root_id, mark_id


def test_a_resume_of_a_conversation_claude_continued_sends_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`rewake run --resume-of` finds Claude's answer after the failure in its transcript:
    exit 7 (superseded), no CLI started, the reason on stderr and in the record."""
    from rewake.cli import main
    from rewake.exits import Exit
    from rewake.runner.store import records

    root_id, mark_id = armed_session(tmp_path, monkeypatch)
    answer = claude_answer(75)
    claude_env(tmp_path, [*CLAUDE_FAILED_TURN, answer])
    assert main(["run", "--resume-of", str(mark_id), "--", "continue"]) == Exit.SUPERSEDED
    said = capsys.readouterr().err
    assert f"mark {mark_id} not resumed: Claude continued this conversation at 11:32:27 UTC" in said
    record = records.load(root_id)
    assert record is not None and record.attempt == 1
    assert record.extra["superseded"]["reason"].startswith("Claude continued")


def test_a_resume_of_a_conversation_nobody_continued_starts_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the failed turn in the transcript: the resume goes ahead, as the next attempt."""
    from rewake.cli import main
    from rewake.runner.commands import run

    started: list[int] = []

    def resume(store: Any, record: Any, lock: Any, *args: Any, **kwargs: Any) -> int:
        started.append(record.attempt)
        lock.release()
        return 0

    monkeypatch.setattr(run, "_run_resume", resume)
    _root_id, mark_id = armed_session(tmp_path, monkeypatch)
    claude_env(tmp_path, CLAUDE_FAILED_TURN)
    assert main(["run", "--resume-of", str(mark_id), "--", "continue"]) == 0
    assert started == [1]


def test_the_command_executor_takes_exit_7_for_superseded() -> None:
    """A resume program that exits 7 (the conversation moved on) ends the mark superseded,
    never failed: nothing was sent, and nothing should be retried; another status stays
    failed."""
    from rewake.executors.base import Delivery
    from rewake.executors.command import CommandExecutor

    delivery = Delivery(
        mark_id=7, root_id="root-1", run_id="run-1", attempt=2, attempt_key="9f2c1d0e4b5a6978-7",
        reset_at=FAILED_AT, resolution_s=60, due_at=FAILED_AT, armed_by="alice",
        armed_at=FAILED_AT, sent_at=FAILED_AT,
    )  # fmt: skip
    outcomes = {
        status: CommandExecutor(
            [sys.executable, "-c", f"raise SystemExit({status})"], grace_s=30
        ).deliver(delivery)
        for status in (7, 3)
    }
    assert (outcomes[7].state, outcomes[7].code) == ("superseded", "attempt_moved_on")
    assert (outcomes[3].state, outcomes[3].code) == ("failed", "exit_3")


def native(kind: str, attempt: int = 1) -> dict[str, Any]:
    """The record's note of what Claude Code's Notification hook said (rewake hook claude)."""
    return {"attempt": attempt, "type": kind, "at": at(95), "message": "Usage limit reset"}


@pytest.mark.parametrize("kind", ["quota_auto_resume_stale", "quota_auto_resume_disabled"])
def test_wait_here_then_claude_gave_up_lets_rewake_continue_in_the_open_claude(
    tmp_path: Path, kind: str
) -> None:
    """ "Wait here" chosen, then Claude reported it will not continue (slept past the reset, or
    gave up): the open Claude still holds the conversation, but no longer continues it."""
    env = claude_env(tmp_path, [*CLAUDE_FAILED_TURN, *WAIT_HERE])
    register(env, os.getpid(), start_time(os.getpid()))
    found = with_native(check("claude", SID, FAILED_AT, env), native(kind), 1)
    assert (found.state, found.holder_pid) == ("moved_on", os.getpid())
    assert not found.continues_itself
    assert f"gave up continuing it by itself at 11:32:47 UTC ({kind})" in found.reason


def test_claude_reporting_its_own_continue_ends_the_check_with_that_reason(
    tmp_path: Path,
) -> None:
    """quota_auto_resume_fired on record for the attempt: Claude continued it, said so."""
    env = claude_env(tmp_path, CLAUDE_FAILED_TURN)
    found = with_native(check("claude", SID, FAILED_AT, env), native("quota_auto_resume_fired"), 1)
    assert found.state == "moved_on" and found.continues_itself
    assert found.reason.startswith("Claude continued this conversation itself at 11:32:47 UTC")


def test_a_note_of_another_attempt_changes_nothing(tmp_path: Path) -> None:
    """What Claude said of attempt 1 says nothing of attempt 2's failure."""
    env = claude_env(tmp_path, CLAUDE_FAILED_TURN)
    found = check("claude", SID, FAILED_AT, env)
    assert with_native(found, native("quota_auto_resume_fired"), 2) == found


def test_a_resume_after_claude_gave_up_types_into_the_open_claude(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rewake run --resume-of` for a conversation whose open Claude was told to "Wait here"
    and then reported quota_auto_resume_stale: the resume is typed into that Claude (exit 0),
    not stood down."""
    from dataclasses import replace

    from rewake.cli import main
    from rewake.runner.commands import run
    from rewake.runner.store import records

    typed: list[int] = []

    def type_into(record: Any, pid: int, prompt: str, lock: Any) -> None:
        typed.append(pid)
        lock.release()

    monkeypatch.setattr(run, "_type_into_holder", type_into)
    root_id, mark_id = armed_session(tmp_path, monkeypatch)
    register(claude_env(tmp_path, [*CLAUDE_FAILED_TURN, *WAIT_HERE]), os.getpid(),
             start_time(os.getpid()))  # fmt: skip
    record = records.load(root_id)
    assert record is not None
    note = native("quota_auto_resume_stale")
    records.save(replace(record, extra={**record.extra, records.NATIVE: note}))
    assert main(["run", "--resume-of", str(mark_id), "--", "continue"]) == 0
    assert typed == [os.getpid()]


class Notices:
    """REWAKE_NOTIFY as `rewake run` sees it: every notice sent, and each close."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, notice: Any) -> None:
        self.sent.append(notice)

    def close(self) -> None:
        self.sent.append("closed")


def defer_in_the_store(mark_id: int, reason: str) -> None:
    """What the sweeper makes of a resume program's exit 8, on the local database: the mark
    claimed, sent, and deferred (armed again, outcome `deferred`)."""
    from rewake.executors.base import Outcome
    from rewake.marks.pacing import PacingRules
    from rewake.runner.store.stores import LocalStore
    from rewake.sweeper import step

    store = LocalStore.from_settings(dict(os.environ))
    try:
        now = FAILED_AT + timedelta(days=2)  # past the due time: the reset is the next day's
        claims = step.claim_or_expire(store.database, now, limit=1, sweeper_id="s", lease_s=60,
                                      only_ids=[mark_id]).claims  # fmt: skip
        (sent,) = step.start(store.database, now, claims, PacingRules(9, 0), lease_s=60).deliveries
        step.finish(store.database, now, [(sent, Outcome("armed", "deferred", reason))])
    finally:
        store.close()


def test_an_open_claude_rewake_cannot_reach_defers_the_mark_and_notifies_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The open Claude holding the conversation runs in no tmux pane: no headless Claude is
    started, the program exits 8 (the mark waits) with the reason as its last line, and
    REWAKE_NOTIFY hears why once: the look again of a mark already deferred says nothing."""
    from rewake.cli import main
    from rewake.exits import Exit
    from rewake.runner.commands import run
    from rewake.runner.process import panes

    notices = Notices()
    monkeypatch.setattr(panes, "find_pane", lambda pid: None)
    monkeypatch.setattr(run, "_announcer", lambda: notices)
    root_id, mark_id = armed_session(tmp_path, monkeypatch)
    register(claude_env(tmp_path, CLAUDE_FAILED_TURN), os.getpid(), start_time(os.getpid()))
    assert main(["run", "--resume-of", str(mark_id), "--", "continue"]) == Exit.DEFERRED == 8
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"rewake run: mark {mark_id} waits: an open Claude Code (pid ")
    assert "runs in no tmux pane rewake can reach" in last
    assert len(notices.sent) == 2 and notices.sent[1] == "closed"
    assert notices.sent[0].title == f"Not resumed, continue it by hand · {root_id}"
    assert "runs in no tmux pane rewake can reach" in notices.sent[0].body
    defer_in_the_store(mark_id, last)
    assert main(["run", "--resume-of", str(mark_id), "--", "continue"]) == Exit.DEFERRED
    assert len(notices.sent) == 2


def test_a_pane_that_took_keys_but_not_the_resume_ends_superseded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys reached the open Claude's input box but Enter was not taken: the conversation may
    hold half a prompt, so the mark is not deferred (a second try could type it twice); it ends
    superseded (exit 7) and the person is told."""
    from rewake.cli import main
    from rewake.exits import Exit
    from rewake.runner.commands import run
    from rewake.runner.process import panes

    notices = Notices()
    monkeypatch.setattr(panes, "find_pane", lambda pid: panes.Pane("/tmp/none", "%1"))
    monkeypatch.setattr(panes, "type_into", lambda pane, text: panes.NotTyped(
        "Enter was not taken", keys_sent=True))  # fmt: skip
    monkeypatch.setattr(run, "_announcer", lambda: notices)
    _root_id, mark_id = armed_session(tmp_path, monkeypatch)
    register(claude_env(tmp_path, CLAUDE_FAILED_TURN), os.getpid(), start_time(os.getpid()))
    assert main(["run", "--resume-of", str(mark_id), "--", "continue"]) == Exit.SUPERSEDED
    assert "was not resumed" in notices.sent[0].body


def test_wait_here_not_yet_continued_waits_without_a_notice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "Wait here" chosen, Claude still open and neither continued nor said it gave up (it may
    yet report quota_auto_resume_stale after a sleep): the resume waits (exit 8), nothing is
    typed or started, and no person is told (Claude is expected to continue)."""
    from rewake.cli import main
    from rewake.exits import Exit
    from rewake.runner.commands import run

    notices = Notices()
    typed: list[int] = []
    monkeypatch.setattr(run, "_type_into_holder", lambda record, pid, *a: typed.append(pid))
    monkeypatch.setattr(run, "_announcer", lambda: notices)
    _root_id, mark_id = armed_session(tmp_path, monkeypatch)
    register(claude_env(tmp_path, [*CLAUDE_FAILED_TURN, *WAIT_HERE]), os.getpid(),
             start_time(os.getpid()))  # fmt: skip
    assert main(["run", "--resume-of", str(mark_id), "--", "continue"]) == Exit.DEFERRED
    assert typed == [] and notices.sent == []


def test_wait_here_and_claudes_own_continue_fired_stands_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "Wait here" chosen and Claude's own continuation fired (quota_auto_resume_fired on
    record): Claude continued, so the mark ends superseded (exit 7), never waits."""
    from dataclasses import replace

    from rewake.cli import main
    from rewake.exits import Exit
    from rewake.runner.store import records

    root_id, mark_id = armed_session(tmp_path, monkeypatch)
    register(claude_env(tmp_path, [*CLAUDE_FAILED_TURN, *WAIT_HERE]), os.getpid(),
             start_time(os.getpid()))  # fmt: skip
    record = records.load(root_id)
    assert record is not None
    note = native("quota_auto_resume_fired")
    records.save(replace(record, extra={**record.extra, records.NATIVE: note}))
    assert main(["run", "--resume-of", str(mark_id), "--", "continue"]) == Exit.SUPERSEDED


def test_the_command_executor_takes_exit_8_for_a_deferral() -> None:
    """A resume program that exits 8 defers the mark (outcome state armed, code deferred), its
    last stderr line as the reason; nothing else does."""
    from rewake.executors.base import Delivery
    from rewake.executors.command import CommandExecutor

    delivery = Delivery(
        mark_id=7, root_id="root-1", run_id="run-1", attempt=2, attempt_key="9f2c1d0e4b5a6978-7",
        reset_at=FAILED_AT, resolution_s=60, due_at=FAILED_AT, armed_by="alice",
        armed_at=FAILED_AT, sent_at=FAILED_AT,
    )  # fmt: skip
    said = "import sys; print('rewake run: mark 7 waits: held', file=sys.stderr); sys.exit(8)"
    outcome = CommandExecutor([sys.executable, "-c", said], grace_s=30).deliver(delivery)
    assert (outcome.state, outcome.code) == ("armed", "deferred")
    assert outcome.detail == "rewake run: mark 7 waits: held; nothing was sent, the mark waits"
