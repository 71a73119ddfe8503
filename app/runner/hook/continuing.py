"""The user continues an interactive Claude session by hand (`UserPromptSubmit`, `SessionStart`
resume): record it, or, while rewake resumes that conversation headless, stop the prompt.

A prompt typed while the headless resume is sending or running would put a second Claude on the
same conversation, and its recorded start would settle the mark with the user's prompt as proof
while `rewake run --resume-of` still spawns its CLI: two CLIs sharing one attempt, one of whose
reports is later refused (attempt_already_reported). So before anything is recorded the hook
looks at both guards of guard.py: the session lock (a `rewake run` holds it while its CLI runs)
and the mark (`sending` or `uncertain`: the resume is, or may be, under way). On a conflict
`HookResult.blocked` is set; the command exits 2, which Claude Code documents as "block the
prompt, show stderr to the user" for UserPromptSubmit. A SessionStart cannot be blocked (exit 2
only shows stderr to the user there), so it gets the same words as a warning.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace

from rewake.runner.hook.payload import (
    CONTINUED,
    RUN_ID,
    HookInput,
    HookResult,
    current_attempt,
    next_attempt,
    root_id_for,
)
from rewake.runner.process.guard import SessionLock
from rewake.runner.store import records
from rewake.runner.store.base import JSON, Store, StoreError

#: Mark states in which the headless resume is, or may be, running (see guard.py).
RESUMING_STATES = frozenset({"sending", "uncertain"})
#: How long a prompt waits for a resume's look to end before it is blocked (`_look_ends`);
#: REWAKE_HOOK_LOOK_WAIT_S sets it (0: block at once), within the hook's own 20 s.
LOOK_WAIT_ENV = "REWAKE_HOOK_LOOK_WAIT_S"
LOOK_WAIT_S = 8.0
MAX_LOOK_WAIT_S = 12.0
LOOK_POLL_S = 0.25


def continue_by_hand(
    hook: HookInput,
    result: HookResult,
    *,
    env: Mapping[str, str],
    open_store: Callable[[], Store],
) -> None:
    """The user typed in (or reopened) the interactive session: if its current attempt failed,
    record the next one as started, which clears an armed auto-resume as `manual_resume`;
    while rewake resumes the conversation headless, block instead and record nothing.

    UserPromptSubmit fires on every prompt of every session, so an unknown session costs one
    file lookup (no RunRecord from this hook: silent, no store opened, nothing written)."""
    if hook.hook_event_name == "SessionStart" and hook.source != "resume":
        return  # a new, cleared or compacted session continues no failed turn
    root_id = root_id_for(hook.session_id)
    old = records.load(root_id, env)
    if old is None or old.extra.get("origin") != "hook":
        return
    # One store for the whole prompt, opened when first needed: never for a free lock and a
    # settled prompt, once however many times a look is waited for.
    opened: list[Store] = []

    def store_once() -> Store:
        if not opened:
            opened.append(open_store())
        return opened[0]

    try:
        # The lock first: it needs no store, and a run resumes (or a manual `rewake run
        # --resume` runs) whether or not this prompt was already settled.
        holder = lock_holder(root_id, env)
        if holder is not None and not _look_ends(hook, root_id, env, store_once):
            block(hook, result, root_id, f"a rewake run holds its lock: {holder}")
            return
        if old.extra.get(CONTINUED) == old.attempt:
            return
        result.root_id = root_id
        store = store_once()
        session = store.get_session(root_id)
        mark = session.get("mark") or {}
        if mark.get("state") in RESUMING_STATES and not typed_by_rewake(hook, old):
            if mark.get("state") != "sending" or not _look_ends(hook, root_id, env, store_once):
                block(hook, result, root_id, f"mark {mark.get('id')} is {mark['state']}")
                return
            session = store.get_session(root_id)
        _record(hook, result, store, session, old, root_id, env)
    except StoreError as error:
        if error.code not in ("session_not_found", "session_deleted"):
            result.say(f"{root_id}: continuation not recorded: {error.code}: {error.detail}")
    finally:
        for store in opened:
            store.close()


def _record(
    hook: HookInput,
    result: HookResult,
    store: Store,
    session: JSON,
    old: records.RunRecord,
    root_id: str,
    env: Mapping[str, str],
) -> None:
    current = current_attempt(session)
    if current is None or current[1] == "started":
        return  # nothing failed, or an attempt is in flight and may still fail: look again
    attempt = old.attempt
    if current[1] == "failed":
        attempt = next_attempt(session)
        store.record_attempt(root_id, RUN_ID, attempt, "started")
        result.attempt = attempt
        result.say(
            f"{root_id}: continued by hand ({hook.hook_event_name}): attempt {attempt} "
            "started; an armed auto-resume is cleared (manual_resume)"
        )
    extra = {**old.extra, CONTINUED: attempt}
    extra.pop(records.TYPED_RESUME, None)  # let through once
    records.save(replace(old, attempt=attempt, extra=extra), env)


def _look_ends(
    hook: HookInput, root_id: str, env: Mapping[str, str], store: Callable[[], Store]
) -> bool:
    """Whether the resume that holds the conversation turns out, within LOOK_WAIT_S, to have
    been only a look: the sweeper's `rewake run --resume-of` holds the lock and the mark is
    `sending` while it checks whether the conversation moved on, and when an open Claude will
    continue it by itself, nothing is sent and the mark waits again (docs/run.md). Claude's own
    continuation arriving in that window is that very continuation: blocked, nobody would
    continue. So a prompt waits for the lock to be free and the mark to leave `sending`; a
    resume that really runs the CLI holds both for minutes, and the prompt is blocked as
    before. A SessionStart does not wait: it cannot be blocked anyway."""
    if hook.hook_event_name != "UserPromptSubmit":
        return False
    try:
        wait_s = float(env.get(LOOK_WAIT_ENV, LOOK_WAIT_S))
    except ValueError:
        wait_s = LOOK_WAIT_S
    deadline = time.monotonic() + max(0.0, min(wait_s, MAX_LOOK_WAIT_S))
    while time.monotonic() < deadline:
        time.sleep(LOOK_POLL_S)
        if lock_holder(root_id, env) is not None:
            continue
        try:
            mark = store().get_session(root_id).get("mark") or {}
        except StoreError:
            return False
        if mark.get("state") != "sending":
            return mark.get("state") not in RESUMING_STATES
    return False


def typed_by_rewake(hook: HookInput, record: records.RunRecord) -> bool:
    """Whether this prompt is the resume rewake typed into this very session, the CLI that
    holds the conversation (rewake.runner.process.panes): that is the resume itself, not a
    second writer, so it is let through and recorded as the next attempt."""
    typed = record.extra.get(records.TYPED_RESUME)
    prompt = " ".join((hook.prompt or "").split())
    return hook.hook_event_name == "UserPromptSubmit" and bool(prompt) and typed == prompt


def lock_holder(root_id: str, env: Mapping[str, str]) -> str | None:
    """Who holds the session's lock (a running `rewake run`), or None when it is free. Taken
    without blocking and let go at once: held any longer, it would refuse the sweeper's
    `--resume-of` that is about to start."""
    lock = SessionLock(root_id)
    # SessionLock reads the process environment; the hook is handed its own (the tests' too).
    lock.path = records.lock_path(root_id, env)
    try:
        if lock.try_acquire("rewake hook: checking for a headless resume"):
            return None
        return lock.holder() or "holder unknown"
    except records.RecordError:
        return None  # no usable state dir: no rewake run can hold a lock in it either
    finally:
        lock.release()


def block(hook: HookInput, result: HookResult, root_id: str, why: str) -> None:
    """Stop the prompt (exit 2): the reason, and how to follow the headless resume."""
    result.root_id = root_id
    result.blocked = True
    if hook.hook_event_name == "SessionStart":
        result.say(
            f"{root_id}: rewake is resuming this conversation headless right now ({why}); "
            "do not type here until it ends, or two Claudes continue the same conversation. "
            f"See it with `rewake show {root_id}`."
        )
        return
    result.say(
        f"{root_id}: prompt blocked: rewake is resuming this conversation headless right now "
        f"({why}); a prompt here would run a second Claude on the same conversation. See it "
        f"with `rewake show {root_id}`; type again once it ends (when `rewake run` finishes)."
    )
