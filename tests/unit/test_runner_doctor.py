"""`rewake doctor` against fake `claude`/`codex`/`gemini` scripts on a PATH the test sets."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rewake.cli import main
from rewake.runner.setup import doctor
from tests.support.sweeper import free_port

NOW = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)

CLAUDE_HELP = """Usage: claude [options] [command] [prompt]
  -p, --print                 Print response and exit
  --output-format <format>    "text", "json" or "stream-json"
  --verbose                   Override verbose mode
  --session-id <uuid>         Use a specific session ID
  -r, --resume [value]        Resume a conversation
"""
CODEX_HELP = "Commands:\n  exec     Run Codex non-interactively\n  resume   Resume a session\n"
CODEX_EXEC_HELP = "Usage: codex exec [OPTIONS] [PROMPT]\nCommands:\n  resume\n  --json  JSONL\n"
GEMINI_HELP = "  -p, --prompt  Prompt\n  -o, --output-format  json|stream-json\n  -r, --resume\n"


def fake_cli(directory: Path, name: str, helps: dict[str, str], version: str = "1.0.0") -> Path:
    """A shell script answering `--version` and the help commands in `helps` (argv -> text),
    using only shell builtins: the test's PATH holds nothing else."""
    cases = ""
    for n, (argv, text) in enumerate(helps.items()):
        page = directory / f".{name}-help-{n}.txt"
        page.write_text(text)
        cases += f'  "{argv}") while IFS= read -r line; do echo "$line"; done < "{page}" ;;\n'
    script = directory / name
    script.write_text(
        f'#!/bin/sh\ncase "$*" in\n  "--version") echo "{version}" ;;\n{cases}'
        '  *) echo "unknown: $*" >&2; exit 2 ;;\nesac\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A PATH of only the test's bin dir, a local SQLite store and state dir in tmp_path."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("REWAKE_URL", "REWAKE_TOKEN", "REWAKE_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("REWAKE_DATABASE_URL", f"sqlite:///{tmp_path / 'r.db'}")
    monkeypatch.setenv("REWAKE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TZ", "Europe/Berlin")
    return dict(os.environ)


def all_three(bin_dir: Path, claude_help: str = CLAUDE_HELP) -> None:
    fake_cli(bin_dir, "claude", {"--help": claude_help}, "2.1.220 (Claude Code)")
    fake_cli(bin_dir, "codex", {"--help": CODEX_HELP, "exec --help": CODEX_EXEC_HELP})
    fake_cli(bin_dir, "gemini", {"--help": GEMINI_HELP}, "0.9.0")


def test_all_flags_present_is_exit_0_with_versions(env: dict[str, str]) -> None:
    """Three CLIs whose help mentions every needed flag: exit 0, each with its version."""
    all_three(Path(env["PATH"]))
    lines, status = doctor.run_doctor(env, NOW)
    assert status == 0, lines
    assert lines[0] == f"✓ claude: {Path(env['PATH']) / 'claude'} (2.1.220 (Claude Code))"
    assert any(line.startswith("✓ codex:") for line in lines)
    assert any(line.startswith("✓ gemini:") for line in lines)
    assert any("not created yet" in line for line in lines)
    assert "host zone: Europe/Berlin" in lines


def test_a_claude_without_session_id_fails_and_names_the_flag(
    env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`rewake doctor` exits 1 when claude's --help lacks --session-id, and says so."""
    help_text = CLAUDE_HELP.replace("--session-id <uuid>", "--fork <uuid>")
    all_three(Path(env["PATH"]), claude_help=help_text)
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "missing flag --session-id (not in `claude --help`)" in out
    assert "✗ claude" in out


def test_codex_needs_json_in_the_exec_help(env: dict[str, str]) -> None:
    """Codex's --json is looked for in `codex exec --help`, where it lives."""
    bin_dir = Path(env["PATH"])
    exec_help = CODEX_EXEC_HELP.replace("--json", "--jason")
    fake_cli(bin_dir, "codex", {"--help": CODEX_HELP, "exec --help": exec_help})
    check = doctor.check_cli("codex", env)
    assert check.missing == ["--json (not in `codex exec --help`)"]


def test_a_missing_cli_is_reported_but_only_none_at_all_fails(env: dict[str, str]) -> None:
    """One CLI installed is fine (the others are listed as not on PATH); none is exit 1."""
    lines, status = doctor.run_doctor(env, NOW)
    assert status == 1 and "✗ none of claude, codex, gemini is on PATH" in lines
    fake_cli(Path(env["PATH"]), "gemini", {"--help": GEMINI_HELP})
    lines, status = doctor.run_doctor(env, NOW)
    assert status == 0 and "- claude: not on PATH" in lines


def test_a_help_that_fails_is_a_problem_not_a_crash(env: dict[str, str]) -> None:
    """A CLI whose --help exits non-zero silently is reported as a problem."""
    script = Path(env["PATH"]) / "claude"
    script.write_text("#!/bin/sh\nexit 3\n")
    script.chmod(0o755)
    check = doctor.check_cli("claude", env)
    assert not check.ok and "exited 3 without output" in check.problems[-1]


@pytest.mark.parametrize(
    ("text", "spelling", "found"),
    [
        ("  -p, --print  x", "-p", True),
        ("  --print  x", "-p", False),
        ("  --resume-last  x", "--resume", False),
        ("  -r, --resume [id]", "--resume", True),
        ("  --output-format=<f>", "--output-format", True),
    ],
)
def test_flags_match_whole_options_only(text: str, spelling: str, found: bool) -> None:
    """`-p` is not inside `--print`, `--resume` is not `--resume-last`."""
    assert doctor.mentions(text, spelling) is found


def test_sweeper_line_says_fresh_stale_or_never() -> None:
    """A heartbeat within 90 s is fresh; older or none warns that marks will not fire."""
    assert doctor.sweeper_line(NOW - timedelta(seconds=12), NOW) == "    ✓ sweeper seen 12 s ago"
    assert "last seen 600 s ago" in doctor.sweeper_line(NOW - timedelta(minutes=10), NOW)
    assert "no sweeper seen" in doctor.sweeper_line(None, NOW)


def test_no_sweeper_line_says_a_waiting_rewake_run_fires_too() -> None:
    """With no sweeper seen, doctor does not claim that nothing fires: a waiting `rewake run`
    fires the mark it armed."""
    line = doctor.sweeper_line(None, NOW)
    assert "`rewake run` that armed it still waits" in line
    assert "only while one runs" not in line


def test_an_unreachable_service_fails(env: dict[str, str]) -> None:
    """REWAKE_URL naming a port nobody listens on: the store check fails."""
    env = {**env, "REWAKE_URL": f"http://127.0.0.1:{free_port()}"}
    store = doctor.check_store(env, NOW)
    assert not store.ok and "not reachable" in store.lines[-1]


def test_doctor_names_the_default_database_and_what_a_sweeper_needs(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without REWAKE_DATABASE_URL the runner's database is <state dir>/rewake.db: doctor prints
    that path and the setting a sweeper needs to watch it, and creates nothing."""
    monkeypatch.delenv("REWAKE_DATABASE_URL")
    env = dict(os.environ)
    db = Path(env["REWAKE_STATE_DIR"]) / "rewake.db"
    store = doctor.check_store(env, NOW)
    assert store.lines[0] == f"store: the local SQLite file {db} (default: the state dir)"
    assert (
        store.lines[1]
        == f"    a sweeper for these sessions needs REWAKE_DATABASE_URL=sqlite:///{db}"
    )
    assert store.ok and not db.parent.exists()


def test_doctor_points_at_rewake_setup_until_a_sweeper_is_seen(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A local database no sweeper watches: doctor names `rewake setup`; once a sweeper's
    heartbeat is fresh, it does not."""
    from rewake.db.engine import Database
    from rewake.heartbeats import record_heartbeat
    from tests.support.db import migrate

    migrate(env["REWAKE_DATABASE_URL"])
    assert f"    {doctor.SETUP_HINT}" in doctor.check_store(env, NOW).lines
    database = Database(env["REWAKE_DATABASE_URL"])
    try:
        with database.writer() as db, database.transaction(db):
            record_heartbeat(
                db, "s1", NOW - timedelta(seconds=5), host=None, pid=None, executor="command"
            )
    finally:
        database.dispose()
    lines = doctor.check_store(env, NOW).lines
    assert "sweeper seen 5 s ago" in lines[-1] and f"    {doctor.SETUP_HINT}" not in lines


def test_doctor_warns_that_a_log_executor_sweeper_resumes_nothing(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A sweeper with the log executor, fresh on the local database, is no sweeper that
    resumes: doctor says so and names `rewake setup`, until one with the command executor is
    seen beside it."""
    from rewake.db.engine import Database
    from rewake.heartbeats import record_heartbeat
    from tests.support.db import migrate

    migrate(env["REWAKE_DATABASE_URL"])
    database = Database(env["REWAKE_DATABASE_URL"])

    def seen(sweeper_id: str, executor: str) -> None:
        with database.writer() as db, database.transaction(db):
            record_heartbeat(
                db, sweeper_id, NOW - timedelta(seconds=5), host=None, pid=None, executor=executor
            )

    try:
        seen("s1", "log")
        lines = doctor.check_store(env, NOW).lines
        assert "with the log executor" in lines[-2] and lines[-1] == f"    {doctor.SETUP_HINT}"
        seen("s2", "command")
        lines = doctor.check_store(env, NOW).lines
        assert lines[-1] == "    ✓ sweeper seen 5 s ago"
    finally:
        database.dispose()


def test_doctor_reads_a_database_whose_sweepers_do_not_name_their_executor(
    env: dict[str, str],
) -> None:
    """A local database no rewake with executor heartbeats has opened yet (schema before 0004):
    doctor reads its last heartbeat and takes a fresh sweeper to resume, as the marks do, and
    names `rewake setup` once that sweeper is stale."""
    from sqlalchemy import text

    from rewake.db import migrations
    from rewake.db.engine import Database

    database = Database(env["REWAKE_DATABASE_URL"])
    try:
        migrations.upgrade(database.engine, "0003")
        with database.engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO sweeper_heartbeats (sweeper_id, seen_at, started_at)"
                    " VALUES ('old', :at, :at)"
                ),
                {"at": (NOW - timedelta(seconds=7)).replace(tzinfo=None)},
            )
    finally:
        database.dispose()
    store = doctor.check_store(env, NOW)
    assert store.ok and store.lines[-1] == "    ✓ sweeper seen 7 s ago"
    later = doctor.check_store(env, NOW + timedelta(hours=3))
    assert "last seen 10807 s ago" in later.lines[-2]
    assert later.lines[-1] == f"    {doctor.SETUP_HINT}"
