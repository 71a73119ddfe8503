"""Files `rewake setup` writes into the user's own configuration, and the executable they name.

A file the user may have edited is never lost: before it is rewritten or removed, its bytes are
copied beside it as `<file>.bak-<UTC timestamp>`. A write goes to a temporary file in the same
directory first and replaces the old one in one step, so a crash leaves the old file or the new
one, never half of either.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path


class SetupError(Exception):
    """Nothing was written: `code` names the condition, the message says what to do."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def home_of(env: Mapping[str, str]) -> Path:
    """HOME from `env` (the tests' own), else the account's."""
    return Path(env["HOME"]) if env.get("HOME") else Path.home()


def rewake_argv(env: Mapping[str, str], executable: str | None = None) -> list[str]:
    """The absolute command that starts this rewake: the console script beside the running
    interpreter (a virtualenv's or pipx's, which no service manager or hook finds on its own
    PATH), else `rewake` on PATH, else the interpreter with `-m rewake`."""

    interpreter = Path(executable or sys.executable).absolute()
    # Not resolved: a virtualenv's python is a symlink out of the virtualenv.
    beside = interpreter.parent / "rewake"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("rewake", path=env.get("PATH", os.defpath))
    if found:
        return [str(Path(found).absolute())]
    return [str(interpreter), "-m", "rewake"]


def backup_path(path: Path, now: datetime) -> Path:
    """`<file>.bak-<UTC timestamp>`, with a counter when that name is taken (two runs within
    one second)."""

    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    candidate = path.with_name(f"{path.name}.bak-{stamp}")
    count = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.bak-{stamp}-{count}")
        count += 1
    return candidate


def back_up(path: Path, now: datetime) -> Path | None:
    """A copy of `path` beside it (mode and times kept); None when there is no file."""

    if not path.exists():
        return None
    copy = backup_path(path, now)
    shutil.copy2(path, copy)
    return copy


def write_file(path: Path, content: bytes, now: datetime, *, mode: int = 0o644) -> Path | None:
    """Write `content` to `path` (its directory created), backing up an existing file first;
    the backup's path, if one was made. An existing file keeps its mode; a new one gets `mode`."""

    path.parent.mkdir(parents=True, exist_ok=True)
    saved = back_up(path, now)
    mode = path.stat().st_mode & 0o7777 if path.exists() else mode
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        Path(temporary).chmod(mode)
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return saved


def remove_file(path: Path, now: datetime) -> Path | None:
    """Remove `path` after backing it up; the backup's path (None when there was no file)."""

    saved = back_up(path, now)
    path.unlink(missing_ok=True)
    return saved
