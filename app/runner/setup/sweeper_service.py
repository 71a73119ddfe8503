"""The sweeper as a user service: what `rewake setup` writes so that an armed auto-resume fires.

`rewake auto-resume NAME on` only arms a mark; it fires when a sweeper with the command executor
watches the same local database. This module writes that sweeper as the user's own service
(a systemd user unit on Linux, a launchd agent on macOS) with the settings docs/run.md's
"Resuming" section gives, and asks the service manager to start it.

The platform, the environment and the commands' runner are arguments: the unit and the plist
are built and checked on any machine, and no test starts a real service.
"""

from __future__ import annotations

import json
import plistlib
import re
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from rewake.runner.clis import provider_env
from rewake.runner.setup.user_files import SetupError, home_of, remove_file, write_file
from rewake.runner.store.base import database_url
from rewake.runner.store.records import state_dir

UNIT_NAME = "rewake-sweeper.service"
AGENT_LABEL = "dev.rewake.sweeper"
#: A resume that finds its conversation gone must fail its mark, not count as sent: the CLI
#: needs some seconds to say so (docs/run.md).
COMMAND_GRACE_S = 60
#: How long one `systemctl` or `launchctl` call may take.
MANAGER_TIMEOUT_S = 30.0

#: Runs a command: (exit status, its output). 127 when the program is not there.
Runner = Callable[[Sequence[str]], tuple[int, str]]


def run_command(argv: Sequence[str]) -> tuple[int, str]:
    """The default runner: the command's status and its stdout and stderr together."""

    try:
        done = subprocess.run(  # noqa: S603  (fixed argv of the service manager; no shell)
            list(argv), capture_output=True, text=True, errors="replace", check=False,
            timeout=MANAGER_TIMEOUT_S, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except FileNotFoundError:
        return 127, f"{argv[0]}: not found"
    except subprocess.TimeoutExpired:
        return 124, f"{argv[0]}: no answer within {MANAGER_TIMEOUT_S:g} s"
    return done.returncode, (done.stdout + done.stderr).strip()


def sweeper_environment(env: Mapping[str, str], rewake: Sequence[str]) -> dict[str, str]:
    """The sweeper's settings: the runner's own database (REWAKE_DATABASE_URL when set, else
    rewake.db in the state dir), the command executor resuming through `rewake run
    --resume-of`, and the state dir and PATH this setup ran with. A service manager starts
    programs with neither the user's XDG variables nor their PATH: without them the resume
    would look for its run records elsewhere, and find no `claude`, `codex` or `gemini`."""

    url, _where = database_url(env, create=False)
    command = [*rewake, "run", "--resume-of", "{mark_id}"]
    return {
        "REWAKE_DATABASE_URL": url,
        "REWAKE_STATE_DIR": str(state_dir(env).absolute()),
        "REWAKE_EXECUTOR": "command",
        "REWAKE_COMMAND": json.dumps(command),
        "REWAKE_COMMAND_GRACE_S": str(COMMAND_GRACE_S),
        "PATH": env.get("PATH", ""),
    }


_BARE_WORD = re.compile(r"[A-Za-z0-9_./:=+,@-]+")


def systemd_word(value: str, *, command_line: bool = False) -> str:
    """`value` as one word of a systemd setting (systemd.syntax(7), "Quoting"; systemd.unit(5),
    "Specifiers"): in double quotes, `\\` and `"` escaped with a backslash, `%` doubled as a
    specifier's escape, and on a command line `$` doubled too, as ExecStart= expands variables
    in its arguments. A word of plain characters stays bare. A control character cannot be
    written so that every systemd reads it back: refused."""

    _refuse_control(value)
    if command_line and _BARE_WORD.fullmatch(value):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    if command_line:
        escaped = escaped.replace("$", "$$")
    return f'"{escaped}"'


def systemd_executable(path: str) -> str:
    """The program of ExecStart=: quoted for its spaces and `%` alone, since systemd expands no
    variable in it and refuses one whose name holds a quote or a backslash."""

    _refuse_control(path)
    if any(char in path for char in "\"'\\"):
        raise SetupError(
            "unit_value_unwritable",
            f"systemd runs no program whose path has a quote or a backslash: {path!r}",
        )
    return path if _BARE_WORD.fullmatch(path) else f'"{path.replace("%", "%%")}"'


def _env_file_path(path: Path) -> str:
    """The path of EnvironmentFile= (optional, `-`): `%` escaped as a specifier's; a path
    systemd would split or unquote is refused."""
    text = str(path)
    _refuse_control(text)
    if any(char in text for char in " \"'\\"):
        raise SetupError(
            "unit_value_unwritable", f"an environment file path systemd would split: {text!r}"
        )
    return text.replace("%", "%%")


def _refuse_control(value: str) -> None:
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in value):
        raise SetupError("unit_value_unwritable", f"a control character in {value!r}")


def systemd_unit(
    argv: Sequence[str], environment: Mapping[str, str], env_file: Path | None = None
) -> str:
    """The user unit that runs `argv` with `environment` (and, when there, the variables of
    `env_file`: the provider keys a resumed CLI needs, kept out of the unit), restarted when
    it fails."""

    program, *arguments = argv
    words = [systemd_executable(program), *(systemd_word(a, command_line=True) for a in arguments)]
    exec_start = " ".join(words)
    lines = [
        "# Written by `rewake setup`; `rewake setup --undo` removes it.",
        "[Unit]",
        "Description=rewake sweeper: fires armed auto-resumes when usage limits reset",
        "",
        "[Service]",
        f"ExecStart={exec_start}",
        *(f"Environment={systemd_word(f'{name}={value}')}" for name, value in environment.items()),
        *([f"EnvironmentFile=-{_env_file_path(env_file)}"] if env_file is not None else []),
        "Restart=on-failure",
        "RestartSec=10",
        "",
        "[Install]",
        "WantedBy=default.target",
        "",
    ]
    return "\n".join(lines)


def launchd_plist(argv: Sequence[str], environment: Mapping[str, str], logs: Path) -> bytes:
    """The launchd agent that runs `argv` with `environment` at login, restarted when it
    fails; its output in `logs` (launchd keeps no journal)."""

    agent = {
        "Label": AGENT_LABEL,
        "ProgramArguments": list(argv),
        "EnvironmentVariables": dict(environment),
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "StandardOutPath": str(logs / "sweeper.log"),
        "StandardErrorPath": str(logs / "sweeper.log"),
    }
    return plistlib.dumps(agent, fmt=plistlib.FMT_XML, sort_keys=False)


@dataclass(frozen=True)
class Step:
    """One service-manager command; `may_fail` for undoing what may never have been done
    (unloading an agent that is not loaded)."""

    argv: tuple[str, ...]
    may_fail: bool = False

    @property
    def words(self) -> str:
        return " ".join(self.argv)


@dataclass(frozen=True)
class ServiceFile:
    """The file for one platform, and the commands that load, start, stop and unload it."""

    path: Path
    content: bytes
    #: Succeeds only when the service manager can be reached.
    probe: Step
    start: tuple[Step, ...]
    #: After `start`, when an older, different file was replaced: the running sweeper restarts.
    restart: tuple[Step, ...]
    #: Before the file is removed, and after.
    stop: tuple[Step, ...]
    after_removal: tuple[Step, ...]
    #: What stops a sweeper whose file is already gone (the advice when the manager could not
    #: be reached to stop it before the removal).
    stop_removed: tuple[Step, ...]
    #: Links the manager made when the service was enabled, removed with the file when the
    #: manager cannot be reached (a dangling one would fail at every login).
    links: tuple[Path, ...] = field(default=())


def service_file(
    platform: str, env: Mapping[str, str], *, uid: int, rewake: Sequence[str]
) -> ServiceFile:
    """The sweeper's service file on `platform` (`sys.platform`: linux or darwin)."""

    argv = [*rewake, "sweep"]
    environment = sweeper_environment(env, rewake)
    if platform.startswith("linux"):
        config = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else None
        folder = (config or home_of(env) / ".config") / "systemd" / "user"
        user = ("systemctl", "--user")
        return ServiceFile(
            path=folder / UNIT_NAME,
            content=systemd_unit(argv, environment, provider_env.env_file(env)).encode(),
            probe=Step((*user, "show-environment")),
            start=(Step((*user, "daemon-reload")), Step((*user, "enable", "--now", UNIT_NAME))),
            restart=(Step((*user, "restart", UNIT_NAME)),),
            stop=(Step((*user, "disable", "--now", UNIT_NAME)),),
            after_removal=(Step((*user, "daemon-reload")),),
            stop_removed=(Step((*user, "stop", UNIT_NAME)), Step((*user, "daemon-reload"))),
            links=(folder / "default.target.wants" / UNIT_NAME,),
        )
    if platform == "darwin":
        path = home_of(env) / "Library" / "LaunchAgents" / f"{AGENT_LABEL}.plist"
        domain = f"gui/{uid}"
        unload = Step(("launchctl", "bootout", f"{domain}/{AGENT_LABEL}"), may_fail=True)
        return ServiceFile(
            path=path,
            content=launchd_plist(argv, environment, state_dir(env).absolute()),
            probe=Step(("launchctl", "print", domain)),
            # bootstrap refuses an agent already loaded: unloaded first, so a second setup
            # loads the file as it is now.
            start=(unload, Step(("launchctl", "bootstrap", domain, str(path)))),
            restart=(),
            stop=(unload,),
            after_removal=(),
            stop_removed=(unload,),
        )
    raise SetupError(
        "platform_unsupported",
        f"rewake setup knows systemd (Linux) and launchd (macOS), not {platform!r}: run "
        '`rewake sweep` with the settings of docs/run.md\'s "Resuming" section yourself',
    )


@dataclass
class Outcome:
    """What happened, in lines for the terminal, and the exit status."""

    lines: list[str] = field(default_factory=list)
    ok: bool = True


def install(
    service: ServiceFile, *, now: datetime, run: Runner = run_command, dry_run: bool = False
) -> Outcome:
    """Write the service file unless it already holds this content (an older one is backed
    up), then load and start it when the service manager can be reached; when it cannot, the
    file stays written and the commands to run are named."""

    outcome = Outcome()
    old = service.path.read_bytes() if service.path.exists() else None
    steps = list(service.start)
    if old == service.content:
        outcome.lines.append(f"already installed: {service.path}")
    elif dry_run:
        replacing = " (the file there now would be backed up)" if old is not None else ""
        outcome.lines.append(f"would write {service.path}{replacing}:")
        # Split at line feeds only: splitlines() also breaks at U+0085 and U+2028, which a path
        # in the file may hold and `printable` shows as escapes.
        outcome.lines += service.content.decode().removesuffix("\n").split("\n")
    else:
        saved = write_file(service.path, service.content, now)
        if saved is not None:
            outcome.lines.append(f"backed up the old file to {saved}")
            steps += service.restart
        outcome.lines.append(f"wrote {service.path}")
    if dry_run:
        outcome.lines += [f"would run: {step.words}" for step in steps]
        return outcome
    reachable, why = _reachable(service, run)
    if not reachable:
        outcome.ok = False
        outcome.lines += [
            f"✗ the service manager cannot be reached ({why}): the sweeper is not started.",
            "  The file is written; where a user service manager runs (a login session), run:",
            *(f"    {step.words}" for step in steps),
        ]
        return outcome
    return _execute(steps, outcome, run)


def undo(
    service: ServiceFile, *, now: datetime, run: Runner = run_command, dry_run: bool = False
) -> Outcome:
    """Stop and unload the sweeper when the manager can be reached, then remove its file
    (backed up first)."""

    outcome = Outcome()
    if not service.path.exists():
        outcome.lines.append(f"not installed: no {service.path}")
        return outcome
    if dry_run:
        outcome.lines += [f"would run: {step.words}" for step in service.stop]
        outcome.lines.append(f"would back up and remove {service.path}")
        outcome.lines += [f"would run: {step.words}" for step in service.after_removal]
        return outcome
    reachable, why = _reachable(service, run)
    if reachable and not _execute(list(service.stop), outcome, run).ok:
        # Removing the file of a sweeper that could not be stopped would leave it running
        # with nothing on disk to say so.
        outcome.lines.append(f"  {service.path} is left in place")
        return outcome
    saved = remove_file(service.path, now)
    outcome.lines.append(f"removed {service.path} (backed up to {saved})")
    if reachable:
        _execute(list(service.after_removal), outcome, run)
        return outcome
    for link in service.links:
        if link.is_symlink():
            link.unlink()
            outcome.lines.append(f"removed {link}")
    outcome.ok = False
    outcome.lines += [
        f"✗ the service manager cannot be reached ({why}): nothing was stopped.",
        "  If a sweeper started from this file still runs, stop it where the manager runs:",
        *(f"    {step.words}" for step in service.stop_removed),
    ]
    return outcome


def _reachable(service: ServiceFile, run: Runner) -> tuple[bool, str]:
    status, output = run(service.probe.argv)
    first = next((line for line in output.splitlines() if line.strip()), f"exit {status}")
    return status == 0, first


def _execute(steps: list[Step], outcome: Outcome, run: Runner) -> Outcome:
    """Run `steps` in order; at the first failure, name it and the steps left undone."""

    for number, step in enumerate(steps):
        status, output = run(step.argv)
        if status == 0 or step.may_fail:
            outcome.lines.append(f"ran: {step.words}")
            continue
        outcome.ok = False
        outcome.lines.append(f"✗ `{step.words}` failed (exit {status}): {output}")
        outcome.lines += [f"  then run: {later.words}" for later in steps[number + 1 :]]
        return outcome
    return outcome
