"""`rewake setup`: the sweeper's systemd unit and launchd agent, written into temporary HOME and
XDG folders, the service manager a recording fake (no test starts a real service)."""

from __future__ import annotations

import json
import plistlib
import shutil
import stat
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from rewake.exits import Exit
from rewake.runner.commands.setup import setup_sweeper
from rewake.runner.setup import sweeper_service
from rewake.runner.setup.sweeper_service import UNIT_NAME, service_file
from rewake.runner.setup.user_files import SetupError
from tests.support import systemd_syntax

NOW = datetime(2026, 12, 2, 6, 30, 5, tzinfo=UTC)
REWAKE = ["/opt/venv/bin/rewake"]


class Manager:
    """A service manager that answers `reachable` and records every command it is given."""

    def __init__(self, reachable: bool) -> None:
        self.reachable = reachable
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str]) -> tuple[int, str]:
        self.calls.append(list(argv))
        if not self.reachable:
            return 1, "Failed to connect to bus: No medium found"
        return 0, ""

    @property
    def commands(self) -> list[str]:
        """The calls other than the reachability probe, as words."""
        return [" ".join(c) for c in self.calls if c[-1] not in ("show-environment",)]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A user whose HOME, config and state are in tmp_path (the real ~ is never read)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return {
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
    }


def unit_path(env: dict[str, str]) -> Path:
    return Path(env["XDG_CONFIG_HOME"]) / "systemd" / "user" / UNIT_NAME


def linux(env: dict[str, str], rewake: Sequence[str] = REWAKE) -> sweeper_service.ServiceFile:
    return service_file("linux", env, uid=1000, rewake=rewake)


def test_the_unit_runs_rewake_sweep_with_the_readmes_settings(env: dict[str, str]) -> None:
    """ExecStart is the absolute rewake with `sweep`; the environment is the state dir's
    database, the command executor resuming through `rewake run --resume-of {mark_id}` by the
    same absolute path, a 60 s grace, the state dir and the PATH setup ran with."""
    unit = linux(env).content.decode()
    state = Path(env["XDG_STATE_HOME"]) / "rewake"
    assert systemd_syntax.exec_start(unit) == ["/opt/venv/bin/rewake", "sweep"]
    assert systemd_syntax.environment(unit) == {
        "REWAKE_DATABASE_URL": f"sqlite:///{state}/rewake.db",
        "REWAKE_STATE_DIR": str(state),
        "REWAKE_EXECUTOR": "command",
        "REWAKE_COMMAND": json.dumps(["/opt/venv/bin/rewake", "run", "--resume-of", "{mark_id}"]),
        "REWAKE_COMMAND_GRACE_S": "60",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
    }
    assert "Restart=on-failure" in unit.splitlines()
    assert "WantedBy=default.target" in unit.splitlines()
    assert any(line.startswith("Description=rewake sweeper") for line in unit.splitlines())


def test_rewake_database_url_from_the_environment_is_the_sweepers(env: dict[str, str]) -> None:
    """A user who keeps sessions elsewhere (REWAKE_DATABASE_URL) gets a sweeper on that."""
    env["REWAKE_DATABASE_URL"] = "postgresql://me@127.0.0.1/rewake"
    unit = linux(env).content.decode()
    assert systemd_syntax.environment(unit)["REWAKE_DATABASE_URL"] == env["REWAKE_DATABASE_URL"]


def test_the_unit_goes_under_dot_config_without_xdg_config_home(env: dict[str, str]) -> None:
    """Without XDG_CONFIG_HOME the unit is ~/.config/systemd/user/rewake-sweeper.service."""
    del env["XDG_CONFIG_HOME"]
    expected = Path(env["HOME"]) / ".config" / "systemd" / "user" / UNIT_NAME
    assert linux(env).path == expected


#: Values with every character systemd's quoting treats specially: %, $, quotes, backslashes,
#: spaces, braces; and a folder with those systemd accepts in a program's path.
AWKWARD = '/tmp/a dir/100% "done" $HOME \\ {x}'
AWKWARD_FOLDER = "/tmp/a dir/100% $HOME {x}"


def test_awkward_values_read_back_unchanged_under_systemds_rules(env: dict[str, str]) -> None:
    """A PATH and an executable with %, $, quotes, backslashes and spaces are written so that
    systemd's quoting, escape, specifier and variable rules give them back unchanged."""
    env["PATH"] = AWKWARD
    rewake = [f"{AWKWARD_FOLDER}/rewake"]
    unit = linux(env, rewake).content.decode()
    assert systemd_syntax.exec_start(unit) == [*rewake, "sweep"]
    environment = systemd_syntax.environment(unit)
    assert environment["PATH"] == AWKWARD
    assert json.loads(environment["REWAKE_COMMAND"])[0] == rewake[0]


def test_a_control_character_is_refused_not_written(env: dict[str, str]) -> None:
    """A newline in a value would end the line and inject a setting: refused, with a code."""
    env["PATH"] = "/usr/bin\nExecStartPre=/bin/evil"
    with pytest.raises(SetupError) as caught:
        linux(env)
    assert caught.value.code == "unit_value_unwritable"


def test_a_program_path_systemd_would_refuse_is_refused_first(env: dict[str, str]) -> None:
    """systemd runs no program whose path holds a quote or a backslash: setup says so rather
    than write a unit that will never start."""
    with pytest.raises(SetupError) as caught:
        linux(env, ['/home/o"brien/venv/bin/rewake'])
    assert caught.value.code == "unit_value_unwritable"


def _analyze() -> str:
    found = shutil.which("systemd-analyze")
    if found is None:
        pytest.skip("systemd-analyze is not installed (no systemd on this machine)")
    return found


def test_systemd_accepts_the_unit_with_awkward_paths(env: dict[str, str], tmp_path: Path) -> None:
    """`systemd-analyze verify` loads the unit without a word of complaint, its ExecStart an
    executable whose directory has %, $, braces and spaces, its PATH also quotes and
    backslashes: a quoting mistake would name a file that does not exist, or be an "Invalid
    syntax" warning."""
    analyze = _analyze()
    folder = tmp_path / "bin 100% $HOME {y}"
    folder.mkdir()
    executable = folder / "rewake"
    executable.write_text("#!/bin/sh\nexit 0\n")
    executable.chmod(executable.stat().st_mode | stat.S_IXUSR)
    env["PATH"] = f"{folder}:{AWKWARD}:/usr/bin:/bin"
    service = linux(env, [str(executable)])
    service.path.parent.mkdir(parents=True)
    service.path.write_bytes(service.content)
    done = subprocess.run(
        [analyze, "verify", str(service.path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "", done.stderr


def test_systemd_complains_about_a_wrongly_quoted_line(tmp_path: Path) -> None:
    """The check above can fail: verify reports an unescaped quote in an Environment= line."""
    analyze = _analyze()
    path = tmp_path / UNIT_NAME
    path.write_text(
        '[Service]\nExecStart=/bin/true\nEnvironment="REWAKE_COMMAND=["x"]\n'
        "[Install]\nWantedBy=default.target\n"
    )
    done = subprocess.run([analyze, "verify", str(path)], capture_output=True, text=True)
    assert "REWAKE_COMMAND" in done.stderr


def test_unreachable_manager_the_unit_is_written_and_the_commands_named(
    env: dict[str, str],
) -> None:
    """No user bus (a container): the unit is written, nothing else is run, the outcome fails
    and names the two commands to run where a user manager runs."""
    manager = Manager(reachable=False)
    service = linux(env)
    outcome = sweeper_service.install(service, now=NOW, run=manager)
    assert service.path.read_bytes() == service.content
    assert not outcome.ok and manager.commands == []
    text = "\n".join(outcome.lines)
    assert "cannot be reached (Failed to connect to bus" in text
    assert f"systemctl --user daemon-reload\n    systemctl --user enable --now {UNIT_NAME}" in text


def test_reachable_manager_reloads_and_enables_the_unit(env: dict[str, str]) -> None:
    """With a user manager, setup runs daemon-reload, then enable --now."""
    manager = Manager(reachable=True)
    outcome = sweeper_service.install(linux(env), now=NOW, run=manager)
    assert outcome.ok
    assert manager.commands == [
        "systemctl --user daemon-reload",
        f"systemctl --user enable --now {UNIT_NAME}",
    ]


def test_a_second_run_writes_nothing_and_says_already_installed(env: dict[str, str]) -> None:
    """The same content again: the file is not rewritten (its inode and time stay), no backup,
    and it says "already installed"."""
    service = linux(env)
    sweeper_service.install(service, now=NOW, run=Manager(True))
    before = service.path.stat()
    outcome = sweeper_service.install(service, now=NOW, run=Manager(True))
    after = service.path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert outcome.lines[0] == f"already installed: {service.path}"
    assert list(service.path.parent.glob("*.bak-*")) == []


def test_a_changed_unit_is_backed_up_then_rewritten_and_restarted(env: dict[str, str]) -> None:
    """Another rewake path: the old unit is copied to <unit>.bak-<UTC time> first, the new one
    written, and the running sweeper restarted to take it."""
    old = linux(env, ["/old/venv/bin/rewake"])
    sweeper_service.install(old, now=NOW, run=Manager(True))
    manager = Manager(True)
    new = linux(env)
    outcome = sweeper_service.install(new, now=NOW, run=manager)
    backup = new.path.with_name(f"{UNIT_NAME}.bak-20261202T063005Z")
    assert backup.read_bytes() == old.content
    assert new.path.read_bytes() == new.content
    assert outcome.ok and manager.commands[-1] == f"systemctl --user restart {UNIT_NAME}"


def test_dry_run_writes_and_runs_nothing(env: dict[str, str]) -> None:
    """--dry-run prints the unit and the commands; no folder is made, no command run."""
    manager = Manager(True)
    service = linux(env)
    outcome = sweeper_service.install(service, now=NOW, run=manager, dry_run=True)
    assert not Path(env["XDG_CONFIG_HOME"]).exists()
    assert manager.calls == []
    assert f"would write {service.path}:" in outcome.lines
    assert f"would run: systemctl --user enable --now {UNIT_NAME}" in outcome.lines
    assert any(line.startswith("ExecStart=") for line in outcome.lines)


def test_undo_stops_then_removes_the_unit_after_a_backup(env: dict[str, str]) -> None:
    """--undo: disable --now while the unit is there, its backup, its removal, a reload."""
    service = linux(env)
    sweeper_service.install(service, now=NOW, run=Manager(True))
    manager = Manager(True)
    outcome = sweeper_service.undo(service, now=NOW, run=manager)
    assert outcome.ok and not service.path.exists()
    backup = service.path.with_name(f"{UNIT_NAME}.bak-20261202T063005Z")
    assert backup.read_bytes() == service.content
    assert manager.commands == [
        f"systemctl --user disable --now {UNIT_NAME}",
        "systemctl --user daemon-reload",
    ]


def test_undo_without_a_manager_removes_the_unit_and_its_wants_link(env: dict[str, str]) -> None:
    """No user bus: the unit and the default.target.wants link an enable made are removed; the
    outcome fails and says how to stop a sweeper that may still run."""
    service = linux(env)
    sweeper_service.install(service, now=NOW, run=Manager(False))
    link = service.path.parent / "default.target.wants" / UNIT_NAME
    link.parent.mkdir()
    link.symlink_to(service.path)
    outcome = sweeper_service.undo(service, now=NOW, run=Manager(False))
    assert not service.path.exists() and not link.is_symlink()
    assert not outcome.ok
    assert f"    systemctl --user stop {UNIT_NAME}" in outcome.lines


def test_undo_dry_run_leaves_the_unit(env: dict[str, str]) -> None:
    """--undo --dry-run names what it would do and removes nothing."""
    service = linux(env)
    sweeper_service.install(service, now=NOW, run=Manager(True))
    manager = Manager(True)
    outcome = sweeper_service.undo(service, now=NOW, run=manager, dry_run=True)
    assert service.path.read_bytes() == service.content and manager.calls == []
    assert f"would back up and remove {service.path}" in outcome.lines


def test_the_command_exits_problem_when_the_manager_is_unreachable(
    env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`rewake setup` without a user manager: exit 1 (Exit.PROBLEM), the unit written, and the
    state dir made for the database the unit names."""
    status = setup_sweeper(
        env, NOW, dry_run=False, undo=False, run=Manager(False), platform="linux"
    )
    assert status == Exit.PROBLEM
    assert unit_path(env).exists()
    assert (Path(env["XDG_STATE_HOME"]) / "rewake").is_dir()
    assert "systemctl --user enable --now" in capsys.readouterr().out


def test_the_command_exits_ok_when_the_manager_starts_it(env: dict[str, str]) -> None:
    """`rewake setup` with a user manager that starts the unit: exit 0."""
    status = setup_sweeper(env, NOW, dry_run=False, undo=False, run=Manager(True), platform="linux")
    assert status == Exit.OK


def test_the_launchd_agent_holds_the_same_command_and_settings(env: dict[str, str]) -> None:
    """On macOS: a plist (plistlib parses it) in ~/Library/LaunchAgents running `rewake sweep`
    with the unit's very environment, at load, kept alive after a failure, logging into the
    state dir; loaded with `launchctl bootstrap gui/<uid>`."""
    service = service_file("darwin", env, uid=501, rewake=REWAKE)
    agent = plistlib.loads(service.content)
    state = Path(env["XDG_STATE_HOME"]) / "rewake"
    assert service.path == Path(env["HOME"]) / "Library/LaunchAgents/dev.rewake.sweeper.plist"
    assert agent["Label"] == "dev.rewake.sweeper"
    assert agent["ProgramArguments"] == ["/opt/venv/bin/rewake", "sweep"]
    assert agent["EnvironmentVariables"] == systemd_syntax.environment(linux(env).content.decode())
    assert agent["RunAtLoad"] is True and agent["KeepAlive"] == {"SuccessfulExit": False}
    assert agent["StandardOutPath"] == agent["StandardErrorPath"] == str(state / "sweeper.log")
    assert service.start[-1].argv == ("launchctl", "bootstrap", "gui/501", str(service.path))


def test_the_launchd_agent_is_reloaded_on_a_second_setup(env: dict[str, str]) -> None:
    """bootstrap refuses a loaded agent: setup unloads it first, and that may fail (not loaded)."""
    manager = Manager(True)
    service = service_file("darwin", env, uid=501, rewake=REWAKE)
    assert sweeper_service.install(service, now=NOW, run=manager).ok
    assert manager.commands[-2:] == [
        "launchctl bootout gui/501/dev.rewake.sweeper",
        f"launchctl bootstrap gui/501 {service.path}",
    ]
    assert service.start[0].may_fail


def test_another_platform_is_refused_by_name(env: dict[str, str]) -> None:
    """A platform with neither systemd nor launchd: a SetupError naming it, nothing written."""
    with pytest.raises(SetupError) as caught:
        service_file("win32", env, uid=0, rewake=REWAKE)
    assert caught.value.code == "platform_unsupported" and "'win32'" in str(caught.value)


def test_the_rewake_beside_the_interpreter_is_preferred(tmp_path: Path) -> None:
    """A virtualenv's python finds its own console script, not another rewake on PATH; and with
    none beside it, `python -m rewake` by the interpreter's absolute path."""
    from rewake.runner.setup.user_files import rewake_argv

    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "rewake").write_text("#!/bin/sh\n")
    (venv / "rewake").chmod(0o755)
    interpreter = str(venv / "python")
    assert rewake_argv({"PATH": "/usr/bin"}, interpreter) == [str(venv / "rewake")]
    (venv / "rewake").unlink()
    bare = {"PATH": str(tmp_path / "nothing")}
    assert rewake_argv(bare, interpreter) == [interpreter, "-m", "rewake"]
    assert Path(rewake_argv(bare, interpreter)[0]).is_absolute()


def test_undo_keeps_the_unit_when_the_sweeper_cannot_be_stopped(env: dict[str, str]) -> None:
    """disable --now fails: the unit stays (a running sweeper is not left without its file),
    no reload is run, and the outcome fails naming the command."""
    service = linux(env)
    sweeper_service.install(service, now=NOW, run=Manager(True))

    def refusing(argv: Sequence[str]) -> tuple[int, str]:
        return (1, "Access denied") if "disable" in argv else (0, "")

    outcome = sweeper_service.undo(service, now=NOW, run=refusing)
    assert not outcome.ok and service.path.read_bytes() == service.content
    assert any(
        line.startswith(f"✗ `systemctl --user disable --now {UNIT_NAME}`") for line in outcome.lines
    )


def test_dry_run_shows_unicode_line_breaks_in_a_path_as_escapes(
    env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`rewake setup --dry-run` prints a state dir holding U+0085 and U+2028 as `\\x85` and
    `\\u2028` on the unit's one line, never as line breaks."""
    env["REWAKE_STATE_DIR"] = str(Path(env["HOME"]) / "a\u2028b\x85c")
    manager = Manager(reachable=True)
    assert setup_sweeper(env, NOW, dry_run=True, undo=False, run=manager) == Exit.OK
    printed = capsys.readouterr().out
    assert "\u2028" not in printed and "\x85" not in printed
    lines = [line for line in printed.splitlines() if "REWAKE_STATE_DIR" in line]
    assert len(lines) == 1 and "a\\u2028b\\x85c" in lines[0], printed
