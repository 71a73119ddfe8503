"""Why the store refused to arm auto-resume, in words: one table for `rewake show`,
`rewake auto-resume` and the web page, keyed by the API's 409 codes.

Each entry is a clause (lower case, no full stop): the terminal prints it after a colon, the
page makes a sentence of it with `as_sentence`. What a person can do about a refusal differs
between the two (a command-line flag, a button), so that part stays with each of them.

Imports nothing but the standard library: `rewake hook` reaches this through the runner's
views, and a hook must start fast.
"""

from __future__ import annotations

REFUSAL_REASONS: dict[str, str] = {
    "not_paused_on_provider_limit": (
        "auto-resume is only for a run paused on a provider limit, and this one is not"
    ),
    "reset_not_stated": (
        "the limit message states no reset time, so rewake cannot tell when to resume"
    ),
    "native_auto_continue": (
        "Claude Code said it continues this session by itself when the limit resets"
    ),
    "attempt_already_resumed": (
        "this attempt's auto-resume already ran or was overtaken; a resume is never repeated"
    ),
    "conversation_not_saved": (
        "the CLI saved no conversation for this attempt (the model never answered in it), so "
        "a resume would have nothing to continue; only a fresh start of the task can follow"
    ),
    "session_cancelled": "the session was cancelled, which is final",
    "recovery_in_progress": (
        "a resume for this session is being sent right now; wait for its outcome"
    ),
}


def as_sentence(clause: str) -> str:
    """`the session was cancelled` -> `The session was cancelled.`, for the page."""
    return clause[:1].upper() + clause[1:] + "."
