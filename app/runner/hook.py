"""`rewake hook claude`: report an interactive Claude Code session's failed turn to rewake.

Claude Code runs the hook on its `StopFailure` event (a turn ended on an API error) with one JSON
object on stdin, documented as:

    {"session_id": "00893aaf-...", "transcript_path": "/home/u/.claude/projects/.../x.jsonl",
     "cwd": "/home/u/shop", "hook_event_name": "StopFailure", "error": "rate_limit",
     "error_details": "429 Too Many Requests",
     "last_assistant_message": "API Error: Rate limit reached"}

`error` is one of rate_limit, authentication_failed, billing_error, invalid_request,
server_error, max_output_tokens, unknown. The payload rarely says when a limit resets, so the
hook also sends the last part of the session's transcript (JSON lines: Claude writes its limit
banner there as a synthetic assistant message) and lets the parser decide.

Claude Code ignores this hook's output and exit status, and a hook that hangs or crashes must
never cost the user their session: every problem is one line on stderr (and in the hook log)
and exit status 0; the caller bounds the whole run in time.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from app.runner import records
from app.runner.store import JSON, Store, StoreError, check_id

#: How much of the transcript's end is read: enough for the last turn's error rows, bounded
#: because transcripts of long sessions reach hundreds of megabytes.
TAIL_BYTES = 256 * 1024
#: How many of the tail's JSON rows are sent at most (the last ones).
MAX_EVENTS = 200
#: The hook payload is a few hundred bytes; anything past this is not a payload.
MAX_STDIN_BYTES = 4 << 20
#: The run id every interactive session's failures are reported under.
RUN_ID = "interactive"
PROVIDER = "claude"

_UNKNOWN_ZONES = frozenset({"Etc/Unknown", "Factory", "localtime", "posixrules"})


class HookInputError(ValueError):
    """The payload on stdin is not a StopFailure payload the hook can use."""


@dataclass(frozen=True, slots=True)
class HookInput:
    """The fields of Claude Code's hook payload rewake uses; only session_id is required."""

    session_id: str
    transcript_path: str | None = None
    cwd: str | None = None
    hook_event_name: str | None = None
    error: str | None = None
    error_details: str | None = None
    last_assistant_message: str | None = None
    permission_mode: str | None = None


@dataclass(frozen=True, slots=True)
class TranscriptTail:
    """The JSON rows at the end of a transcript, oldest first."""

    events: list[dict[str, Any]] = field(default_factory=list)
    #: The `uuid` of the last row: the same key twice means the same failure reported again.
    last_key: str | None = None
    #: A problem reading it, said once to the user; the report goes ahead without it.
    problem: str | None = None


def read_hook_input(raw: str) -> HookInput:
    """The payload read tolerantly: fields of the wrong type are dropped, unknown ones ignored."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as error:
        raise HookInputError(f"stdin is not JSON ({error})") from error
    if not isinstance(data, dict):
        raise HookInputError(f"stdin is JSON but not an object ({type(data).__name__})")

    def text(name: str) -> str | None:
        value = data.get(name)
        return value if isinstance(value, str) and value.strip() else None

    session_id = text("session_id")
    if session_id is None:
        raise HookInputError("the payload has no session_id")
    return HookInput(
        session_id=session_id.strip(),
        transcript_path=text("transcript_path"),
        cwd=text("cwd"),
        hook_event_name=text("hook_event_name"),
        error=text("error"),
        error_details=_details(data.get("error_details")),
        last_assistant_message=text("last_assistant_message"),
        permission_mode=text("permission_mode"),
    )


def _details(value: Any) -> str | None:
    # Documented as a string; an object is kept as JSON rather than lost.
    if isinstance(value, str):
        return value or None
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return None


def read_transcript_tail(
    path: str | None, *, max_bytes: int = TAIL_BYTES, max_events: int = MAX_EVENTS
) -> TranscriptTail:
    """The last JSON-object rows of the transcript at `path`, reading at most `max_bytes`."""
    if path is None:
        return TranscriptTail(problem="the payload names no transcript_path")
    file = Path(path).expanduser()
    try:
        with file.open("rb") as handle:
            if not file.is_file():
                return TranscriptTail(problem=f"{file} is not a regular file")
            size = handle.seek(0, os.SEEK_END)
            start = max(0, size - max_bytes)
            handle.seek(start)
            chunk = handle.read(max_bytes)
    except OSError as error:
        return TranscriptTail(problem=f"cannot read the transcript: {error.strerror or error}")
    lines = chunk.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first line was cut by the seek
    events: list[dict[str, Any]] = []
    for line in lines:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            continue  # only JSON lines are sent: a file that is not a transcript yields nothing
        if isinstance(row, dict):
            events.append(row)
    events = events[-max_events:]
    last_key = events[-1].get("uuid") if events else None
    return TranscriptTail(events, last_key if isinstance(last_key, str) else None)


def host_zone(env: Mapping[str, str] | None = None) -> str | None:
    """The IANA zone the CLI prints local times in, or None when it cannot be told for sure.

    TZ decides when set (Claude Code, a Node program, follows it), else /etc/localtime's link
    target, else /etc/timezone. Never a guess: a TZ that is no IANA name gives None."""
    env = os.environ if env is None else env
    if "TZ" in env:
        return _zone_name(env["TZ"].lstrip(":"))
    try:
        target = os.path.realpath("/etc/localtime")
    except OSError:
        target = ""
    if (name := _zone_name(target)) is not None:
        return name
    try:
        return _zone_name(Path("/etc/timezone").read_text(encoding="utf-8").strip())
    except OSError:
        return None


def _zone_name(value: str) -> str | None:
    if "zoneinfo/" in value:
        value = value.split("zoneinfo/", 1)[1]
    if not value or value.startswith("/") or value in _UNKNOWN_ZONES:
        return None
    try:
        ZoneInfo(value)
    except (ValueError, KeyError, OSError):  # ZoneInfoNotFoundError is a KeyError
        return None
    return value


def root_id_for(session_id: str) -> str:
    """A stable root id for the Claude session: `claude-<session id>` (hashed if odd)."""
    candidate = f"claude-{session_id}"
    try:
        return check_id(candidate, "root_id")
    except StoreError:
        return "claude-" + hashlib.sha256(session_id.encode()).hexdigest()[:32]


def next_attempt(session: JSON | None, run_id: str = RUN_ID) -> int:
    """One more than the highest attempt of `run_id` the store knows; 1 for a new session."""
    highest = 0
    for run in (session or {}).get("runs") or []:
        if not isinstance(run, dict) or run.get("run_id") != run_id:
            continue
        numbers = [run.get("current_attempt")]
        numbers += [a.get("attempt") for a in run.get("attempts") or [] if isinstance(a, dict)]
        highest = max([highest, *(n for n in numbers if isinstance(n, int))])
    return highest + 1


def failure_message(hook: HookInput) -> str:
    """The text part of the report: what Claude showed, and the API's details."""
    parts = [p for p in (hook.last_assistant_message, hook.error_details) if p]
    return "\n".join(parts) if parts else f"Claude Code StopFailure: {hook.error or 'unknown'}"


def failure_body(
    hook: HookInput, tail: TranscriptTail, *, attempt: int, now: datetime, zone: str | None
) -> JSON:
    """The failure report: the transcript rows as `events` (read first by the parser), the
    rendered error as `message`."""
    body: JSON = {
        "attempt": attempt,
        "message": failure_message(hook),
        "observed_at": now.isoformat(),
        "provider": PROVIDER,
        "session_id": hook.session_id,
        "capture": "live",
    }
    if tail.events:
        body["events"] = tail.events
    if zone is not None:
        body["zone"] = zone
    return body


#: Claude Code's permission modes (the payload's `permission_mode`), passed again on a resume:
#: a headless `-p` run in the default mode is refused every tool the user had allowed.
PERMISSION_MODES = frozenset(
    {"default", "plan", "acceptEdits", "auto", "dontAsk", "bypassPermissions"}
)
#: The task a fresh start (fresh_if_missing) begins with when the transcript names none.
NO_TASK = "Continue the task in this directory from where it stopped."
MAX_TASK_CHARS = 10_000


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


def resume_args(hook: HookInput, tail: TranscriptTail) -> list[str]:
    """The ARGS `rewake run` would have been given: the permission mode, `--`, the task.
    The resume form itself (`claude -p --resume <cli_session_id> ... -- <resume prompt>`) is
    built by app.runner.providers from these; the task is used only by a fresh start."""
    flags = []
    if hook.permission_mode in PERMISSION_MODES:
        flags = ["--permission-mode", hook.permission_mode]
    return [*flags, "--", last_user_prompt(tail) or NO_TASK]


def resume_record(
    hook: HookInput,
    tail: TranscriptTail,
    root_id: str,
    attempt: int,
    old: records.RunRecord | None,
    *,
    auto_resume: bool = False,
) -> records.RunRecord:
    """The record `rewake run --resume-of` reads to resume the session headlessly in its
    directory; what the user set on an older record (fresh_if_missing) is kept. With
    `auto_resume` the resumed run arms again if it too stops on a limit, as `rewake run
    --auto-resume` does."""
    extra = dict(old.extra) if old is not None else {}
    extra.update(origin="hook", hook_failure_key=failure_key(tail))
    extra["auto_resume"] = auto_resume or bool(extra.get("auto_resume"))
    base = old or records.RunRecord(root_id, RUN_ID, PROVIDER, cwd="", args=[])
    return replace(
        base,
        run_id=RUN_ID,
        provider=PROVIDER,
        cwd=hook.cwd or base.cwd or str(Path.cwd()),
        args=resume_args(hook, tail),
        cli_session_id=hook.session_id,
        attempt=attempt,
        extra=extra,
    )


def failure_key(tail: TranscriptTail) -> str | None:
    """What makes this failure the same as one reported before: the transcript's last row.
    Without one no two failures are taken for the same."""
    return f"uuid:{tail.last_key}" if tail.last_key else None


@dataclass
class HookResult:
    """What the hook did, for its stderr lines and the tests."""

    lines: list[str] = field(default_factory=list)
    root_id: str | None = None
    attempt: int | None = None
    armed: bool = False

    def say(self, line: str) -> None:
        self.lines.append(line)


def run_hook(
    raw: str,
    *,
    now: datetime,
    env: Mapping[str, str],
    open_store: Callable[[], Store],
    auto_resume: bool,
    zone: str | None,
) -> HookResult:
    """Report the StopFailure in `raw`; never raises for bad input or a refusing store."""
    result = HookResult()
    try:
        hook = read_hook_input(raw)
    except HookInputError as error:
        result.say(f"ignored: {error}")
        return result
    if hook.hook_event_name not in (None, "StopFailure"):
        result.say(f"ignored: hook_event_name {hook.hook_event_name!r} is not StopFailure")
        return result
    tail = read_transcript_tail(hook.transcript_path)
    if tail.problem:
        result.say(f"note: {tail.problem}; reporting the error text alone")
    root_id = result.root_id = root_id_for(hook.session_id)
    store = open_store()
    try:
        _report(store, hook, tail, root_id, result, now=now, env=env, zone=zone,
                auto_resume=auto_resume)  # fmt: skip
    finally:
        store.close()
    return result


def _report(
    store: Store,
    hook: HookInput,
    tail: TranscriptTail,
    root_id: str,
    result: HookResult,
    *,
    now: datetime,
    env: Mapping[str, str],
    zone: str | None,
    auto_resume: bool,
) -> None:
    try:
        session: JSON | None = store.get_session(root_id)
    except StoreError as error:
        if error.code != "session_not_found":
            raise
        session = None
    old = records.load(root_id, env)
    key = failure_key(tail)
    attempt = next_attempt(session)
    seen = old is not None and key is not None and old.extra.get("hook_failure_key") == key
    if old is not None and seen and attempt - 1 == old.attempt:
        # Claude Code fires StopFailure again for a failure it already showed (helper queries
        # of the same session): reporting it as a new attempt would clear an armed mark.
        result.say(f"{root_id}: attempt {old.attempt} was already reported; nothing new")
        return
    result.attempt = attempt
    answer = store.report_failure(
        root_id, RUN_ID, failure_body(hook, tail, attempt=attempt, now=now, zone=zone)
    )
    records.save(resume_record(hook, tail, root_id, attempt, old, auto_resume=auto_resume), env)
    result.say(f"{root_id}: attempt {attempt} reported: {_banner_words(answer)}")
    offer = answer.get("auto_resume") or {}
    if not offer.get("available"):
        if offer.get("code"):
            result.say(f"auto-resume not offered: {offer.get('detail') or offer['code']}")
            if offer["code"] == "native_auto_continue":
                result.say(f"to arm anyway: rewake auto-resume {root_id} on --despite-native")
        return
    if not auto_resume:
        result.say(f"to resume it when the limit resets: rewake auto-resume {root_id} on")
        return
    mark = store.set_auto_resume(root_id, enabled=True)
    result.armed = mark.get("state") == "armed"
    result.say(f"auto-resume {mark.get('state')}: due {mark.get('due_at')}")
    for warning in mark.get("warnings") or []:
        result.say(f"warning: {warning}")


def _banner_words(answer: JSON) -> str:
    banner = answer.get("banner") or {}
    words = " / ".join(str(banner[k]) for k in ("business", "detail") if banner.get(k))
    return words or str(answer.get("failure_kind") or "reported")
