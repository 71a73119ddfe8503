"""Reading the end of a Claude Code transcript: the JSON-lines file the hook payload names.

The hook payload rarely says when a limit resets, but Claude writes its limit banner into the
transcript as a synthetic assistant row, so the last rows go along with the report. Transcripts
of long sessions reach hundreds of megabytes: only a bounded tail is ever read.

The path comes from the payload, and whatever is read is stored as the failure's events, shown
by `rewake show` and sent to a service. So only a regular file inside Claude Code's projects
folder (`$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`) is read, once its path is
resolved (`..` and every symlink followed: a link that leads out is refused), opened without
following a final symlink and without blocking (a FIFO there would hold the hook until its time
limit and lose the report). Anything else is a `problem`, and the failure is reported from the
payload alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewake.jsonl import NotARegularFile, tail_objects

#: How much of the transcript's end is read: enough for the last turn's error rows, bounded
#: because transcripts of long sessions reach hundreds of megabytes.
TAIL_BYTES = 256 * 1024
#: How many of the tail's JSON rows are sent at most (the last ones).
MAX_EVENTS = 200
#: The longest task text kept from the transcript for a fresh start.
MAX_TASK_CHARS = 10_000


@dataclass(frozen=True, slots=True)
class TranscriptTail:
    """The JSON rows at the end of a transcript, oldest first."""

    events: list[dict[str, Any]] = field(default_factory=list)
    #: The `uuid` of the last row: the same key twice means the same failure reported again.
    last_key: str | None = None
    #: A problem reading it, said once to the user; the report goes ahead without it.
    problem: str | None = None


def projects_dir(env: Mapping[str, str]) -> Path:
    """Where Claude Code keeps its transcripts: `projects` in CLAUDE_CONFIG_DIR when set (the
    folder that replaces `~/.claude`), else in `~/.claude` (HOME from `env`)."""
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"]).expanduser() / "projects"
    home = env.get("HOME")
    return (Path(home) if home else Path.home()) / ".claude" / "projects"


def read_transcript_tail(
    path: str | None,
    env: Mapping[str, str],
    *,
    max_bytes: int = TAIL_BYTES,
    max_events: int = MAX_EVENTS,
) -> TranscriptTail:
    """The last JSON-object rows of the transcript at `path`, reading at most `max_bytes`;
    only a regular file inside `projects_dir(env)` is read (see the module's docstring)."""
    if path is None:
        return TranscriptTail(problem="the payload names no transcript_path")
    try:
        allowed = os.path.realpath(projects_dir(env))
        resolved = os.path.realpath(path)
    except (OSError, ValueError) as error:  # a NUL in the path, a loop of links
        return TranscriptTail(problem=f"transcript_path {path!r} cannot be resolved: {error}")
    if os.path.commonpath([allowed, resolved]) != allowed or resolved == allowed:
        return TranscriptTail(
            problem=f"transcript_path {path!r} is not a file in Claude Code's projects folder "
            f"({allowed}); not read"
        )
    try:
        # follow=False: the last part cannot have become a symlink since it was resolved; a
        # FIFO is opened without blocking and refused.
        events = tail_objects(resolved, max_bytes, follow=False)
    except NotARegularFile:
        return TranscriptTail(problem=f"transcript_path {path!r} is not a regular file")
    except OSError as error:
        return TranscriptTail(problem=f"cannot read the transcript: {error.strerror or error}")
    events = events[-max_events:]
    last_key = events[-1].get("uuid") if events else None
    return TranscriptTail(events, last_key if isinstance(last_key, str) else None)


def last_user_prompt(tail: TranscriptTail) -> str | None:
    """The text the user last typed, from the transcript rows (not tool results, not the
    wrappers of local commands such as /login)."""
    for row in reversed(tail.events):
        if row.get("type") != "user" or row.get("isMeta") or row.get("isSidechain"):
            continue
        content = (row.get("message") or {}).get("content")
        if isinstance(content, list):
            texts = [
                i.get("text") for i in content if isinstance(i, dict) and i.get("type") == "text"
            ]
            content = "\n".join(t for t in texts if isinstance(t, str))
        if isinstance(content, str) and content.strip() and not content.lstrip().startswith("<"):
            return content.strip()[:MAX_TASK_CHARS]
    return None
