"""`rewake setup claude`: rewake's hook entries merged into Claude Code's settings.json in a
temporary HOME (or CLAUDE_CONFIG_DIR), the user's own keys and hooks kept."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from rewake.cli import main
from rewake.exits import Exit
from rewake.runner.setup import claude_settings
from rewake.runner.setup.user_files import rewake_argv

PROVIDERS_DOC = Path(__file__).resolve().parents[2] / "docs" / "providers.md"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME in tmp_path, no CLAUDE_CONFIG_DIR: the settings are tmp_path/home/.claude/..."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return tmp_path / "home"


def settings_file(home: Path) -> Path:
    return home / ".claude" / "settings.json"


def rewake_command(*args: str) -> str:
    """The command setup writes: this interpreter's rewake, by its absolute path."""
    return shlex.join([*rewake_argv({"PATH": ""}), *args])


def setup(*flags: str) -> int:
    return main(["setup", "claude", *flags])


def commands(settings: dict[str, Any], event: str) -> list[str]:
    return [
        hook["command"] for group in settings["hooks"].get(event, []) for hook in group["hooks"]
    ]


FOREIGN = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "log-prompt"}]}],
    },
}


def write(path: Path, settings: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings) if not isinstance(settings, str) else settings)


def test_a_missing_file_is_created_with_the_three_entries(home: Path) -> None:
    """No ~/.claude yet: the folder and file are made, holding docs/providers.md's entries with
    the absolute rewake: StopFailure (rate_limit, --auto-resume), UserPromptSubmit,
    SessionStart (resume), Stop (a declined workflow wait)."""
    assert setup() == Exit.OK
    settings = json.loads(settings_file(home).read_text())
    hooks = settings["hooks"]
    assert hooks["StopFailure"] == [
        {
            "matcher": "rate_limit",
            "hooks": [
                {
                    "type": "command",
                    "command": rewake_command("hook", "claude", "--auto-resume"),
                    "timeout": 30,
                }
            ],
        }
    ]
    assert hooks["UserPromptSubmit"][0] == {
        "hooks": [{"type": "command", "command": rewake_command("hook", "claude"), "timeout": 30}]
    }
    assert hooks["SessionStart"][0]["matcher"] == "resume"
    assert hooks["Stop"] == [
        {"hooks": [{"type": "command", "command": rewake_command("hook", "claude"), "timeout": 30}]}
    ]
    assert Path(shlex.split(rewake_command())[0]).is_absolute()


def test_the_notification_entry_hears_claudes_own_auto_continue(home: Path) -> None:
    """A Notification entry runs `rewake hook claude` on the three kinds Claude Code reports
    its own auto-continue with (fired, stale, disabled) and on no other notification; a user's
    own Notification hook stays, and a second run adds no second entry."""
    write(settings_file(home), {"hooks": {"Notification": [
        {"hooks": [{"type": "command", "command": "notify-send claude"}]}]}})  # fmt: skip
    assert setup() == Exit.OK and setup() == Exit.OK
    groups = json.loads(settings_file(home).read_text())["hooks"]["Notification"]
    assert groups == [
        {"hooks": [{"type": "command", "command": "notify-send claude"}]},
        {
            "matcher": "quota_auto_resume_fired|quota_auto_resume_stale|quota_auto_resume_disabled",
            "hooks": [{"type": "command", "command": rewake_command("hook", "claude"),
                       "timeout": 30}],
        },
    ]  # fmt: skip


def test_the_users_keys_and_hooks_are_kept(home: Path) -> None:
    """Every other key, and the user's hooks on the same events, stay as they were."""
    write(settings_file(home), FOREIGN)
    assert setup() == Exit.OK
    settings = json.loads(settings_file(home).read_text())
    assert settings["model"] == "opus" and settings["permissions"] == FOREIGN["permissions"]
    assert commands(settings, "Stop") == ["notify-send done", rewake_command("hook", "claude")]
    assert commands(settings, "UserPromptSubmit") == [
        "log-prompt",
        rewake_command("hook", "claude"),
    ]


def test_a_second_run_adds_nothing_and_writes_nothing(home: Path, capsys: Any) -> None:
    """Run twice: one entry per event, the file untouched the second time (no backup)."""
    write(settings_file(home), FOREIGN)
    setup()
    first = settings_file(home).read_text()
    backups = sorted(settings_file(home).parent.glob("settings.json.bak-*"))
    capsys.readouterr()
    assert setup() == Exit.OK
    assert "already installed" in capsys.readouterr().out
    assert settings_file(home).read_text() == first
    assert sorted(settings_file(home).parent.glob("settings.json.bak-*")) == backups
    settings = json.loads(first)
    assert len(commands(settings, "StopFailure")) == 1
    assert len(commands(settings, "SessionStart")) == 1


def test_an_entry_with_another_rewake_path_is_replaced_in_place(home: Path) -> None:
    """A bare `rewake hook claude` and an old virtualenv's `python -m rewake hook claude` are
    replaced by this rewake's command, where they were, not added beside."""
    old = {
        "hooks": {
            "UserPromptSubmit": [
                {"hooks": [{"type": "command", "command": "rewake hook claude", "timeout": 30}]},
                {"hooks": [{"type": "command", "command": "log-prompt"}]},
            ],
            "StopFailure": [
                {
                    "matcher": "rate_limit",
                    "hooks": [
                        {
                            "type": "command",
                            "command": "/old/venv/bin/python -m rewake hook claude --auto-resume",
                        }
                    ],
                }
            ],
        }
    }
    write(settings_file(home), old)
    assert setup() == Exit.OK
    settings = json.loads(settings_file(home).read_text())
    assert commands(settings, "UserPromptSubmit") == [
        rewake_command("hook", "claude"),
        "log-prompt",
    ]
    assert commands(settings, "StopFailure") == [rewake_command("hook", "claude", "--auto-resume")]


def test_the_old_file_is_backed_up_before_the_write(home: Path) -> None:
    """The bytes the user had are in settings.json.bak-<UTC time> beside it."""
    original = json.dumps(FOREIGN, indent=4)
    write(settings_file(home), original)
    setup()
    (backup,) = settings_file(home).parent.glob("settings.json.bak-*")
    assert re.fullmatch(r"settings\.json\.bak-\d{8}T\d{6}Z", backup.name)
    assert backup.read_text() == original


def test_dry_run_prints_the_change_and_writes_nothing(home: Path, capsys: Any) -> None:
    """--dry-run: a diff naming the new hook commands; the file and folder as they were."""
    write(settings_file(home), FOREIGN)
    before = settings_file(home).read_text()
    assert setup("--dry-run") == Exit.OK
    out = capsys.readouterr().out
    assert f'+            "command": "{rewake_command("hook", "claude", "--auto-resume")}",' in out
    assert settings_file(home).read_text() == before
    assert list(settings_file(home).parent.iterdir()) == [settings_file(home)]


def test_undo_removes_only_rewakes_entries(home: Path) -> None:
    """--undo: rewake's hooks go, a hook sharing a group with one stays, event lists left empty
    are dropped, and every other key is kept."""
    write(settings_file(home), FOREIGN)
    setup()
    settings = json.loads(settings_file(home).read_text())
    settings["hooks"]["SessionStart"][0]["hooks"].append({"type": "command", "command": "mine"})
    write(settings_file(home), settings)
    assert setup("--undo") == Exit.OK
    after = json.loads(settings_file(home).read_text())
    assert after["model"] == "opus"
    assert after["hooks"] == {
        "Stop": FOREIGN["hooks"]["Stop"],  # type: ignore[index]
        "UserPromptSubmit": FOREIGN["hooks"]["UserPromptSubmit"],  # type: ignore[index]
        "SessionStart": [{"matcher": "resume", "hooks": [{"type": "command", "command": "mine"}]}],
    }


def test_undo_of_a_file_rewake_made_leaves_an_empty_object(home: Path) -> None:
    """Setup then undo on no file: the `hooks` object it emptied is dropped too."""
    setup()
    setup("--undo")
    assert json.loads(settings_file(home).read_text()) == {}


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ('{"model": "opus",', "settings_not_json"),
        ("[1, 2]", "settings_not_object"),
        ('{"hooks": []}', "settings_hooks_not_object"),
        ('{"hooks": {"Stop": {}}}', "settings_hooks_not_list"),
    ],
)
def test_a_file_that_is_not_a_settings_object_is_refused_untouched(
    home: Path, capsys: Any, text: str, code: str
) -> None:
    """Not JSON, not an object, or hooks of the wrong shape: exit 2 with a code naming the file,
    the file unchanged and no backup, for setup and for undo alike."""
    write(settings_file(home), text)
    for flags in ((), ("--undo",)):
        assert setup(*flags) == Exit.USAGE
        err = capsys.readouterr().err
        assert code in err and str(settings_file(home)) in err
    assert settings_file(home).read_text() == text
    assert list(settings_file(home).parent.iterdir()) == [settings_file(home)]


def test_claude_config_dir_is_where_the_settings_are(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With CLAUDE_CONFIG_DIR set, its settings.json is written and ~/.claude left alone."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    assert setup() == Exit.OK
    assert (tmp_path / "claude-config" / "settings.json").exists()
    assert not (home / ".claude").exists()


@pytest.mark.parametrize(
    ("command", "ours"),
    [
        ("rewake hook claude", True),
        ("/home/me/.venv/bin/rewake hook claude --auto-resume", True),
        ("'/path with space/rewake' hook claude", True),
        ("/usr/bin/python3 -m rewake hook claude", True),
        ("myrewake hook claude", False),
        ("rewake-other hook claude", False),
        ("echo rewake hook claude", False),
        ("rewake run --resume x", False),
        ("rewake hook 'claude", False),
        (None, False),
    ],
)
def test_rewakes_hooks_are_recognised_by_their_command(command: object, ours: bool) -> None:
    """An entry is rewake's when its command runs `<dir>/rewake hook claude` or `<python> -m
    rewake hook claude`, and no other."""
    assert claude_settings.is_rewake_hook(command) is ours


def test_the_docs_show_what_setup_writes() -> None:
    """docs/providers.md's settings.json block is the entries setup writes, with a bare
    `rewake`."""
    text = PROVIDERS_DOC.read_text()
    block = re.search(r'```json\n(\{"hooks": \{\n  "StopFailure".*?)```', text, re.S)
    assert block is not None
    written = claude_settings.with_rewake({}, Path("settings.json"), ["rewake"])
    assert json.loads(block.group(1)) == written


def test_the_interpreter_is_used_when_no_console_script_is_found(tmp_path: Path) -> None:
    """Without a rewake script beside the interpreter or on PATH, the hook runs
    `<python> -m rewake hook claude`, which is still recognised as rewake's."""
    interpreter = str(tmp_path / "bin" / "python")
    argv = rewake_argv({"PATH": str(tmp_path)}, interpreter)
    written = claude_settings.with_rewake({}, Path("settings.json"), argv)
    command = written["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command == f"{interpreter} -m rewake hook claude"
    assert claude_settings.is_rewake_hook(command)


def test_a_new_settings_file_is_private_and_an_old_one_keeps_its_mode(home: Path) -> None:
    """A settings file setup creates is 0600 (it may come to hold keys); an existing file's
    mode is kept."""
    setup()
    assert settings_file(home).stat().st_mode & 0o777 == 0o600
    settings_file(home).chmod(0o640)
    write(settings_file(home), FOREIGN)
    setup()
    assert settings_file(home).stat().st_mode & 0o777 == 0o640


def test_dry_run_shows_unicode_line_breaks_in_a_path_as_escapes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """`rewake setup claude --dry-run` with CLAUDE_CONFIG_DIR holding U+0085 and U+2028 shows
    them as `\\x85` and `\\u2028` on the diff's lines, never as line breaks."""
    config = tmp_path / "c\u2028l\x85aude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    write(config / "settings.json", {"model": f"path {config}"})
    assert setup("--dry-run") == Exit.OK
    printed = capsys.readouterr().out
    assert "\u2028" not in printed and "\x85" not in printed
    model = [line for line in printed.splitlines() if '"model"' in line]
    assert any(line.endswith('c\\u2028l\\x85aude",') for line in model), printed


def test_setup_makes_the_local_store_ready_so_the_first_hook_need_not(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Installing the hooks also creates and migrates the state dir's database (a second run
    too, where the hooks were already there); --dry-run and --undo create none."""
    from rewake.db.engine import Database
    from rewake.db.migrations import HEAD, stamped

    state = home.parent / "state"
    monkeypatch.setenv("REWAKE_STATE_DIR", str(state))
    monkeypatch.delenv("REWAKE_DATABASE_URL", raising=False)
    monkeypatch.delenv("REWAKE_URL", raising=False)
    assert setup("--dry-run") == Exit.OK
    assert not (state / "rewake.db").exists()
    assert setup() == Exit.OK
    assert "store ready: sqlite:///" in capsys.readouterr().out
    database = Database(f"sqlite:///{state / 'rewake.db'}")
    with database.engine.connect() as connection:
        assert stamped(connection) == (HEAD,)
    database.dispose()
    (state / "rewake.db").unlink()
    assert setup() == Exit.OK  # already installed: the store is made ready all the same
    assert (state / "rewake.db").exists()
    (state / "rewake.db").unlink()
    assert setup("--undo") == Exit.OK
    assert not (state / "rewake.db").exists()


def test_setup_says_when_the_store_cannot_be_made_ready(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A database URL the store cannot open: the hooks are written, and setup exits 1 saying
    the store is not ready and why; with REWAKE_URL (a service) there is nothing to prepare."""
    monkeypatch.setenv("REWAKE_DATABASE_URL", "mysql://nobody@127.0.0.1:1/none")
    monkeypatch.delenv("REWAKE_URL", raising=False)
    assert setup() == Exit.PROBLEM
    assert settings_file(home).exists()
    assert "the hooks are written, and would fail on this store" in capsys.readouterr().err
    monkeypatch.setenv("REWAKE_URL", "http://127.0.0.1:1")
    assert setup() == Exit.OK
