"""End to end with real processes on a real SQLite file: `rewake ls`, `show` and `auto-resume`
after a hook report, their refusals in words, and their exit statuses."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sweeper_support import REPO, rewake_env

SID = "7d0c5b1e-2a3f-4e6d-9c8b-1a2b3c4d5e6f"
ROOT = f"claude-{SID}"


def rewake(
    env: dict[str, str], *args: str, stdin: str | None = None, cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewake", *args], input=stdin, capture_output=True, text=True,
        env={**env, "COLUMNS": "160"}, cwd=str(cwd), timeout=60, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A store holding one Claude session paused on a limit that states no reset."""
    tmp = tmp_path_factory.mktemp("views")
    env = rewake_env(f"sqlite:///{tmp / 'rewake.db'}", state_dir=tmp / "state")
    env["TZ"] = "Europe/Berlin"
    payload = {"session_id": SID, "hook_event_name": "StopFailure", "error": "rate_limit",
               "last_assistant_message": "5 hour limit reached", "cwd": str(tmp)}  # fmt: skip
    hooked = rewake(env, "hook", "claude", stdin=json.dumps(payload))
    assert hooked.returncode == 0 and "attempt 1 reported" in hooked.stderr, hooked.stderr
    assert "auto-resume not offered: the reset time was not stated" in hooked.stderr
    return env


def test_auto_resume_on_without_a_stated_reset_is_refused_in_words(env: dict[str, str]) -> None:
    """`rewake auto-resume NAME on` for a not-stated reset: exit 3 and the 409 reason."""
    answer = rewake(env, "auto-resume", ROOT, "on")
    assert answer.returncode == 3
    assert answer.stderr.startswith(
        "rewake auto-resume: refused (reset_not_stated): the limit message states no reset time"
    )
    assert "Traceback" not in answer.stderr


def test_an_unknown_name_is_exit_4_with_the_store_code(env: dict[str, str]) -> None:
    """`rewake show` of a valid but unknown NAME: one line with the code, exit 4."""
    answer = rewake(env, "show", "no-such-session")
    assert answer.returncode == 4
    assert answer.stderr.startswith("rewake show: session_not_found: ")
    assert len(answer.stderr.splitlines()) == 1


@pytest.mark.parametrize("command", [("show",), ("auto-resume",)])
def test_an_invalid_name_is_bad_usage_exit_2_with_the_reason(
    env: dict[str, str], command: tuple[str, ...]
) -> None:
    """A NAME that cannot be a root id is bad usage (exit 2, as the README says), not "no such
    session": one line naming the allowed characters."""
    args = [*command, "bad name!"] + (["on"] if command == ("auto-resume",) else [])
    answer = rewake(env, *args)
    assert answer.returncode == 2
    assert answer.stderr.startswith(f"rewake {command[0]}: invalid_request: NAME 'bad name!'")
    assert "A-Z a-z 0-9" in answer.stderr and len(answer.stderr.splitlines()) == 1


def test_ls_lists_and_filters_the_session(env: dict[str, str]) -> None:
    """The table names the session with its banner and reason; filters select it or not."""
    table = rewake(env, "ls")
    assert table.returncode == 0
    [header, row] = table.stdout.splitlines()
    assert header.split()[:3] == ["NAME", "PROVIDER", "STATE"]
    assert row.startswith(ROOT) and "Paused · provider limit" in row
    assert "the reset time was not stated" in row and row.rstrip().endswith("off")
    assert ROOT in rewake(env, "ls", "--state", "paused", "--provider", "claude").stdout
    assert rewake(env, "ls", "--state", "running").stdout == "no sessions (state running)\n"


def test_show_prints_banner_offer_failure_tail_and_timeline(env: dict[str, str]) -> None:
    """`rewake show NAME`: the banner, why auto-resume is not offered, the CLI text, events."""
    shown = rewake(env, "show", ROOT)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "Paused · provider limit: the reset time was not stated" in text
    assert "not offered: the limit message states no reset time" in text
    assert "│ 5 hour limit reached" in text
    assert "failure_reported" in text


def stated_limit(tmp: Path, session_id: str) -> str:
    """A StopFailure whose transcript holds a rejected limit with a stated reset an hour on."""
    said = "API Error: Request rejected (429) · The usage limit has been reached"
    rows = [
        {"type": "rate_limit_event", "rate_limit_info": {"status": "rejected",
         "resetsAt": int(time.time()) + 3600, "rateLimitType": "seven_day"}},
        {"type": "assistant", "message": {"model": "<synthetic>", "role": "assistant", "content": [
            {"type": "text", "text": said}]}, "isApiErrorMessage": True, "uuid": "a-1"},
    ]  # fmt: skip
    transcript = tmp / f"{session_id}.jsonl"
    transcript.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return json.dumps({"session_id": session_id, "transcript_path": str(transcript),
                       "cwd": str(tmp), "hook_event_name": "StopFailure", "error": "rate_limit",
                       "last_assistant_message": said})  # fmt: skip


def test_one_database_per_user_wherever_the_command_runs(tmp_path: Path) -> None:
    """REWAKE_DATABASE_URL unset: the hook (run in project A, as Claude Code runs hooks) and
    auto-resume write the state dir's rewake.db, and `rewake show` in project B finds the
    session; no rewake.db appears in either project."""
    env = rewake_env("unused", state_dir=tmp_path / "state")
    del env["REWAKE_DATABASE_URL"]
    project_a, project_b = tmp_path / "a", tmp_path / "b"
    project_a.mkdir()
    project_b.mkdir()
    sid = "5e1f0c2a-0000-4000-8000-00000000000a"
    hooked = rewake(env, "hook", "claude", stdin=stated_limit(project_a, sid), cwd=project_a)
    assert "attempt 1 reported" in hooked.stderr, hooked.stderr
    armed = rewake(env, "auto-resume", f"claude-{sid}", "on", cwd=project_a)
    assert armed.returncode == 0, armed.stderr
    shown = rewake(env, "show", f"claude-{sid}", "--json", cwd=project_b)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["mark"]["state"] == "armed"
    assert (tmp_path / "state" / "rewake.db").is_file()
    assert not (project_a / "rewake.db").exists() and not (project_b / "rewake.db").exists()
    doctor = rewake(env, "doctor", cwd=project_b)
    assert f"store: the local SQLite file {tmp_path / 'state' / 'rewake.db'}" in doctor.stdout
    assert "a sweeper for these sessions needs REWAKE_DATABASE_URL=sqlite:///" in doctor.stdout


def test_auto_resume_off_clears_fresh_if_missing(tmp_path: Path) -> None:
    """`auto-resume NAME on --fresh-if-missing` sets the record's flag; `off` clears it, so a
    later arming never starts a fresh conversation nobody asked for."""
    env = rewake_env(f"sqlite:///{tmp_path / 'r.db'}", state_dir=tmp_path / "state")
    sid = "5e1f0c2a-0000-4000-8000-00000000000b"
    record = tmp_path / "state" / "runs" / f"claude-{sid}.json"
    assert rewake(env, "hook", "claude", stdin=stated_limit(tmp_path, sid)).returncode == 0
    on = rewake(env, "auto-resume", f"claude-{sid}", "on", "--fresh-if-missing")
    assert on.returncode == 0 and json.loads(record.read_text())["fresh_if_missing"] is True
    off = rewake(env, "auto-resume", f"claude-{sid}", "off")
    assert off.returncode == 0, off.stderr
    assert "--fresh-if-missing: cleared" in off.stdout
    assert json.loads(record.read_text())["fresh_if_missing"] is False


#: What each fake CLI prints for `--version` and its help commands (argv -> text): the flags
#: rewake relies on, as the real CLIs' help pages spell them.
FAKE_CLIS = {
    "claude": {"--version": "2.1.220 (Claude Code)", "--help": "-p, --print\n--output-format "
               "<format>\n--verbose\n--session-id <uuid>\n-r, --resume [value]"},
    "codex": {"--version": "codex-cli 0.60.0", "--help": "Commands:\n  exec  Run non-interactively",
              "exec --help": "Usage: codex exec [OPTIONS]\n  resume\n  --json"},
    "gemini": {"--version": "0.9.0", "--help": "-p, --prompt\n-o, --output-format\n-r, --resume"},
}  # fmt: skip


def fake_clis(bin_dir: Path, drop: str | None = None) -> None:
    """Shell scripts (builtins only: PATH holds nothing else) answering FAKE_CLIS; `drop`
    removes that flag from every help page."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, pages in FAKE_CLIS.items():
        cases = "".join(
            f"  \"{argv}\") printf '%s\\n' '{text.replace(drop, '--gone') if drop else text}' ;;\n"
            for argv, text in pages.items()
        )
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\ncase "$*" in\n{cases}  *) exit 2 ;;\nesac\n')
        script.chmod(0o755)


def test_doctor_as_a_process_checks_fake_clis_on_path(tmp_path: Path) -> None:
    """The real `rewake doctor` against fake claude/codex/gemini on PATH: exit 0 with each
    version; without `--session-id` in claude's help, exit 1 naming it."""
    env = rewake_env(f"sqlite:///{tmp_path / 'r.db'}", state_dir=tmp_path / "state")
    env["PATH"] = str(tmp_path / "bin")
    fake_clis(tmp_path / "bin")
    ok = rewake(env, "doctor")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert f"✓ claude: {tmp_path / 'bin' / 'claude'} (2.1.220 (Claude Code))" in ok.stdout
    assert "✓ codex:" in ok.stdout and "✓ gemini: " in ok.stdout
    assert f"store: the local SQLite file {tmp_path / 'r.db'} (REWAKE_DATABASE_URL)" in ok.stdout
    fake_clis(tmp_path / "bin", drop="--session-id")
    broken = rewake(env, "doctor")
    assert broken.returncode == 1
    assert "missing flag --session-id (not in `claude --help`)" in broken.stdout


@pytest.mark.parametrize("command", [("ls",), ("show", ROOT), ("ls", "--json")])
def test_reads_do_not_wait_behind_a_writer(env: dict[str, str], command: tuple[str, ...]) -> None:
    """`rewake ls` and `show` answer at once while another process holds the database's write
    lock: opening the store for a read takes no write lock (it waited out the busy timeout)."""
    path = env["REWAKE_DATABASE_URL"].removeprefix("sqlite:///")
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        answer = subprocess.run(
            [sys.executable, "-m", "rewake", *command], capture_output=True, text=True,
            env={**env, "COLUMNS": "160"}, cwd=str(REPO), timeout=20, check=False,
        )  # fmt: skip
        took = time.monotonic() - started
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert answer.returncode == 0, answer.stderr
    assert ROOT in answer.stdout
    assert took < 10, took
