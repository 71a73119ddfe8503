"""End to end with real processes on a real SQLite file: `rewake ls`, `show` and `auto-resume`
after a hook report, their refusals in words, and their exit statuses."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rewake import heartbeats
from rewake.db.engine import SQLITE_BUSY_TIMEOUT_MS, Database
from tests.support.db import migrate
from tests.support.sweeper import REPO, arm, rewake_env

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


def claude_env(env: dict[str, str], tmp: Path) -> dict[str, str]:
    """`env` with CLAUDE_CONFIG_DIR where `stated_limit(tmp, ...)` wrote the transcript."""
    return {**env, "CLAUDE_CONFIG_DIR": str(tmp / "claude")}


def stated_limit(tmp: Path, session_id: str) -> str:
    """A StopFailure whose transcript holds a rejected limit with a stated reset an hour on."""
    said = "API Error: Request rejected (429) · The usage limit has been reached"
    rows = [
        {"type": "rate_limit_event", "rate_limit_info": {"status": "rejected",
         "resetsAt": int(time.time()) + 3600, "rateLimitType": "seven_day"}},
        {"type": "assistant", "message": {"model": "<synthetic>", "role": "assistant", "content": [
            {"type": "text", "text": said}]}, "isApiErrorMessage": True, "uuid": "a-1"},
    ]  # fmt: skip
    # The hook reads a transcript only under CLAUDE_CONFIG_DIR/projects: `claude_env(tmp)`.
    transcript = tmp / "claude" / "projects" / "p" / f"{session_id}.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
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
    hooked = rewake(
        claude_env(env, project_a),
        "hook",
        "claude",
        stdin=stated_limit(project_a, sid),
        cwd=project_a,
    )
    assert "attempt 1 reported" in hooked.stderr, hooked.stderr
    armed = rewake(env, "auto-resume", f"claude-{sid}", "on", "--anyway", cwd=project_a)
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
    assert (
        rewake(
            claude_env(env, tmp_path), "hook", "claude", stdin=stated_limit(tmp_path, sid)
        ).returncode
        == 0
    )
    on = rewake(env, "auto-resume", f"claude-{sid}", "on", "--fresh-if-missing", "--anyway")
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
    """`rewake ls` and `show` answer while another process holds the database's write lock:
    opening the store for a read takes no write lock (it waited out the busy timeout)."""
    path = env["REWAKE_DATABASE_URL"].removeprefix("sqlite:///")
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        answer = subprocess.run(
            [sys.executable, "-m", "rewake", *command], capture_output=True, text=True,
            env={**env, "COLUMNS": "160"}, cwd=str(REPO), timeout=60, check=False,
        )  # fmt: skip
        took = time.monotonic() - started
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert answer.returncode == 0, answer.stderr
    assert ROOT in answer.stdout
    # A read that waited for the lock would take the busy timeout at least (and then fail);
    # one that did not takes what starting rewake takes: up to 15 s on CI's busiest minutes.
    assert took < SQLITE_BUSY_TIMEOUT_MS / 1000 - 5, took


#: What a reporter or a webhook host could send to take over the user's terminal: an OSC 52
#: clipboard write, an OSC 0 window title, an OSC 8 link, a CSI clear screen (7-bit and as the
#: 8-bit C1 codes U+009B and U+009D), a carriage return that paints over the line, and Rich
#: markup that would become a link.
HOSTILE = (
    "\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;owned\x07\x1b]8;;http://evil.example\x1b\\click\x1b]8;;"
    "\x1b\\\x1b[2J\x9b2J\x9d0;owned\x9c\rover[link=http://evil.example]x[/link]"
)
#: A control character a terminal acts on: C0 but tab and newline, DEL, C1.
ACTED_ON = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class _HostileHost(BaseHTTPRequestHandler):
    """Refuses each resume with a problem code full of escapes (session hostile-code), or a
    raw answer full of them (any other session)."""

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path.startswith("/hostile-code/"):
            status, body = 409, json.dumps({"code": HOSTILE[:40], "detail": HOSTILE}).encode()
        else:
            status, body = 500, HOSTILE.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Two sessions whose failure text and zone carry escapes, armed and then refused by a
    webhook host whose problem code (one) or answer (the other) carries them too."""
    tmp = tmp_path_factory.mktemp("hostile")
    url = f"sqlite:///{tmp / 'rewake.db'}"
    migrate(url)
    database = Database(url)
    now = datetime.now(UTC)
    reset = int(now.timestamp()) + 2
    for root in ("hostile-code", "hostile-answer"):
        arm(database, root, message=f"{HOSTILE}\nClaude AI usage limit reached|{reset}",
            observed_at=now, now=now, zone=HOSTILE[:64], delay_s=0)  # fmt: skip
    database.dispose()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _HostileHost)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = rewake_env(
        url, state_dir=tmp / "state", executor="webhook", webhook_secret="s" * 24,
        webhook_url=f"http://127.0.0.1:{server.server_port}/{{root_id}}/resume",
    )  # fmt: skip
    try:
        time.sleep(max(0.0, reset - time.time()) + 0.2)
        swept = rewake(env, "sweep", "--once")
        assert swept.returncode == 0, swept.stderr
    finally:
        server.shutdown()
        server.server_close()
    return env


@pytest.mark.parametrize(
    "command",
    [("ls",), ("show", "hostile-code"), ("show", "hostile-answer"), ("ls", "--json"),
     ("show", "hostile-code", "--json"), ("show", "hostile-answer", "--json")],
)  # fmt: skip
def test_no_control_character_reaches_the_terminal(
    hostile: dict[str, str], command: tuple[str, ...]
) -> None:
    """Escapes in a failure's CLI text, its zone, a host's problem code and a host's answer
    are shown as visible escapes (\\x1b, \\x9b), never written raw, in `ls` and `show`; with
    --json too (JSON left C1 raw), where they still read back as the same values."""
    answer = rewake(hostile, *command)
    assert answer.returncode == 0, answer.stderr
    raw = ACTED_ON.findall(answer.stdout)
    assert not raw, (raw, answer.stdout)
    if "--json" in command:
        value = json.loads(answer.stdout)
        sessions = value.get("sessions", [value])
        assert all(s["mark"]["state"] == "failed" for s in sessions)
        if command[1:2] == ("hostile-code",):
            assert value["mark"]["outcome"] == HOSTILE[:40]
            assert value["runs"][0]["attempts"][0]["failure"]["zone"] == HOSTILE[:64]
    elif command[0] == "show":
        assert "\\x1b]52;c;" in answer.stdout  # shown, so it can be read
        assert "[link=http://evil.example]x[/link]" in answer.stdout  # text, not markup


def _sweeper_seen(url: str, executor: str) -> None:
    """A heartbeat as a running sweeper with `executor` writes it, now."""
    database = Database(url)
    try:
        with database.writer() as db, db.begin():
            heartbeats.record_heartbeat(
                db, f"seen-{executor}", datetime.now(UTC), host="here", pid=1, executor=executor
            )
    finally:
        database.dispose()


def test_auto_resume_on_refuses_while_no_sweeper_would_fire_it(tmp_path: Path) -> None:
    """With no sweeper seen, or only one that logs, `auto-resume NAME on` arms nothing, says
    why and how to fix it (exit 3); `--anyway` arms; a sweeper that resumes lets it arm."""
    url = f"sqlite:///{tmp_path / 'r.db'}"
    env = rewake_env(url, state_dir=tmp_path / "state")
    sid = "5e1f0c2a-0000-4000-8000-00000000000c"
    assert (
        rewake(
            claude_env(env, tmp_path), "hook", "claude", stdin=stated_limit(tmp_path, sid)
        ).returncode
        == 0
    )

    refused = rewake(env, "auto-resume", f"claude-{sid}", "on")
    assert refused.returncode == 3
    assert "not armed: no sweeper seen in the last 90 s" in refused.stderr
    assert "rewake setup" in refused.stderr and "--anyway" in refused.stderr
    shown = json.loads(rewake(env, "show", f"claude-{sid}", "--json").stdout)
    assert not shown["mark"]["enabled"], shown["mark"]

    _sweeper_seen(url, "log")
    logged = rewake(env, "auto-resume", f"claude-{sid}", "on")
    assert logged.returncode == 3 and "executor is log" in logged.stderr, logged.stderr

    anyway = rewake(env, "auto-resume", f"claude-{sid}", "on", "--anyway")
    assert anyway.returncode == 0, anyway.stderr
    assert "executor is log: nothing will be resumed" in anyway.stdout
    assert rewake(env, "auto-resume", f"claude-{sid}", "off").returncode == 0

    _sweeper_seen(url, "command")
    armed = rewake(env, "auto-resume", f"claude-{sid}", "on")
    assert armed.returncode == 0, armed.stderr
    assert "nothing will be resumed" not in armed.stdout and "no sweeper" not in armed.stdout
