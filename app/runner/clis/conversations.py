"""Whether a conversation moved on since a failed attempt, read from the CLI's own store.

rewake resumes a conversation only when nobody else continues it: the CLI itself (interactive
Claude Code waits out most limits and continues by itself), or the user by hand, before the
reset. Timing is no guard, so before a resume is started the CLI's own session store is read:

- Claude Code: `projects/*/<session id>.jsonl` in `$CLAUDE_CONFIG_DIR`, else `~/.claude`;
  moved on with a model's answer (not the synthetic error row) or a typed prompt.
- Codex: `sessions/YYYY/MM/DD/rollout-*-<thread id>.jsonl` in `$CODEX_HOME`, else `~/.codex`;
  moved on with a `response_item` message of the user or the assistant.
- Gemini CLI: `~/.gemini/tmp/*/chats/session-*-<first 8 of the id>.jsonl`, the one whose first
  row's `sessionId` is the id; moved on with a `user` or `gemini` message.

Only rows stamped after the failure was observed count. The process side: an interactive Claude
Code registers itself in `sessions/<pid>.json` (pid, sessionId, its start time): while that
process lives it is the conversation's one writer, and a headless resume beside it would be a
second one. The Claude Code option "Wait here, then continue automatically" leaves its trace in
the transcript too (the local command `/rate-limit-options` answering "Claude Code will continue
automatically at ..."), and fires no hook.

Every answer is one of `moved_on` (nothing may be sent), `unchanged` (resume) or `unknown` (the
store cannot be read or found): what rewake does then is its caller's documented default. Rows
are read from a bounded tail, in linear time; nothing here writes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from rewake.jsonl import tail_objects

#: How much of a session file's end is read: a resume's question is about its last rows.
TAIL_BYTES = 1 << 20

State = Literal["moved_on", "unchanged", "unknown"]


@dataclass(frozen=True, slots=True)
class Continuation:
    """What the CLI's store says of the conversation since the failure, and why, in words a
    person reads in `rewake show` ("Claude continued this conversation itself at 14:02")."""

    state: State
    reason: str
    #: The interactive CLI process that holds the conversation open, if one does.
    holder_pid: int | None = None
    #: Whether that process continues the conversation by itself ("Wait here").
    continues_itself: bool = False
    #: It said it will, and has not yet (no turn after the failure, no word that its own
    #: continuation fired): whether it does is still to be seen, so a resume waits and looks
    #: again rather than stand down for good.
    pending: bool = False


def check(
    provider: str, session_id: str | None, since: datetime, env: Mapping[str, str]
) -> Continuation:
    """Whether conversation `session_id` of `provider` moved on after `since` (the failure)."""
    if not session_id:
        return Continuation("unknown", f"no {provider} conversation id on record")
    if provider == "claude":
        return _claude(session_id, since, env)
    if provider == "codex":
        return _codex(session_id, since, env)
    if provider == "gemini":
        return _gemini(session_id, since, env)
    return Continuation("unknown", f"rewake cannot read {provider}'s session store")


def failed_at(session: Mapping[str, Any], run_id: str, attempt: int) -> datetime | None:
    """When the failure of `attempt` of run `run_id` was observed, from the session's JSON."""
    for run in session.get("runs") or []:
        if not isinstance(run, dict) or run.get("run_id") != run_id:
            continue
        for each in run.get("attempts") or []:
            failure = each.get("failure") if isinstance(each, dict) else None
            if each.get("attempt") == attempt and isinstance(failure, dict):
                return _stamp(failure.get("observed_at"))
    return None


# --------------------------------------------------------------------------- Claude Code


def claude_dir(env: Mapping[str, str]) -> Path:
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"]).expanduser()
    return _home(env) / ".claude"


def _claude(session_id: str, since: datetime, env: Mapping[str, str]) -> Continuation:
    folder = claude_dir(env)
    holder = claude_holder(session_id, env)
    found = sorted((folder / "projects").glob(f"*/{_glob_safe(session_id)}.jsonl"))
    if not found:
        if holder is not None:
            return _held(holder)
        return Continuation("unknown", f"no transcript of {session_id} in {folder / 'projects'}")
    rows = _tail_rows(found[-1])
    if rows is None:
        return Continuation("unknown", f"cannot read {found[-1]}")
    waits = False
    for row in rows:
        at = _stamp(row.get("timestamp"))
        if at is None or at <= since:
            continue
        kind, message = row.get("type"), row.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        text = _text(content)
        if kind == "assistant" and not _synthetic(row):
            return Continuation(
                "moved_on", f"Claude continued this conversation at {_clock(at)} (an answer of "
                "the model is in its transcript after the failed attempt)",
            )  # fmt: skip
        if kind == "user" and not row.get("isMeta") and _typed(content, text):
            return Continuation(
                "moved_on", f"a prompt was typed in this conversation at {_clock(at)}, after "
                "the failed attempt",
            )  # fmt: skip
        if kind == "user" and "will continue automatically" in text:
            waits = True  # the menu's "Wait here": Claude armed its own continuation
    if holder is not None:
        return _held(holder, waits=waits)
    return Continuation("unchanged", "nothing after the failed attempt in Claude's transcript")


@dataclass(frozen=True, slots=True)
class Holder:
    """An interactive Claude Code process that has the conversation open."""

    pid: int
    cwd: str


def claude_holder(session_id: str, env: Mapping[str, str]) -> Holder | None:
    """The live interactive Claude Code that registered `session_id` in `sessions/<pid>.json`;
    a registration whose process is gone, or whose pid now names another process (its start
    time differs), holds nothing."""
    for path in (claude_dir(env) / "sessions").glob("*.json"):
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(entry, dict) or entry.get("sessionId") != session_id:
            continue
        pid = entry.get("pid")
        if isinstance(pid, int) and _alive(pid, entry.get("procStart")):
            return Holder(pid, str(entry.get("cwd") or ""))
    return None


def _held(holder: Holder, *, waits: bool = False) -> Continuation:
    if waits:
        why = 'it was told to wait and continue automatically ("Wait here")'
    else:
        why = "a second Claude beside it would be two writers on one conversation"
    return Continuation(
        "moved_on", f"an open Claude Code (pid {holder.pid}) holds this conversation and "
        f"continues it: {why}; rewake starts no headless Claude", holder.pid, waits, waits,
    )  # fmt: skip


def with_native(found: Continuation, note: Any, attempt: int) -> Continuation:
    """`found` corrected by what Claude Code's Notification hook said of its own continuation
    of `attempt` (the note rewake.runner.hook.native keeps in the record): it fired, so Claude
    continued; or it went stale or was disabled, so the open Claude that was told to wait will
    not continue by itself after all, and rewake continues the conversation in it."""
    if not isinstance(note, dict) or note.get("attempt") != attempt:
        return found
    at = _stamp(note.get("at"))
    when = f" at {_clock(at)}" if at is not None else ""
    kind = note.get("type")
    if kind == "quota_auto_resume_fired":
        return Continuation(
            "moved_on", f"Claude continued this conversation itself{when} (its own automatic "
            "continue fired: quota_auto_resume_fired)", found.holder_pid, True,
        )  # fmt: skip
    if kind in ("quota_auto_resume_stale", "quota_auto_resume_disabled") and found.continues_itself:
        return Continuation(
            "moved_on", f"an open Claude Code (pid {found.holder_pid}) holds this conversation "
            f"but gave up continuing it by itself{when} ({kind})", found.holder_pid, False,
        )  # fmt: skip
    return found


def _synthetic(row: Mapping[str, Any]) -> bool:
    message = row.get("message")
    model = message.get("model") if isinstance(message, dict) else None
    return bool(row.get("isApiErrorMessage")) or model == "<synthetic>"


def _typed(content: Any, text: str) -> bool:
    """A prompt a person (or rewake's resume) typed: text, not a tool's result nor the wrapper
    of a local command (those start with `<`)."""
    if isinstance(content, list) and any(
        isinstance(part, dict) and part.get("type") == "tool_result" for part in content
    ):
        return False
    return bool(text.strip()) and not text.lstrip().startswith("<")


# --------------------------------------------------------------------------- Codex


def _codex(thread_id: str, since: datetime, env: Mapping[str, str]) -> Continuation:
    home = Path(env["CODEX_HOME"]).expanduser() if env.get("CODEX_HOME") else _home(env) / ".codex"
    found = sorted((home / "sessions").glob(f"*/*/*/rollout-*-{_glob_safe(thread_id)}.jsonl"))
    if not found:
        return Continuation("unknown", f"no rollout of thread {thread_id} in {home / 'sessions'}")
    for path in found:
        rows = _tail_rows(path)
        if rows is None:
            return Continuation("unknown", f"cannot read {path}")
        for row in rows:
            at = _stamp(row.get("timestamp"))
            payload = row.get("payload")
            if at is None or at <= since or not isinstance(payload, dict):
                continue
            if row.get("type") != "response_item" or payload.get("type") != "message":
                continue
            if payload.get("role") == "assistant":
                return Continuation("moved_on", f"Codex answered in this thread at {_clock(at)}, "
                                    "after the failed attempt")  # fmt: skip
            if payload.get("role") == "user" and not _text(payload.get("content")).startswith("<"):
                return Continuation("moved_on", f"a prompt was sent in this thread at "
                                    f"{_clock(at)}, after the failed attempt")  # fmt: skip
    return Continuation("unchanged", "nothing after the failed attempt in Codex's rollout")


# --------------------------------------------------------------------------- Gemini CLI


def _gemini(session_id: str, since: datetime, env: Mapping[str, str]) -> Continuation:
    tmp = _home(env) / ".gemini" / "tmp"
    pattern = f"*/chats/session-*-{_glob_safe(session_id[:8])}.jsonl"
    chats = [path for path in sorted(tmp.glob(pattern)) if _gemini_names(path, session_id)]
    if not chats:
        return Continuation("unknown", f"no saved chat of {session_id} in {tmp}")
    for path in chats:
        rows = _tail_rows(path)
        if rows is None:
            return Continuation("unknown", f"cannot read {path}")
        for row in rows:
            at = _stamp(row.get("timestamp"))
            if at is None or at <= since:
                continue
            if row.get("type") == "gemini":
                return Continuation("moved_on", f"Gemini answered in this chat at {_clock(at)}, "
                                    "after the failed attempt")  # fmt: skip
            if row.get("type") == "user":
                return Continuation("moved_on", f"a prompt was sent in this chat at {_clock(at)}, "
                                    "after the failed attempt")  # fmt: skip
    return Continuation("unchanged", "nothing after the failed attempt in Gemini's saved chat")


def _gemini_names(path: Path, session_id: str) -> bool:
    """Whether the chat file's first row names `session_id` (its file name holds 8 chars)."""
    try:
        with path.open("rb") as handle:
            first = json.loads(handle.readline(64 * 1024) or b"{}")
    except (OSError, ValueError):
        return False
    return isinstance(first, dict) and first.get("sessionId") == session_id


# --------------------------------------------------------------------------- shared


def _home(env: Mapping[str, str]) -> Path:
    return Path(env["HOME"]) if env.get("HOME") else Path.home()


def _glob_safe(text: str) -> str:
    """An id as a glob matches only itself: glob's special characters become no match."""
    return "".join(char for char in text if char.isalnum() or char in "-_")


def _tail_rows(path: Path) -> list[dict[str, Any]] | None:
    """The JSON-object rows of the file's last TAIL_BYTES; None when it cannot be read (a FIFO
    or device is not opened for long, and not read)."""
    try:
        return tail_objects(path, TAIL_BYTES)
    except OSError:
        return None


def _stamp(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _clock(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%H:%M:%S UTC")


def _alive(pid: int, started: Any) -> bool:
    """Whether `pid` runs (a zombie does not) and, when its start time is on record, is still
    that process (the 22nd field of /proc/<pid>/stat, as Claude Code records it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True  # no /proc (macOS): the pid alone must do
    fields = stat_line.rpartition(")")[2].split()
    if fields[:1] in (["Z"], ["X"]):
        return False  # it ended, and its parent has not reaped it: it holds nothing
    if not isinstance(started, str):
        return True
    return len(fields) > 19 and fields[19] == started
