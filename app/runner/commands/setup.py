"""`rewake setup`: the one-developer path made to work without pasting anything.

    rewake setup [--dry-run] [--undo]          the sweeper as a user service (systemd, launchd)
    rewake setup claude [--dry-run] [--undo]   rewake's hooks in Claude Code's settings.json

`rewake auto-resume NAME on` arms a mark that fires only while a sweeper with the command
executor watches the local database; `rewake setup` installs that sweeper, `rewake setup claude`
the hooks that report interactive sessions. Both read the clock once (for backup names) and
write nothing the user had without a backup beside it.

`rewake setup claude` also makes the local store ready (created and migrated) unless the hooks
report to a service (`REWAKE_URL`): otherwise the first hook Claude Code runs would build the
schema while the user waits on their prompt, seconds on a busy machine, against the hook's
timeout.

Exit statuses: 0 done (or nothing to do); 1 the file is written but the service manager could
not be reached or refused (the commands to run are printed), or the hooks are written but the
local store could not be made ready (said why); 2 a settings file rewake will not overwrite (not
a JSON object), or a platform without a known service manager: nothing written.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from rewake.exits import Exit
from rewake.printable import printable
from rewake.runner.clis import provider_env
from rewake.runner.setup import claude_settings, sweeper_service
from rewake.runner.setup.user_files import SetupError, rewake_argv, write_file
from rewake.runner.store.records import state_dir


def register(commands: Any) -> None:
    setup = commands.add_parser(
        "setup",
        help="install the sweeper as a user service, or rewake's hooks into Claude Code",
        description=(
            "Without a target (or with `sweeper`): write a user service that runs `rewake "
            "sweep` on the local database with the command executor, so that armed "
            "auto-resumes fire (a systemd user unit on Linux, a launchd agent on macOS), and "
            "start it. With `claude`: add rewake's hook entries to Claude Code's settings.json "
            "($CLAUDE_CONFIG_DIR, else ~/.claude), keeping everything else. Any file changed "
            "or removed is first copied to <file>.bak-<UTC timestamp>."
        ),
    )
    setup.add_argument(
        "target",
        nargs="?",
        choices=["sweeper", "claude"],
        default="sweeper",
        help="what to set up: the sweeper service (the default) or Claude Code's hooks",
    )
    setup.add_argument(
        "--dry-run",
        action="store_true",
        help="print what would be written and run; change nothing",
    )
    setup.add_argument(
        "--undo",
        action="store_true",
        help="remove what setup installed (stopping the sweeper), after a backup",
    )
    setup.set_defaults(func=run_setup)


def run_setup(args: argparse.Namespace) -> int:
    """Either target; a refusal is one line with its code, never a traceback."""
    now = datetime.now(UTC)  # the command's one reading of the clock: the backups' names
    env = os.environ
    try:
        if args.target == "claude":
            return setup_claude(env, now, dry_run=args.dry_run, undo=args.undo)
        return setup_sweeper(env, now, dry_run=args.dry_run, undo=args.undo)
    except SetupError as error:
        print(printable(f"rewake setup: {error.code}: {error}"), file=sys.stderr)
        return Exit.USAGE
    except OSError as error:
        where = f" {error.filename}" if error.filename else ""
        print(printable(f"rewake setup: cannot write{where}: {error.strerror or error}"),
              file=sys.stderr)  # fmt: skip
        return Exit.PROBLEM


def setup_sweeper(
    env: Mapping[str, str],
    now: datetime,
    *,
    dry_run: bool,
    undo: bool,
    run: sweeper_service.Runner = sweeper_service.run_command,
    platform: str = sys.platform,
) -> int:
    """Install (or undo) the sweeper's service on `platform`, its manager reached by `run`."""

    uid = os.getuid()
    service = sweeper_service.service_file(platform, env, uid=uid, rewake=rewake_argv(env))
    if undo:
        outcome = sweeper_service.undo(service, now=now, run=run, dry_run=dry_run)
    else:
        if not dry_run:
            # The state dir holds the database and, on macOS, the sweeper's log.
            state_dir(env).mkdir(parents=True, exist_ok=True)
        outcome = sweeper_service.install(service, now=now, run=run, dry_run=dry_run)
        outcome.lines += credential_advice(env, platform)
    for line in outcome.lines:
        print(printable(line))
    return Exit.OK if outcome.ok else Exit.PROBLEM


def _lines(text: str) -> list[str]:
    """`text`'s lines, each with its line feed: split at line feeds only (splitlines() also
    breaks at U+0085 and U+2028, which a path may hold; `printable` shows them as escapes)."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def credential_advice(env: Mapping[str, str], platform: str) -> list[str]:
    """Which provider variables of this shell the resumed CLIs would not get, and where to put
    them: the unit's environment file (Linux), the agent's EnvironmentVariables (macOS)."""
    if platform.startswith("linux"):
        path = provider_env.env_file(env)
        sweeper = {"PATH": env.get("PATH", ""), **provider_env.read_env_file(path)}
        where = f"put them in {path} (NAME=value lines, chmod 600), which the unit loads"
    else:
        sweeper = {"PATH": env.get("PATH", "")}
        where = "add them to the agent's EnvironmentVariables"
    return provider_env.advice(provider_env.unreached(env, sweeper), where)


def setup_claude(env: Mapping[str, str], now: datetime, *, dry_run: bool, undo: bool) -> int:
    """Merge (or remove) rewake's hook entries; the file is written only when they change it,
    so that a second run leaves the user's file, and its formatting, alone."""

    path = claude_settings.settings_path(env)
    before = claude_settings.read_settings(path)
    if undo:
        after = claude_settings.without_rewake(before, path)
    else:
        after = claude_settings.with_rewake(before, path, rewake_argv(env))
    if after == before:
        print(printable(f"{'no rewake hooks in' if undo else 'already installed:'} {path}"))
        return Exit.OK if undo or dry_run else prepare_store(env)
    old_text = path.read_text(encoding="utf-8") if path.exists() else ""
    new_text = claude_settings.dumps(after)
    if dry_run:
        print(printable(f"would write {path}:"))
        diff = difflib.unified_diff(
            _lines(old_text),
            _lines(new_text),
            fromfile=str(path) if old_text else "/dev/null",
            tofile=str(path),
        )
        for line in diff:
            print(printable(line.rstrip("\n")))
        return Exit.OK
    # Claude Code's settings may come to hold keys (its `env`): a new file is the user's alone.
    saved = write_file(path, new_text.encode(), now, mode=0o600)
    if saved is not None:
        print(printable(f"backed up {path} to {saved}"))
    words = "removed rewake's hooks from" if undo else "wrote rewake's hooks into"
    print(printable(f"{words} {path}"))
    return Exit.OK if undo else prepare_store(env)


def prepare_store(env: Mapping[str, str]) -> int:
    """Create and migrate the local store the hooks will write to, so that the first hook does
    not; nothing to do when they report to a service (REWAKE_URL). A store that cannot be made
    ready is said, with what to fix, and is exit 1: every hook would fail on it too."""
    if env.get("REWAKE_URL"):
        return Exit.OK
    from rewake.db.migrations import SchemaError
    from rewake.runner.store.base import StoreError
    from rewake.runner.store.stores import LocalStore, local_settings, redacted_url

    try:
        settings = local_settings(env)
        LocalStore(settings).close()
    except (StoreError, SchemaError) as error:
        said = str(error) if isinstance(error, StoreError) else f"schema_refused: {error}"
        print(printable(f"rewake setup: {said} (the hooks are written, and would fail on this "
                        "store too)"), file=sys.stderr)  # fmt: skip
        return Exit.PROBLEM
    shown = redacted_url(settings.sqlalchemy_url)
    print(printable(f"store ready: {shown} (the hooks record sessions there)"))
    return Exit.OK
