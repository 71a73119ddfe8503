"""`rewake hook claude`: reading the StopFailure payload and the transcript tail tolerantly, and
what it reports, records and arms (against an in-memory store)."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from rewake.cli import main
from rewake.runner.hook import claude as hook
from rewake.runner.hook import payload as hook_payload
from rewake.runner.hook.transcript import TranscriptTail
from rewake.runner.hook.transcript import read_transcript_tail as transcript_tail
from rewake.runner.store import records
from rewake.runner.store.stores import JSON, StoreError, check_id

NOW = datetime(2026, 11, 30, 14, 5, tzinfo=UTC)
SID = "00893aaf-19fa-41d2-8238-13269b9b3ca0"
ROOT = f"claude-{SID}"
DOCUMENTED = {
    "session_id": SID,
    "transcript_path": "/Users/u/.claude/projects/p/00893aaf.jsonl",
    "cwd": "/Users/u/shop",
    "hook_event_name": "StopFailure",
    "error": "rate_limit",
    "error_details": "429 Too Many Requests",
    "last_assistant_message": "API Error: Rate limit reached",
}


def test_the_documented_payload_is_read_whole() -> None:
    """Every field of Claude Code's documented StopFailure example is read."""
    read = hook_payload.read_hook_input(json.dumps(DOCUMENTED))
    assert read == hook_payload.HookInput(
        session_id=SID,
        transcript_path="/Users/u/.claude/projects/p/00893aaf.jsonl",
        cwd="/Users/u/shop",
        hook_event_name="StopFailure",
        error="rate_limit",
        error_details="429 Too Many Requests",
        last_assistant_message="API Error: Rate limit reached",
    )


def test_missing_and_odd_fields_are_dropped_not_fatal() -> None:
    """Only session_id is needed: wrong types become None, an object in error_details is kept
    as JSON, unknown fields are ignored."""
    raw = json.dumps({"session_id": SID, "cwd": 7, "error": None, "transcript_path": "",
                      "error_details": {"status": 429}, "new_field": [1]})  # fmt: skip
    read = hook_payload.read_hook_input(raw)
    assert (read.cwd, read.error, read.transcript_path) == (None, None, None)
    assert read.error_details == '{"status": 429}'


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("not json at all", "not JSON"),
        ("[1, 2]", r"not an object \(list\)"),
        ('{"session_id": 5}', "no session_id"),
        ("", "not JSON"),
    ],
)
def test_unusable_stdin_is_a_hook_input_error(raw: str, says: str) -> None:
    """Non-JSON, a non-object and a payload without session_id are refused with a reason."""
    with pytest.raises(hook_payload.HookInputError, match=says):
        hook_payload.read_hook_input(raw)


def transcript(path: Path, rows: list[Any], junk_before: int = 0) -> Path:
    """Write the rows at `path`, inside the projects folder of CLAUDE_CONFIG_DIR=tmp_path
    (`claude_env`): the only place the hook reads a transcript from."""
    path = path.parent / "projects" / "p" / path.name
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        out.write(("x" * 1000 + "\n") * junk_before)
        out.writelines(json.dumps(row) + "\n" for row in rows)
    return path


def claude_env(tmp_path: Path) -> dict[str, str]:
    """Claude Code's folder is tmp_path: its transcripts are under tmp_path/projects."""
    return {"CLAUDE_CONFIG_DIR": str(tmp_path)}


def test_only_the_bounded_tail_of_a_huge_transcript_is_read(tmp_path: Path) -> None:
    """A 5 MB transcript costs at most max_bytes: the cut first line and non-JSON lines are
    dropped, the last rows kept in order, the last row's uuid is the failure's key."""
    rows = [{"type": "user", "uuid": "u1"}, {"type": "assistant", "uuid": "a2"}]
    path = transcript(tmp_path / "t.jsonl", rows, junk_before=5000)
    assert path.stat().st_size > 5_000_000
    tail = transcript_tail(str(path), claude_env(tmp_path), max_bytes=4096)
    assert tail.events == rows
    assert (tail.last_key, tail.problem) == ("a2", None)


def test_a_row_cut_by_the_seek_is_not_read(tmp_path: Path) -> None:
    """The row the byte bound cuts in half is dropped rather than misread."""
    rows = [{"type": "user", "n": n, "pad": "y" * 50} for n in range(100)]
    path = transcript(tmp_path / "t.jsonl", rows)
    tail = transcript_tail(str(path), claude_env(tmp_path), max_bytes=1000)
    numbers = [row["n"] for row in tail.events]
    assert numbers == list(range(100 - len(numbers), 100)) and 0 < len(numbers) < 100


def test_the_tail_keeps_at_most_max_events_rows(tmp_path: Path) -> None:
    """Many small rows: only the last max_events are sent."""
    path = transcript(tmp_path / "t.jsonl", [{"n": n} for n in range(50)])
    assert transcript_tail(str(path), claude_env(tmp_path), max_events=3).events == [
        {"n": 47}, {"n": 48}, {"n": 49},
    ]  # fmt: skip


@pytest.mark.parametrize("name", [None, "missing.jsonl", "."])
def test_an_unreadable_transcript_is_a_note_not_a_failure(tmp_path: Path, name: str | None) -> None:
    """No path, a missing file and a directory each give no events and one problem line."""
    path = None if name is None else str(tmp_path / "projects" / name)
    (tmp_path / "projects").mkdir()
    tail = transcript_tail(path, claude_env(tmp_path))
    assert tail.events == [] and tail.problem


def test_root_id_is_claude_and_the_session_id_and_always_a_valid_id() -> None:
    """`claude-<uuid>`; the longest session id the hook accepts still makes a valid root id."""
    assert hook_payload.root_id_for(SID) == ROOT
    longest = "a" + "-" * 127
    assert hook_payload.SESSION_ID.fullmatch(longest)
    assert check_id(hook_payload.root_id_for(longest), "root_id")


@pytest.mark.parametrize(
    "session_id",
    ["--dangerously-skip-permissions", "-p", "a b", "x;rm -rf ~", "../up", "a" * 129, "é"],
)
def test_a_session_id_that_could_be_a_flag_is_refused(session_id: str) -> None:
    """A session_id outside `^[0-9A-Za-z][0-9A-Za-z_-]{0,127}$` is refused, never stored: it
    would reach the resume's argv as `claude -p --resume <id>`."""
    with pytest.raises(hook_payload.HookInputError, match="is not a session id"):
        hook_payload.read_hook_input(json.dumps({**DOCUMENTED, "session_id": session_id}))


def test_an_injected_session_id_records_nothing(tmp_path: Path) -> None:
    """The whole hook with `--dangerously-skip-permissions` as session_id: one `ignored` line,
    no report, no record, the store never opened."""
    store = FakeStore()
    result = run(store, {**DOCUMENTED, "session_id": "--dangerously-skip-permissions"},
                 tmp_path, auto=True)  # fmt: skip
    assert store.reports == [] and not store.closed
    assert len(result.lines) == 1 and result.lines[0].startswith("ignored: session_id")
    assert not (tmp_path / "state").exists()


def test_next_attempt_follows_the_interactive_run() -> None:
    """1 for a new session; else one more than the run's highest attempt (other runs aside)."""
    assert hook_payload.next_attempt(None) == 1
    attempts = [{"attempt": 1}, {"attempt": 3}]
    session = {"runs": [
        {"run_id": "interactive", "current_attempt": 2, "attempts": attempts},
        {"run_id": "other", "current_attempt": 9, "attempts": []},
    ]}  # fmt: skip
    assert hook_payload.next_attempt(session) == 4


def test_failure_body_sends_events_zone_and_the_rendered_error() -> None:
    """The transcript rows go as events, the error text and details as message."""
    tail = TranscriptTail([{"type": "rate_limit_event"}], "k")
    body = hook.failure_body(hook_payload.read_hook_input(json.dumps(DOCUMENTED)), tail, attempt=2,
                             now=NOW, zone="Europe/Berlin")  # fmt: skip
    assert body == {
        "attempt": 2,
        "message": "API Error: Rate limit reached\n429 Too Many Requests",
        "observed_at": "2026-11-30T14:05:00+00:00",
        "provider": "claude",
        "session_id": SID,
        "capture": "live",
        "events": [{"type": "rate_limit_event"}],
        "zone": "Europe/Berlin",
    }
    bare = hook.failure_body(hook_payload.HookInput(SID), TranscriptTail(), attempt=1, now=NOW,
                             zone=None)  # fmt: skip
    assert bare["message"] == "Claude Code StopFailure: unknown"
    assert "events" not in bare and "zone" not in bare


def test_resume_args_keep_the_permission_mode_and_the_last_typed_task() -> None:
    """The record's ARGS: the session's permission mode, `--`, the last prompt the user typed
    (not a tool result, not a /command wrapper)."""
    rows = [
        {"type": "user", "message": {"content": "fix the flaky test"}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "content": "ok"}]}},
        {"type": "user", "message": {"content": "<command-name>/cost</command-name>"}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "hi"}]}},
    ]
    payload = hook_payload.HookInput(SID, permission_mode="acceptEdits")
    assert hook.resume_args(payload, TranscriptTail(rows)) == [
        "--permission-mode", "acceptEdits", "--", "fix the flaky test",
    ]  # fmt: skip
    odd_mode = hook_payload.HookInput(SID, permission_mode="weird")
    assert hook.resume_args(odd_mode, TranscriptTail()) == ["--", hook.NO_TASK]


class FakeStore:
    """The Store calls the hook makes, answered like the API."""

    actor = "test"

    def __init__(self, *, offer: JSON | None = None) -> None:
        self.reports: list[tuple[str, str, JSON]] = []
        self.armed: list[str] = []
        self.offer = offer or {"available": True, "code": None, "detail": None}
        self.closed = False

    def get_session(self, root_id: str) -> JSON:
        if not self.reports:
            raise StoreError("session_not_found", f"no session {root_id!r}", 404)
        last = self.reports[-1][2]["attempt"]
        return {"root_id": root_id, "runs": [{"run_id": "interactive", "current_attempt": last,
                                              "attempts": [{"attempt": last}]}]}  # fmt: skip

    def report_failure(self, root_id: str, run_id: str, body: Mapping[str, Any]) -> JSON:
        self.reports.append((root_id, run_id, dict(body)))
        banner = {"business": "Paused · provider limit", "detail": "resets 17:40 CET, in 3 h"}
        return {"banner": banner, "auto_resume": self.offer}

    def set_auto_resume(self, root_id: str, *, enabled: bool, despite_native: bool = False) -> JSON:
        self.armed.append(root_id)
        return {"state": "armed", "due_at": "2026-11-30T16:40:30Z", "warnings": ["w1"]}

    def close(self) -> None:
        self.closed = True


def run(store: FakeStore, payload: JSON, tmp_path: Path, *, auto: bool) -> hook_payload.HookResult:
    env = {"REWAKE_STATE_DIR": str(tmp_path / "state"), **claude_env(tmp_path)}
    return hook.run_hook(json.dumps(payload), now=NOW, env=env, open_store=lambda: store,  # type: ignore[arg-type,return-value]
                         auto_resume=auto, zone="Europe/Berlin")  # fmt: skip


def payload_with_transcript(tmp_path: Path, last_uuid: str = "a1") -> JSON:
    rows = [{"type": "user", "message": {"content": "ship it"}, "uuid": "u0"},
            {"type": "assistant", "uuid": last_uuid}]  # fmt: skip
    path = transcript(tmp_path / f"{last_uuid}.jsonl", rows)
    return {**DOCUMENTED, "transcript_path": str(path), "cwd": str(tmp_path)}


def test_a_failure_is_reported_recorded_and_armed_with_auto_resume(tmp_path: Path) -> None:
    """First failure: attempt 1 under run `interactive`, a RunRecord to resume
    `claude -p --resume <id>` from the session's directory, and the mark armed."""
    store = FakeStore()
    result = run(store, payload_with_transcript(tmp_path), tmp_path, auto=True)
    assert [(r, run_id, body["attempt"]) for r, run_id, body in store.reports] == [
        (ROOT, "interactive", 1)
    ]
    assert store.armed == [ROOT] and result.armed and store.closed
    record = records.load(ROOT, {"REWAKE_STATE_DIR": str(tmp_path / "state")})
    assert record is not None
    assert (record.provider, record.cwd, record.cli_session_id, record.attempt, record.args) == (
        "claude", str(tmp_path), SID, 1, ["--", "ship it"],
    )  # fmt: skip
    assert record.extra["auto_resume"] is True
    assert result.lines[-1] == "warning: w1"


def test_the_record_resumes_through_rewake_runs_claude_resume_form() -> None:
    """rewake.runner.clis.providers turns the hook's record into `claude -p --resume <id>` with the
    session's permission mode and the executor's prompt (and a fresh start into the task)."""
    from rewake.runner.clis.providers import provider_named

    rows = [{"type": "user", "message": {"content": "ship it"}}]
    plan = hook_payload.HookInput(SID, permission_mode="plan")
    args = hook.resume_args(plan, TranscriptTail(rows))
    claude = provider_named("claude")
    assert claude.resume_argv("claude", args, SID, "go on") == [
        "claude", "-p", "--resume", SID, "--permission-mode", "plan", "--output-format",
        "stream-json", "--verbose", "--", "go on",
    ]  # fmt: skip
    assert claude.fresh_argv("claude", args, "new-id")[-2:] == ["--", "ship it"]


def test_the_same_failure_fired_twice_is_reported_once(tmp_path: Path) -> None:
    """Claude Code may fire StopFailure again for the failure it showed: the transcript's last
    row is unchanged, so no attempt 2 (which would clear the armed mark)."""
    store = FakeStore()
    payload = payload_with_transcript(tmp_path)
    run(store, payload, tmp_path, auto=True)
    again = run(store, payload, tmp_path, auto=True)
    assert len(store.reports) == 1
    assert again.lines == [f"{ROOT}: attempt 1 was already reported; nothing new"]
    run(store, payload_with_transcript(tmp_path, last_uuid="a2"), tmp_path, auto=True)
    assert [body["attempt"] for _, _, body in store.reports] == [1, 2]


def test_without_the_flag_it_prints_the_command_that_arms(tmp_path: Path) -> None:
    """No --auto-resume: nothing armed, the arming command is printed."""
    store = FakeStore()
    result = run(store, payload_with_transcript(tmp_path), tmp_path, auto=False)
    assert store.armed == []
    assert result.lines[-1] == f"to resume it when the limit resets: rewake auto-resume {ROOT} on"


def test_a_failure_not_offered_auto_resume_says_why_and_arms_nothing(tmp_path: Path) -> None:
    """The store's offer refusal is shown; native auto-continue names --despite-native."""
    offer = {"available": False, "code": "native_auto_continue", "detail": "Claude continues"}
    store = FakeStore(offer=offer)
    result = run(store, payload_with_transcript(tmp_path), tmp_path, auto=True)
    assert store.armed == []
    assert result.lines[-2:] == [
        "auto-resume not offered: Claude continues",
        f"to arm anyway: rewake auto-resume {ROOT} on --despite-native",
    ]


def test_another_hook_event_is_ignored(tmp_path: Path) -> None:
    """Wired to another event by mistake, the hook reports nothing and says so; a Stop of a
    session holding no workflow run reports nothing and says nothing: a finished turn is no
    failure."""
    store = FakeStore()
    result = run(store, {**DOCUMENTED, "hook_event_name": "PreToolUse"}, tmp_path, auto=True)
    assert store.reports == [] and "is not StopFailure, Stop" in result.lines[0]
    result = run(store, {**DOCUMENTED, "hook_event_name": "Stop"}, tmp_path, auto=True)
    assert store.reports == [] and result.lines == []


def test_the_command_exits_0_with_one_stderr_line_on_non_json_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`rewake hook claude` with junk on stdin: exit 0, one line on stderr, one in hook.log."""
    monkeypatch.setenv("REWAKE_STATE_DIR", str(tmp_path))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"\x00garbage")))
    assert main(["hook", "claude", "--auto-resume"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("rewake hook: ignored: stdin is not JSON")
    assert "ignored: stdin is not JSON" in (tmp_path / "hook.log").read_text()


# -- continuing by hand: UserPromptSubmit / SessionStart(resume) --------------------------------


def local_store(tmp_path: Path, now: datetime) -> Any:
    from rewake.runner.store.stores import LocalStore
    from rewake.settings import Settings

    return LocalStore(Settings(database_url=f"sqlite:///{tmp_path / 'r.db'}"), clock=lambda: now)


def limit_payload(tmp_path: Path, last_uuid: str) -> JSON:
    """A StopFailure whose transcript holds a rejected Opus weekly limit resetting at 17:00Z (a
    model's limit: interactive Claude Code offers a menu there, it does not continue by itself)."""
    said = "API Error: Request rejected (429) · The usage limit has been reached"
    rows = [{"type": "user", "message": {"content": "ship it"}, "uuid": "u0"},
            {"type": "rate_limit_event", "rate_limit_info": {"status": "rejected",
             "resetsAt": int(datetime(2026, 11, 30, 17, tzinfo=UTC).timestamp()),
             "rateLimitType": "seven_day_opus"}, "session_id": SID},
            {"type": "assistant", "message": {"model": "<synthetic>", "role": "assistant",
             "content": [{"type": "text", "text": said}]}, "isApiErrorMessage": True,
             "uuid": last_uuid}]  # fmt: skip
    path = transcript(tmp_path / f"{last_uuid}.jsonl", rows)
    return {**DOCUMENTED, "transcript_path": str(path), "cwd": str(tmp_path),
            "last_assistant_message": said}  # fmt: skip


def fire(
    tmp_path: Path, payload: JSON, *, opened: list[str] | None = None, **env: str
) -> hook_payload.HookResult:
    env = {"REWAKE_STATE_DIR": str(tmp_path / "state"), **claude_env(tmp_path), **env}

    def open_store() -> Any:
        if opened is not None:
            opened.append("store")
        return local_store(tmp_path, NOW)

    return hook.run_hook(json.dumps(payload), now=NOW, env=env, open_store=open_store,
                         auto_resume=True, zone="UTC")  # fmt: skip


PROMPT = {"session_id": SID, "hook_event_name": "UserPromptSubmit", "prompt": "go on"}


REOPENED = {"session_id": SID, "hook_event_name": "SessionStart", "source": "resume"}


@pytest.mark.parametrize("continued", [PROMPT, REOPENED])
def test_typing_after_a_limit_clears_the_armed_mark_as_a_manual_resume(
    tmp_path: Path, continued: JSON
) -> None:
    """StopFailure arms attempt 1; the user then types (or reopens the session): attempt 2 is
    recorded started and the mark is cleared (manual_resume), so no headless resume fires."""
    assert fire(tmp_path, limit_payload(tmp_path, "a1")).armed
    result = fire(tmp_path, continued)
    assert result.attempt == 2 and "attempt 2 started" in result.lines[0]
    store = local_store(tmp_path, NOW)
    mark = store.get_mark(ROOT)
    assert (mark["state"], mark["clear_reason"]) == ("cleared", "manual_resume")
    with pytest.raises(StoreError) as refused:
        store.set_auto_resume(ROOT, enabled=True)
    assert refused.value.status == 409  # attempt 1's resume was overtaken: never armed again
    store.close()


def test_later_prompts_are_free_and_the_next_failure_lands_on_the_started_attempt(
    tmp_path: Path,
) -> None:
    """After the continuation, more prompts open no store; a new limit fails attempt 2 (the one
    typed by hand, not a new 3) and arms it; typing again continues with attempt 3."""
    fire(tmp_path, limit_payload(tmp_path, "a1"))
    fire(tmp_path, PROMPT)
    opened: list[str] = []
    assert fire(tmp_path, PROMPT, opened=opened).lines == [] and opened == []
    again = fire(tmp_path, limit_payload(tmp_path, "a2"))
    assert again.attempt == 2 and again.armed
    assert fire(tmp_path, PROMPT).attempt == 3


@pytest.mark.parametrize(
    ("payload", "env"),
    [
        (PROMPT, {}),
        ({**PROMPT, "session_id": "0ther-session"}, {}),
        ({"session_id": SID, "hook_event_name": "SessionStart", "source": "startup"}, {}),
        (PROMPT, {"REWAKE_MARK_ID": "7"}),
    ],
)
def test_a_prompt_in_a_session_rewake_does_not_know_writes_nothing(
    tmp_path: Path, payload: JSON, env: dict[str, str]
) -> None:
    """Unknown session, a fresh SessionStart, or Claude run by rewake's own resume: silent, no
    store opened, nothing written."""
    if payload["session_id"] == "0ther-session" or env:
        fire(tmp_path, limit_payload(tmp_path, "a1"))  # SID is known, the prompt is elsewhere
    before = sorted(p.name for p in tmp_path.rglob("*"))
    opened: list[str] = []
    assert (fire(tmp_path, payload, opened=opened, **env).lines, opened) == ([], [])
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_a_failure_inside_a_cli_that_rewake_run_supervises_is_left_to_the_run(
    tmp_path: Path,
) -> None:
    """With REWAKE_SUPERVISED set (rewake run started this Claude), a StopFailure opens no
    store and writes nothing: the run records that attempt itself, under its own name."""
    before = sorted(p.name for p in tmp_path.rglob("*"))
    payload = limit_payload(tmp_path, "a1")
    listed = sorted(p.name for p in tmp_path.rglob("*"))  # the transcript written just now
    opened: list[str] = []
    result = fire(tmp_path, payload, opened=opened, REWAKE_SUPERVISED="1")
    assert (result.lines, result.armed, opened) == ([], False, [])
    assert sorted(p.name for p in tmp_path.rglob("*")) == listed and len(listed) > len(before)


# -- blocking a prompt while rewake resumes the conversation headless ----------------------------


def set_mark_state(tmp_path: Path, state: str) -> None:
    """Put the session's mark in `state`, as the sweeper does when it sends the resume."""
    import sqlite3

    with sqlite3.connect(tmp_path / "r.db") as db:
        db.execute("UPDATE marks SET state = ? WHERE root_id = ?", (state, ROOT))


def attempt_statuses(tmp_path: Path) -> list[str]:
    store = local_store(tmp_path, NOW)
    try:
        [run] = store.get_session(ROOT)["runs"]
        return [a["status"] for a in run["attempts"]]
    finally:
        store.close()


@pytest.mark.parametrize("state", ["sending", "uncertain"])
def test_a_prompt_while_the_mark_is_sending_is_blocked_and_records_nothing(
    tmp_path: Path, state: str
) -> None:
    """Mark sending (or uncertain): the prompt is blocked with the reason and `rewake show`,
    no attempt is recorded started, and the record is not marked continued."""
    assert fire(tmp_path, limit_payload(tmp_path, "a1")).armed
    set_mark_state(tmp_path, state)
    result = fire(tmp_path, PROMPT, REWAKE_HOOK_LOOK_WAIT_S="0")
    assert result.blocked and result.attempt is None
    [line] = result.lines
    assert "resuming this conversation headless right now" in line and state in line
    assert f"rewake show {ROOT}" in line and "type again once it ends" in line
    assert attempt_statuses(tmp_path) == ["failed"]
    record = records.load(ROOT, {"REWAKE_STATE_DIR": str(tmp_path / "state")})
    assert record is not None and hook_payload.CONTINUED not in record.extra


def test_a_prompt_while_a_rewake_run_holds_the_session_lock_is_blocked(tmp_path: Path) -> None:
    """Another descriptor holds the SessionLock (a `rewake run` resuming): blocked, nothing
    recorded, no store opened; once the lock is free the same prompt continues as before."""
    import fcntl

    from rewake.runner.hook.continuing import lock_holder

    assert fire(tmp_path, limit_payload(tmp_path, "a1")).armed
    env = {"REWAKE_STATE_DIR": str(tmp_path / "state")}
    path = records.lock_path(ROOT, env)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+", encoding="utf-8") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("pid 4242: resume-of mark 1\n")
        held.flush()
        opened: list[str] = []
        result = fire(tmp_path, PROMPT, opened=opened, REWAKE_HOOK_LOOK_WAIT_S="0")
        assert result.blocked and opened == [] and "pid 4242: resume-of mark 1" in result.lines[0]
        assert attempt_statuses(tmp_path) == ["failed"]
    assert lock_holder(ROOT, env) is None  # the hook's probe let go of it at once
    after = fire(tmp_path, PROMPT)
    assert not after.blocked and after.attempt == 2


def test_a_prompt_during_a_look_that_defers_goes_through_once_the_look_ends(
    tmp_path: Path,
) -> None:
    """The sweeper's resume holds the lock with the mark sending while it only looks (an open
    Claude continues by itself): Claude's own continuation arriving then waits for the look,
    and once the lock is free and the mark armed again (deferred), it is recorded as the
    continuation (attempt 2 started, the mark cleared) instead of being blocked."""
    import fcntl
    import threading

    assert fire(tmp_path, limit_payload(tmp_path, "a1")).armed
    env = {"REWAKE_STATE_DIR": str(tmp_path / "state")}
    path = records.lock_path(ROOT, env)
    path.parent.mkdir(parents=True, exist_ok=True)
    held = path.open("a+", encoding="utf-8")
    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    set_mark_state(tmp_path, "sending")

    def the_look_defers() -> None:
        time.sleep(0.6)
        fcntl.flock(held, fcntl.LOCK_UN)
        held.close()
        time.sleep(0.3)
        set_mark_state(tmp_path, "armed")

    looking = threading.Thread(target=the_look_defers)
    looking.start()
    try:
        result = fire(tmp_path, PROMPT, REWAKE_HOOK_LOOK_WAIT_S="5")
    finally:
        looking.join()
    assert not result.blocked and result.attempt == 2
    assert attempt_statuses(tmp_path) == ["failed", "started"]
    store = local_store(tmp_path, NOW)
    try:
        assert (store.get_session(ROOT).get("mark") or {}).get("state") == "cleared"
    finally:
        store.close()


def test_a_prompt_during_a_resume_that_runs_is_blocked_after_the_wait(tmp_path: Path) -> None:
    """A resume that really runs (the mark stays sending past the wait): the prompt is blocked
    after REWAKE_HOOK_LOOK_WAIT_S, nothing recorded."""
    assert fire(tmp_path, limit_payload(tmp_path, "a1")).armed
    set_mark_state(tmp_path, "sending")
    started = time.monotonic()
    result = fire(tmp_path, PROMPT, REWAKE_HOOK_LOOK_WAIT_S="1")
    assert result.blocked and time.monotonic() - started >= 1
    assert attempt_statuses(tmp_path) == ["failed"]


def test_a_reopened_session_during_the_resume_is_warned_not_recorded(tmp_path: Path) -> None:
    """SessionStart(resume) while the mark is sending: the same condition gives a warning
    (blocked, so the command's exit 2 shows it; Claude cannot block a SessionStart), and
    nothing is recorded."""
    fire(tmp_path, limit_payload(tmp_path, "a1"))
    set_mark_state(tmp_path, "sending")
    result = fire(tmp_path, REOPENED)
    assert result.blocked and "do not type here until it ends" in result.lines[0]
    assert attempt_statuses(tmp_path) == ["failed"]


def test_without_a_conflict_a_prompt_is_not_blocked(tmp_path: Path) -> None:
    """Mark armed and no lock held: the prompt continues by hand as before, never blocked."""
    fire(tmp_path, limit_payload(tmp_path, "a1"))
    result = fire(tmp_path, PROMPT)
    assert not result.blocked and result.attempt == 2
    assert attempt_statuses(tmp_path) == ["failed", "started"]


def test_the_command_exits_2_with_the_reason_on_stderr_when_blocked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`rewake hook claude` on a prompt during a sending resume: exit 2, reason on stderr,
    nothing on stdout (the one non-zero status of the hook)."""
    monkeypatch.setenv("REWAKE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("REWAKE_DATABASE_URL", f"sqlite:///{tmp_path / 'r.db'}")
    monkeypatch.delenv("REWAKE_URL", raising=False)
    monkeypatch.setenv("REWAKE_HOOK_LOOK_WAIT_S", "0")
    fire(tmp_path, limit_payload(tmp_path, "a1"))
    set_mark_state(tmp_path, "sending")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(PROMPT).encode())))
    assert main(["hook", "claude"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "prompt blocked" in err and f"rewake show {ROOT}" in err


SEEN = datetime(2026, 12, 1, 20, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("scope", "hours_ahead", "continues"),
    [
        ("five_hour", 2, True),  # "Continuing automatically at ..." on the real 2.1.332 screen
        ("weekly", 20, True),  # a weekly reset under a day ahead: the same screen
        ("extra_usage", 3, True),  # the overage limit: the same screen
        ("weekly", 72, False),  # three days ahead: a menu, the user chooses
        ("model", 2, False),  # an Opus limit: a menu
        (None, 2, False),  # no limit named: nothing says Claude waits
    ],
)
def test_interactive_claude_continues_by_itself_after_window_limits_under_a_day(
    scope: str | None, hours_ahead: int, continues: bool
) -> None:
    """The hook leaves a limit to Claude Code when its screen would say it continues by itself."""
    reset_at = SEEN.timestamp() + hours_ahead * 3600
    verdict = {"kind": "provider_quota", "scope": scope, "native_auto_continue": False,
               "reset_at": datetime.fromtimestamp(reset_at, UTC).isoformat()}  # fmt: skip
    assert hook.continues_by_itself(verdict, SEEN) is continues


def test_a_verdict_that_says_so_continues_and_a_refusal_does_not() -> None:
    """A banner that states native auto-continue counts; a limit with no reset never does."""
    assert hook.continues_by_itself({"native_auto_continue": True}, SEEN)
    assert not hook.continues_by_itself(
        {"kind": "provider_quota", "scope": "five_hour", "reset_at": None}, SEEN
    )


class LimitStore(FakeStore):
    """A FakeStore whose answer is a provider limit with a verdict."""

    def __init__(self, verdict: JSON) -> None:
        super().__init__()
        self.verdict = verdict

    def report_failure(self, root_id: str, run_id: str, body: Mapping[str, Any]) -> JSON:
        return {**super().report_failure(root_id, run_id, body),
                "failure_kind": "provider_quota", "verdict": self.verdict}  # fmt: skip


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        ("five_hour", "the CLI continues it by itself at the reset"),
        ("model", "auto-resume is on: due at "),
    ],
)
def test_the_pause_notice_says_what_resumes_the_session(
    tmp_path: Path, scope: str, expected: str
) -> None:
    """The hook's one pause notice says Claude Code continues by itself where the hook leaves
    the limit to it, and the armed resume's due time where it armed one."""
    reset_at = (NOW + timedelta(hours=2)).isoformat()
    store = LimitStore({"kind": "provider_quota", "scope": scope, "reset_at": reset_at})
    sent: list[Any] = []
    env = {"REWAKE_STATE_DIR": str(tmp_path / "state"), **claude_env(tmp_path)}
    hook.run_hook(json.dumps(payload_with_transcript(tmp_path)), now=NOW, env=env,
                  open_store=lambda: store, auto_resume=True, zone="Europe/Berlin",  # type: ignore[arg-type,return-value]
                  announce=sent.append)  # fmt: skip
    assert [notice.title for notice in sent] == [f"Paused · provider limit · {ROOT}"]
    assert sent[0].body.splitlines()[1].startswith(expected)


def test_the_resume_rewake_typed_into_the_session_is_let_through(tmp_path: Path) -> None:
    """Mark sending because rewake typed the resume into this very session (the record notes
    the prompt): that prompt is not blocked, it records the next attempt started, and the note
    is used once; any other prompt meanwhile is still blocked."""
    assert fire(tmp_path, limit_payload(tmp_path, "a1")).armed
    set_mark_state(tmp_path, "sending")
    env = {"REWAKE_STATE_DIR": str(tmp_path / "state")}
    record = records.load(ROOT, env)
    assert record is not None
    typed = "Continue the task from where it stopped."
    records.save(replace(record, extra={**record.extra, records.TYPED_RESUME: typed}), env)
    other = {**PROMPT, "prompt": "something else"}
    assert fire(tmp_path, other, REWAKE_HOOK_LOOK_WAIT_S="0").blocked
    result = fire(tmp_path, {**PROMPT, "prompt": typed})
    assert not result.blocked and result.attempt == 2
    assert attempt_statuses(tmp_path) == ["failed", "started"]
    after = records.load(ROOT, env)
    assert after is not None and records.TYPED_RESUME not in after.extra


# -- Claude Code's own auto-continue: the Notification hook --------------------------------------


def notification(kind: str, message: str) -> JSON:
    """A Notification payload as Claude Code 2.1.332 builds it: the common fields, then
    `message`, `title` (left out when Claude names none) and `notification_type`."""
    return {"session_id": SID, "transcript_path": "/nowhere.jsonl", "cwd": "/work",
            "hook_event_name": "Notification", "message": message,
            "notification_type": kind}  # fmt: skip


STALE = notification("quota_auto_resume_stale", "Usage limit reset — press enter to continue")
DISABLED = notification(
    "quota_auto_resume_disabled",
    "Automatic continue stopped — the usage limit now resets more than 24 hours out; the task "
    "will not resume on its own",
)
FIRED = notification(
    "quota_auto_resume_fired", "Usage limit reset — Claude is continuing your task"
)


def five_hour_payload(tmp_path: Path) -> JSON:
    """A StopFailure on a five-hour limit resetting in under 3 h: interactive Claude Code
    continues by itself there, so the hook arms nothing."""
    payload = limit_payload(tmp_path, "a1")
    path = Path(payload["transcript_path"])
    path.write_text(path.read_text().replace('"seven_day_opus"', '"five_hour"'))
    return payload


def native_note(tmp_path: Path) -> Any:
    record = records.load(ROOT, {"REWAKE_STATE_DIR": str(tmp_path / "state")})
    assert record is not None
    return record.extra.get(records.NATIVE)


@pytest.mark.parametrize("gave_up", [STALE, DISABLED])
def test_claude_giving_up_its_own_continue_arms_the_mark_the_hook_did_not(
    tmp_path: Path, gave_up: JSON
) -> None:
    """The hook stood down on a five-hour limit (Claude continues by itself); Claude then
    reports it will not (stale or disabled): the mark is armed now and the record notes why."""
    stood_down = fire(tmp_path, five_hour_payload(tmp_path))
    assert not stood_down.armed and "continues this session by itself" in " ".join(stood_down.lines)
    result = fire(tmp_path, gave_up)
    assert result.armed
    store = local_store(tmp_path, NOW)
    assert store.get_mark(ROOT)["state"] == "armed"
    store.close()
    note = native_note(tmp_path)
    assert (note["attempt"], note["type"]) == (1, gave_up["notification_type"])


def test_claude_giving_up_leaves_an_armed_mark_as_it_is(tmp_path: Path) -> None:
    """A model's limit: the hook armed mark 1; Claude's stale report keeps that mark (no second
    one) and notes the attempt, which the fire-time check reads."""
    assert fire(tmp_path, limit_payload(tmp_path, "a1")).armed
    store = local_store(tmp_path, NOW)
    before = store.get_mark(ROOT)
    store.close()
    result = fire(tmp_path, STALE)
    store = local_store(tmp_path, NOW)
    after = store.get_mark(ROOT)
    store.close()
    assert (after["id"], after["state"]) == (before["id"], "armed")
    assert "types the resume into this Claude Code" in result.lines[-1]
    assert native_note(tmp_path)["type"] == "quota_auto_resume_stale"


def test_claude_continuing_by_itself_is_noted_without_opening_the_store(tmp_path: Path) -> None:
    """quota_auto_resume_fired: the record notes that Claude continued the attempt; nothing is
    armed and the store is not opened."""
    fire(tmp_path, five_hour_payload(tmp_path))
    opened: list[str] = []
    result = fire(tmp_path, FIRED, opened=opened)
    assert opened == [] and not result.armed
    assert native_note(tmp_path)["type"] == "quota_auto_resume_fired"


@pytest.mark.parametrize(
    "payload",
    [
        notification("idle_prompt", "Claude is waiting for your input"),
        notification("permission_prompt", "Claude needs your permission to use Bash"),
        {**STALE, "session_id": "0ther-session"},
    ],
)
def test_other_notifications_and_unknown_sessions_store_nothing(
    tmp_path: Path, payload: JSON
) -> None:
    """Any other notification type, or one for a session rewake never reported: silent, no
    store opened, nothing written."""
    fire(tmp_path, limit_payload(tmp_path, "a1"))
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    opened: list[str] = []
    assert (fire(tmp_path, payload, opened=opened).lines, opened) == ([], [])
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == before


def test_a_new_failure_forgets_what_claude_said_of_the_last_one(tmp_path: Path) -> None:
    """Claude's note belongs to one attempt: the next StopFailure's record drops it."""
    fire(tmp_path, five_hour_payload(tmp_path))
    fire(tmp_path, FIRED)
    fire(tmp_path, PROMPT)
    fire(tmp_path, limit_payload(tmp_path, "a2"))
    assert native_note(tmp_path) is None
