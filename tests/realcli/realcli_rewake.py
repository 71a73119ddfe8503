"""rewake's side of a real-CLI case: its environment beside the CLI's, the sessions its local
store recorded, and the hooks an interactive Claude Code runs it from."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.realcli.realcli_drive import Box

REPO = Path(__file__).absolute().parents[2]


def rewake_env(box: Box, cli_env: dict[str, str]) -> dict[str, str]:
    """The CLI's environment plus rewake's: its own database and state in the case folder,
    no resume delay (the resume is due at the reset plus the printed resolution)."""
    env = dict(cli_env)
    env.update(
        PYTHONPATH=str(REPO),
        PYTHONUNBUFFERED="1",
        REWAKE_DATABASE_URL=f"sqlite:///{box.root / 'rewake.db'}",
        REWAKE_STATE_DIR=str(box.root / "state"),
        REWAKE_RESUME_DELAY_S="0",
    )
    return env


def session_of(box: Box, root_id: str) -> dict[str, Any]:
    """The session `root_id` as the case folder's local store shows it."""
    from rewake.runner.store.stores import LocalStore
    from rewake.settings import Settings

    store = LocalStore(Settings(database_url=f"sqlite:///{box.root / 'rewake.db'}"),
                       migrate=False)  # fmt: skip
    try:
        return store.get_session(root_id)
    finally:
        store.close()


def sessions_of(box: Box) -> list[dict[str, Any]]:
    """Every session in the case folder's local store."""
    from rewake.runner.store.stores import LocalStore
    from rewake.settings import Settings

    store = LocalStore(Settings(database_url=f"sqlite:///{box.root / 'rewake.db'}"),
                       migrate=False)  # fmt: skip
    try:
        return list(store.list_sessions()["sessions"])
    finally:
        store.close()


def hook_settings(box: Box) -> dict[str, Any]:
    """Claude Code's settings.json hooks as `rewake setup claude` writes them (every entry it
    installs: StopFailure on a rate limit, UserPromptSubmit, SessionStart, Notification on
    Claude's own auto-continue, Stop), each command on the case folder's store."""
    from rewake.runner.setup.claude_settings import with_rewake

    rewake = [f"PYTHONPATH={REPO}", f"REWAKE_STATE_DIR={box.root / 'state'}",
              f"REWAKE_DATABASE_URL=sqlite:///{box.root / 'rewake.db'}",
              sys.executable, "-m", "rewake"]  # fmt: skip
    settings: dict[str, Any] = with_rewake({}, box.home / ".claude" / "settings.json", rewake)
    return settings


def resume_sweeper_env(box: Box, cli_env: dict[str, str], **settings: str) -> dict[str, str]:
    """The environment of a real `rewake sweep` on the case folder's store that resumes through
    the command executor (`rewake run --resume-of`), sweeping every second; `settings` add to
    it or override it (REWAKE_COMMAND_GRACE_S, REWAKE_DEFER_RECHECK_S, ...)."""
    command = [sys.executable, "-m", "rewake", "run", "--resume-of", "{mark_id}"]
    return {
        **rewake_env(box, cli_env),
        "REWAKE_EXECUTOR": "command",
        "REWAKE_SWEEP_INTERVAL_S": "1",
        "REWAKE_COMMAND": json.dumps(command),
        **settings,
    }


def sessions_of_or_empty(box: Box) -> list[dict[str, Any]]:
    """sessions_of, or none while the store is missing or cannot be read yet."""
    if not (box.root / "rewake.db").exists():
        return []
    try:
        return sessions_of(box)
    except Exception:  # the hook may be creating the schema at this moment
        return []


def wait_armed(box: Box, name: str, process: subprocess.Popen[str], timeout: float) -> str:
    """The CLI's conversation id once `rewake run` has armed the mark (its record has it)."""
    from rewake.runner.store import records
    from rewake.runner.store.base import StoreError

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        record = records.load(name, {"REWAKE_STATE_DIR": str(box.root / "state")})
        try:
            mark = (session_of(box, name).get("mark") or {}) if record else {}
        except StoreError:  # the record is saved before the first attempt is recorded
            mark = {}
        if record is not None and record.cli_session_id and mark.get("state") == "armed":
            return record.cli_session_id
        time.sleep(0.5)
    out = process.communicate(timeout=10)[0] if process.poll() is not None else ""
    raise AssertionError(f"rewake run armed nothing in {timeout} s\n{out}")
