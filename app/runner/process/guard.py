"""Exactly one `rewake run` per session at a time, and no manual resume over an automatic one.

A session's conversation must never be resumed by two CLIs at once: both would continue the
same transcript. Every `rewake run` on NAME (first run, `--resume`, `--resume-of`) holds an
exclusive `flock` on `<state>/runs/NAME.lock` while it runs an attempt; the kernel drops it when
the process ends, however it ends, so a crash never leaves a stale lock. A run only waiting for
its mark lets go while it watches (the sweeper's `--resume-of` must be able to take it) and
takes it again before it fires the mark itself.

The lock covers rewake's own processes on this host. The mark covers the rest: a manual resume
is refused while the mark is `sending` or `uncertain` (an automatic resume is, or may be, under
way) or the session is cancelled, unless forced.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO, Any

from rewake.runner.store import records
from rewake.runner.store.records import RecordError


class SessionBusy(Exception):
    """Another rewake run holds the session's lock; the message says which process."""


class SessionLock:
    """The per-session lock; `acquire` never blocks."""

    def __init__(self, root_id: str) -> None:
        self.root_id = root_id
        self.path: Path = records.lock_path(root_id)
        self._file: IO[str] | None = None

    @property
    def held(self) -> bool:
        return self._file is not None

    def try_acquire(self, doing: str) -> bool:
        """Take the lock (True), or leave it to its holder (False)."""
        if self._file is not None:
            return True
        records.ensure_dir(self.path.parent)
        try:
            handle = self.path.open("a+", encoding="utf-8")
        except OSError as error:
            raise RecordError(f"cannot open {self.path}: {error.strerror or error}") from error
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        # Who holds it, for the message another rewake run prints; the flock is the lock.
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}: {doing}\n")
        handle.flush()
        self._file = handle
        return True

    def acquire(self, doing: str) -> None:
        """Take the lock or raise SessionBusy."""
        if not self.try_acquire(doing):
            raise SessionBusy(
                f"another rewake run is running session {self.root_id!r} "
                f"({self.holder() or 'holder unknown'}); not starting a second CLI on the same "
                "conversation. Wait for it to end, or stop it first"
            )

    def holder(self) -> str:
        try:
            return self.path.read_text(encoding="utf-8").strip()
        except OSError:
            return ""

    def release(self) -> None:
        if self._file is not None:
            self._file.close()  # closing the descriptor drops the flock
            self._file = None


def manual_resume_refusal(mark: dict[str, Any], session: dict[str, Any]) -> str | None:
    """Why a resume by hand must not run now (None: it may), from the mark and the session."""
    if session.get("cancelled_at") or session.get("state") == "cancelled":
        return (
            f"session {session.get('root_id')!r} was cancelled by "
            f"{session.get('cancelled_by') or 'someone'}; resuming it would undo that"
        )
    state = mark.get("state")
    if state == "sending":
        return (
            f"its automatic resume is being sent right now (mark {mark.get('id')} is sending): "
            "the CLI would run twice on the same conversation"
        )
    if state == "uncertain":
        return (
            f"its automatic resume may have run (mark {mark.get('id')} is uncertain): check the "
            "conversation before resuming it again"
        )
    return None
