"""What rewake keeps on the local disk to resume a run: the CLI's argv, work directory and ids.

The service stores the failures and the mark; how to start the CLI again is the host's business,
and here rewake is the host. One JSON file per session under the state directory
(`REWAKE_STATE_DIR`, else `$XDG_STATE_HOME/rewake`, else `~/.local/state/rewake`), written
atomically so that a crash never leaves half a record; per-attempt logs sit beside it.

A record is read back from disk, so nothing in it is trusted: a name that would leave the
state directory, a corrupt file, or a CLI session id that could pass as an option raises
`RecordError`, which `rewake run` prints as one line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from rewake.ids import ID_HELP, ID_RE
from rewake.runner.clis.providers import valid_cli_id


class RecordError(ValueError):
    """The local state cannot be read or written; the message names the path and why."""


def _safe_name(root_id: str) -> str:
    # Session names become file names: `../../x` must not reach outside the state directory.
    if not ID_RE.fullmatch(root_id):
        raise RecordError(f"session name {root_id!r} must be {ID_HELP}")
    return root_id


#: Set in the environment of every CLI that `rewake run` starts: that CLI's own hooks (a
#: globally configured `rewake hook claude`) must not report what the run records itself.
SUPERVISED_ENV = "REWAKE_SUPERVISED"


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
    #: For a CLI that saves a conversation only once the model answered (Gemini): whether it
    #: has; False while every attempt of the conversation hit a limit before an answer, when
    #: `--resume` would find nothing. None: not known (another CLI, an older record, or a
    #: conversation the user's own `--resume` named), and resumed as always.
    conversation_saved: bool | None = None
    #: Anything else a provider needs; unknown keys in a newer record are kept here.
    extra: dict[str, Any] = field(default_factory=dict)


#: The record's note of a resume prompt rewake typed into the open interactive CLI that holds
#: the conversation: the hook lets that prompt through while the mark is still sending.
TYPED_RESUME = "typed_resume"
#: The record's note of what interactive Claude Code said of its own auto-continue for the
#: record's attempt (rewake.runner.hook.native): {"attempt", "type", "at", "message"}.
NATIVE = "native_continue"


def nothing_saved(record: RunRecord) -> str | None:
    """Why the record's conversation cannot be resumed, in words: its CLI saves one only once
    the model answered, and no attempt got an answer (a Gemini session whose first request
    hit the limit; `--resume` would fail with "No previous sessions found"). None when there
    is something to resume, or nothing says otherwise."""
    if record.conversation_saved is not False:
        return None
    return (
        f"{record.provider} saved no conversation for {record.root_id}: the model never "
        "answered in it (its first request failed), so there is nothing to resume"
    )


def record_path(root_id: str, env: Mapping[str, str] | None = None) -> Path:
    return state_dir(env) / "runs" / f"{_safe_name(root_id)}.json"


def lock_path(root_id: str, env: Mapping[str, str] | None = None) -> Path:
    return state_dir(env) / "runs" / f"{_safe_name(root_id)}.lock"


def log_path(root_id: str, run_id: str, attempt: int, env: Mapping[str, str] | None = None) -> Path:
    folder = state_dir(env) / "logs" / _safe_name(root_id)
    return folder / f"{_safe_name(run_id)}-attempt-{attempt}.log"


def outbox_path(
    root_id: str, run_id: str, attempt: int, env: Mapping[str, str] | None = None
) -> Path:
    name = f"{_safe_name(root_id)}-{_safe_name(run_id)}-{attempt}.json"
    return state_dir(env) / "outbox" / name


def ensure_dir(path: Path) -> Path:
    """`path` as a directory, created if need be; RecordError when it cannot be."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise RecordError(
            f"cannot use {path} for rewake's state: {error.strerror or error}"
        ) from error
    return path


def _write_atomically(path: Path, data: Any) -> Path:
    import tempfile  # only a write needs it: the hook, on most prompts, only looks

    ensure_dir(path.parent)
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    except OSError as error:
        raise RecordError(f"cannot write {path}: {error.strerror or error}") from error
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2)
            out.flush()
            os.fsync(out.fileno())
        Path(temporary).replace(path)
    except BaseException as error:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(error, (OSError, ValueError, TypeError)):
            raise RecordError(f"cannot write {path}: {error}") from error
        raise
    return path


def save(record: RunRecord, env: Mapping[str, str] | None = None) -> Path:
    """Write `record` atomically (a temporary file renamed over the old one)."""
    return _write_atomically(record_path(record.root_id, env), asdict(record))


def save_outbox(
    root_id: str, run_id: str, attempt: int, body: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
) -> Path:  # fmt: skip
    """Keep a failure report the store did not take, for replay (docs/run.md says how)."""
    payload = {"route": f"/api/agent/runs/{root_id}/runs/{run_id}/failures", "body": dict(body)}
    return _write_atomically(outbox_path(root_id, run_id, attempt, env), payload)


def load(root_id: str, env: Mapping[str, str] | None = None) -> RunRecord | None:
    """The record of `root_id`, or None when rewake never supervised it here."""
    path = record_path(root_id, env)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise RecordError(f"cannot read {path}: {error}") from error
    if not isinstance(data, dict):
        raise RecordError(f"cannot read {path}: not a JSON object")
    known = {f.name for f in fields(RunRecord)}
    extra = {k: v for k, v in data.items() if k not in known}
    try:
        record = RunRecord(**{k: v for k, v in data.items() if k in known})
    except TypeError as error:
        raise RecordError(f"cannot read {path}: {error}") from error
    if not isinstance(record.extra, dict) or not isinstance(record.args, list):
        raise RecordError(f"cannot read {path}: args or extra has the wrong type")
    if record.cli_session_id is not None and not valid_cli_id(record.cli_session_id):
        # It would be passed after --resume: refuse it here rather than build an argv with it.
        raise RecordError(
            f"{path}: the stored CLI session id {record.cli_session_id!r} is not a session id"
        )
    record.extra.update(extra)
    return record
