"""`rewake hook claude`: tell rewake what an interactive Claude Code session is doing.

Claude Code runs the hook with one JSON object on stdin. On `StopFailure` (a turn ended on an
API error) the hook reports the failure; documented as:

    {"session_id": "00893aaf-...", "transcript_path": "/home/u/.claude/projects/.../x.jsonl",
     "cwd": "/home/u/shop", "hook_event_name": "StopFailure", "error": "rate_limit",
     "error_details": "429 Too Many Requests",
     "last_assistant_message": "API Error: Rate limit reached"}

`error` is one of rate_limit, authentication_failed, billing_error, invalid_request,
server_error, max_output_tokens, unknown. The payload rarely says when a limit resets, so the
hook also sends the last part of the session's transcript (rewake.runner.hook.transcript) and lets
the parser decide.

On `UserPromptSubmit` (the user typed a prompt; the payload adds `prompt`) and on
`SessionStart` with `source` "resume" (the user reopened the session), the user is continuing
by hand: for a session the hook reported before, the next attempt is recorded as started,
which clears an armed auto-resume (`manual_resume`), so the conversation is never also resumed
headless. While that headless resume is being sent or runs, the prompt is blocked instead
(rewake.runner.hook.continuing).

On `Notification` with a `notification_type` of Claude Code's own auto-continue (fired, stale,
disabled) the hook notes whether Claude continues the failed attempt itself, and arms rewake's
resume when it gave up (rewake.runner.hook.native); any other notification is ignored.

A StopFailure of a workflow's agent (`agent_type` "workflow-subagent") is not the session's turn:
the hook records the hold (rewake.runner.hook.workflow). On `Stop` (a main turn ended) it looks
at the held runs that ended since: one Claude Code declined to wait for, its agents lost to the
limit, is reported as the session's failure then.

Claude Code ignores a StopFailure hook's output and exit status, and a hook that hangs or
crashes must never cost the user their session: every problem is one line on stderr (and in the
hook log) and exit status 0, never stdout (Claude adds a UserPromptSubmit hook's stdout to the
conversation); the caller bounds the whole run in time. The one exception is the block above:
exit status 2, the reason on stderr (Claude Code shows it to the user and drops the prompt).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from rewake.runner.hook.continuing import continue_by_hand
from rewake.runner.hook.payload import (
    CONTINUE_EVENTS,
    CONTINUED,
    NOTIFICATION,
    PROVIDER,
    RUN_ID,
    WORKFLOW_AGENT,
    HookInput,
    HookInputError,
    HookResult,
    current_attempt,
    next_attempt,
    read_hook_input,
    root_id_for,
)
from rewake.runner.hook.transcript import TranscriptTail, last_user_prompt, read_transcript_tail
from rewake.runner.store import records
from rewake.runner.store.base import JSON, Store, StoreError

if TYPE_CHECKING:
    from rewake.notifications.apprise_notices import Notice
    from rewake.runner.hook.workflow import Declined

#: The hook event of a main turn's end: a held workflow run may have ended (Declined).
STOP = "Stop"


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


def resume_args(hook: HookInput, tail: TranscriptTail) -> list[str]:
    """The ARGS `rewake run` would have been given: the permission mode, `--`, the task.
    The resume form itself (`claude -p --resume <cli_session_id> ... -- <resume prompt>`) is
    built by rewake.runner.clis.providers from these; the task is used only by a fresh start."""
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
    # A new failure: the next prompt typed by hand continues it, so it must be looked at again.
    extra.pop(CONTINUED, None)
    extra.pop(records.TYPED_RESUME, None)
    extra.pop(records.NATIVE, None)
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


def run_hook(
    raw: str,
    *,
    now: datetime,
    env: Mapping[str, str],
    open_store: Callable[[], Store],
    auto_resume: bool,
    zone: str | None,
    announce: Callable[[Notice], None] | None = None,
) -> HookResult:
    """Report the StopFailure in `raw`, or a continuation by hand (UserPromptSubmit, SessionStart
    resume); never raises for bad input or a refusing store. `announce` takes the notice of a
    limit that paused the session (REWAKE_NOTIFY), as `rewake run` sends it."""
    result = HookResult()
    if env.get(records.SUPERVISED_ENV) or env.get("REWAKE_MARK_ID"):
        # This Claude runs under `rewake run` (or its resume), which records the attempt from
        # the CLI's own events; a report from here would count it twice, under another name.
        return result
    try:
        hook = read_hook_input(raw)
    except HookInputError as error:
        result.say(f"ignored: {error}")
        return result
    if hook.hook_event_name in CONTINUE_EVENTS:
        # Imported here: that module builds on this one.

        continue_by_hand(hook, result, env=env, open_store=open_store)
        return result
    if hook.hook_event_name == NOTIFICATION:
        # Imported here: a prompt (UserPromptSubmit, the hook's most frequent run) needs none of it.
        from rewake.runner.hook.native import native_notice

        native_notice(hook, result, now=now, env=env, open_store=open_store)
        return result
    declined: Declined | None = None
    if hook.hook_event_name == STOP:
        # The main turn ended: a held workflow run may have ended with agents Claude Code did
        # not wait for (docs/workflows.md). Loaded only then: most sessions hold no run.
        from rewake.runner.hook.workflow import run_ended

        declined = run_ended(hook, result, now=now, env=env)
        if declined is None:
            return result
        auto_resume = auto_resume or declined.auto_resume
    elif hook.hook_event_name not in (None, "StopFailure"):
        result.say(
            f"ignored: hook_event_name {hook.hook_event_name!r} is not StopFailure, Stop, "
            "UserPromptSubmit, SessionStart or Notification"
        )
        return result
    elif WORKFLOW_AGENT in raw:  # loaded only then: the hook's start-up budget
        from rewake.runner.hook.workflow import record_hold, workflow_agent

        agent = workflow_agent(raw)
        if agent is not None:  # a workflow's agent, not the session's turn: docs/workflows.md
            record_hold(hook, agent, result, now=now, env=env, auto_resume=auto_resume)
            return result
    tail = read_transcript_tail(hook.transcript_path, env)
    if tail.problem:
        result.say(f"note: {tail.problem}; reporting the error text alone")
    root_id = result.root_id = root_id_for(hook.session_id)
    store = open_store()
    try:
        reported = _report(store, hook, tail, root_id, result, now=now, env=env, zone=zone,
                           auto_resume=auto_resume, declined=declined)  # fmt: skip
    finally:
        store.close()
    if reported is not None and announce is not None:
        # Imported only for a report: the notices load the sweeper's logging, and most runs
        # of the hook (a prompt in a session never reported) report nothing.
        from rewake.runner.process.notices import pause_notice

        notice = pause_notice(root_id, reported.answer, reported.mark, continues=reported.continues)
        if notice is not None:
            announce(notice)
    return result


class Reported(NamedTuple):
    """What a reported failure came to: the store's answer, the mark armed for it, and whether
    Claude Code continues the session by itself at the reset (nothing armed then)."""

    answer: JSON
    mark: JSON | None = None
    continues: bool = False


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
    declined: Declined | None = None,
) -> Reported | None:
    """Report the failure and arm auto-resume when asked and offered; None when nothing new
    was reported. `declined`: the failure is a workflow run's whose wait Claude Code declined
    (its limit, not the main turn's, and nobody continues it by itself)."""
    try:
        session: JSON | None = store.get_session(root_id)
    except StoreError as error:
        if error.code != "session_not_found":
            raise
        session = None
    old = records.load(root_id, env)
    key = declined.key if declined is not None else failure_key(tail)
    attempt = failure_attempt(session, old)
    seen = old is not None and key is not None and old.extra.get("hook_failure_key") == key
    if old is not None and seen and attempt - 1 == old.attempt:
        # Claude Code fires StopFailure again for a failure it already showed (helper queries
        # of the same session): reporting it as a new attempt would clear an armed mark.
        result.say(f"{root_id}: attempt {old.attempt} was already reported; nothing new")
        return None
    result.attempt = attempt
    body = failure_body(hook, tail, attempt=attempt, now=now, zone=zone)
    if declined is not None:
        # The limit the run's agents got, not the main turn's rows (its answer to the task
        # notification): the rejected events hold the exact reset, the message the gap.
        body["message"] = declined.message()
        body["events"] = list(declined.limit.events)
    answer = store.report_failure(root_id, RUN_ID, body)
    record = resume_record(hook, tail, root_id, attempt, old, auto_resume=auto_resume)
    record.extra["hook_failure_key"] = key
    if declined is not None:  # a headless resume must be let call the Workflow tool
        record = replace(record, args=declined.resume_args(record.args))
    records.save(record, env)
    result.say(f"{root_id}: attempt {attempt} reported: {_banner_words(answer)}")
    offer = answer.get("auto_resume") or {}
    if not offer.get("available"):
        if offer.get("code"):
            result.say(f"auto-resume not offered: {offer.get('detail') or offer['code']}")
            if offer["code"] == "native_auto_continue":
                result.say(f"to arm anyway: rewake auto-resume {root_id} on --despite-native")
        return Reported(answer)
    if declined is None and continues_by_itself(answer.get("verdict") or {}, now):
        result.say(
            "auto-resume not armed: Claude Code continues this session by itself at the reset "
            f'("Continuing automatically"); to arm anyway: rewake auto-resume {root_id} on'
        )
        return Reported(answer, continues=True)
    if not auto_resume:
        result.say(f"to resume it when the limit resets: rewake auto-resume {root_id} on")
        return Reported(answer)
    mark = store.set_auto_resume(root_id, enabled=True)
    result.armed = mark.get("state") == "armed"
    result.say(f"auto-resume {mark.get('state')}: due {mark.get('due_at')}")
    for warning in mark.get("warnings") or []:
        result.say(f"warning: {warning}")
    from rewake.runner.store.stores import LocalStore  # loaded already: the store is open

    if mark.get("warnings") and isinstance(store, LocalStore):
        result.say("no sweeper here resumes marks: `rewake setup` installs one (once)")
    return Reported(answer, mark)


#: The limits after which interactive Claude Code waits and continues by itself when the reset
#: is under a day ahead (it shows "Continuing automatically at ..." on its screen, which the
#: StopFailure payload does not carry); a model's limit and resets a day or more ahead get a
#: menu instead, where the user chooses.
_CONTINUING_SCOPES = frozenset({"five_hour", "session", "daily", "weekly", "extra_usage"})
_CONTINUING_WITHIN = timedelta(hours=24)


def continues_by_itself(verdict: JSON, now: datetime) -> bool:
    """Whether the interactive Claude Code that fired this StopFailure continues by itself at
    the reset, so that a resume from rewake would be a second one."""
    if verdict.get("native_auto_continue"):
        return True
    reset_at = verdict.get("reset_at")
    if verdict.get("kind") != "provider_quota" or not isinstance(reset_at, str):
        return False
    if verdict.get("scope") not in _CONTINUING_SCOPES:
        return False
    ahead = datetime.fromisoformat(reset_at.replace("Z", "+00:00")) - now
    return ahead < _CONTINUING_WITHIN


def failure_attempt(session: JSON | None, old: records.RunRecord | None) -> int:
    """The attempt a failure is reported on: the one the user started by hand (a prompt typed
    in the interactive session) while it is still open, else a new one."""
    current = current_attempt(session)
    if old is not None and current is not None:
        number, status = current
        if status == "started" and old.extra.get(CONTINUED) == number:
            return number
    return next_attempt(session)


def _banner_words(answer: JSON) -> str:
    banner = answer.get("banner") or {}
    words = " / ".join(str(banner[k]) for k in ("business", "detail") if banner.get(k))
    return words or str(answer.get("failure_kind") or "reported")
