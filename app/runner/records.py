"""What rewake keeps on the local disk to resume a run: the CLI's argv, work directory and ids.

The service stores the failures and the mark; how to start the CLI again is the host's business,
and here rewake is the host. One JSON file per session under the state directory
(`REWAKE_STATE_DIR`, else `$XDG_STATE_HOME/rewake`, else `~/.local/state/rewake`), written
atomically so that a crash never leaves half a record; per-attempt logs sit beside it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where records and logs live; created on first use."""
    env = os.environ if env is None else env
    if env.get("REWAKE_STATE_DIR"):
        return Path(env["REWAKE_STATE_DIR"])
    base = Path(env["XDG_STATE_HOME"]) if env.get("XDG_STATE_HOME") else None
    return (base or Path.home() / ".local" / "state") / "rewake"


@dataclass
class RunRecord:
    """One supervised session: enough to run its provider's resume form again."""

    root_id: str
    run_id: str
    provider: str
    #: The work directory the CLI ran in; the resume runs there too.
    cwd: str
    #: The user's ARGS after `--`, as given (flags included; Codex's resume drops flags, so they
    #: are passed again from here).
    args: list[str]
    #: The CLI's own session or thread id, read from its events (it can change on resume).
    cli_session_id: str | None = None
    cli_version: str | None = None
    #: The last attempt started (1 for the first run, +1 per resume).
    attempt: int = 1
    #: Start a fresh conversation on the saved work directory if the old one is missing: only
    #: when asked for at arming time or on a manual resume, never silently.
    fresh_if_missing: bool = False
    #: Anything else a provider needs; unknown keys in a newer record are kept here.
    extra: dict[str, Any] = field(default_factory=dict)


def record_path(root_id: str, env: Mapping[str, str] | None = None) -> Path:
    return state_dir(env) / "runs" / f"{root_id}.json"


def log_path(root_id: str, run_id: str, attempt: int, env: Mapping[str, str] | None = None) -> Path:
    return state_dir(env) / "logs" / root_id / f"{run_id}-attempt-{attempt}.log"


def save(record: RunRecord, env: Mapping[str, str] | None = None) -> Path:
    """Write `record` atomically (a temporary file renamed over the old one)."""
    path = record_path(record.root_id, env)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(asdict(record), out, indent=2)
            out.flush()
            os.fsync(out.fileno())
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def load(root_id: str, env: Mapping[str, str] | None = None) -> RunRecord | None:
    """The record of `root_id`, or None when rewake never supervised it here."""
    path = record_path(root_id, env)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    known = {f.name for f in fields(RunRecord)}
    extra = {k: v for k, v in data.items() if k not in known}
    record = RunRecord(**{k: v for k, v in data.items() if k in known})
    record.extra.update(extra)
    return record
