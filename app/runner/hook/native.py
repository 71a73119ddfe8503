"""Claude Code's own auto-continue, as its `Notification` hook reports it.

Interactive Claude Code continues a conversation by itself after a limit ("Wait here, then
continue automatically", or the five-hour limit's "Continuing automatically at ..."). What
becomes of that continuation it reports through the `Notification` hook, as
`{"hook_event_name": "Notification", "message": ..., "title": ..., "notification_type": ...}`
beside the usual session_id, transcript_path and cwd:

- `quota_auto_resume_fired`: it continues the conversation itself;
- `quota_auto_resume_stale`: the reset passed while the computer slept; it does not continue
  ("press enter to continue");
- `quota_auto_resume_disabled`: it gives up (turned off, sign-in changed, workflow held, the
  reset moved more than 24 hours out, repeated hits, the continuation blocked).

rewake stood down for such a conversation because Claude said it would continue. When Claude
gives up, rewake is the net again: the record notes it (records.NATIVE), so that the fire-time
check (rewake.runner.process.attempts.conversation_moved_on) lets the mark type the resume into
the open Claude; a mark the hook did not arm is armed now, when the session asked for
auto-resume and its failure allows it. When Claude continues, the note makes the fire-time check
end the mark with that reason.

Every other notification, and one of a session rewake was never told of, costs one file lookup
at most: nothing is opened, nothing stored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime

from rewake.runner.hook.payload import CONTINUED, HookInput, HookResult, root_id_for
from rewake.runner.store import records
from rewake.runner.store.base import Store, StoreError

FIRED = "quota_auto_resume_fired"
#: The notifications by which Claude says it will not continue, and what they mean in words.
GAVE_UP: Mapping[str, str] = {
    "quota_auto_resume_stale": "the reset passed while the computer slept, and Claude Code "
    "waits for Enter",
    "quota_auto_resume_disabled": "Claude Code stopped its own automatic continue",
}
#: Mark states after which the mark still fires (and its fire-time check reads the note).
LIVE = frozenset({"armed", "claimed", "sending"})


def native_notice(
    hook: HookInput,
    result: HookResult,
    *,
    now: datetime,
    env: Mapping[str, str],
    open_store: Callable[[], Store],
) -> None:
    """Note what Claude Code said of its own continuation of the session's failed attempt, and
    when it gave up, make sure rewake's mark is there to continue it instead."""
    kind = hook.notification_type
    if kind != FIRED and kind not in GAVE_UP:
        return  # idle prompts, permission requests, ...: none of rewake's business
    root_id = root_id_for(hook.session_id)
    old = records.load(root_id, env)
    if old is None or old.extra.get("origin") != "hook":
        return  # a session rewake never reported: it holds nothing to continue
    if old.extra.get(CONTINUED) == old.attempt:
        return  # the user continued the failed attempt by hand already
    result.root_id = root_id
    note = {"attempt": old.attempt, "type": kind, "at": now.isoformat(), "message": hook.message}
    records.save(replace(old, extra={**old.extra, records.NATIVE: note}), env)
    if kind == FIRED:
        result.say(f"{root_id}: Claude Code continues attempt {old.attempt} itself ({kind})")
        return
    why = GAVE_UP.get(kind or "", kind)
    result.say(f"{root_id}: Claude Code will not continue attempt {old.attempt} itself: "
               f"{why} ({kind}); rewake's mark continues it")  # fmt: skip
    store = open_store()
    try:
        _arm(store, root_id, bool(old.extra.get("auto_resume")), result)
    except StoreError as error:
        result.say(f"{root_id}: auto-resume not armed: {error.code}: {error.detail}")
    finally:
        store.close()


def _arm(store: Store, root_id: str, auto_resume: bool, result: HookResult) -> None:
    """The mark that continues the conversation: the live one, or one armed now (despite the
    CLI's word that it continues by itself: it just said it will not)."""
    mark = store.get_mark(root_id)
    if mark.get("state") in LIVE:
        result.say(f"mark {mark.get('id')} is {mark['state']}, due {mark.get('due_at')}: it "
                   "types the resume into this Claude Code when it fires")  # fmt: skip
        return
    if not auto_resume:
        result.say(f"to resume it: rewake auto-resume {root_id} on --despite-native")
        return
    mark = store.set_auto_resume(root_id, enabled=True, despite_native=True)
    result.armed = mark.get("state") == "armed"
    result.say(f"auto-resume {mark.get('state')}: due {mark.get('due_at')}")
