"""Why the store refused to arm auto-resume, in words: one table for `rewake show`,
`rewake auto-resume` and the web page, keyed by the API's 409 codes.

Each entry's reason is a clause (lower case, no full stop): the terminal prints it after a
colon, the page makes a sentence of it with `as_sentence`. What a person can do about a refusal
differs between the two (a command-line flag, a button, a command to run instead): where it
does, the entry says it for each, and `in_terminal` and `on_page` join it to the reason.

Imports nothing but the standard library: `rewake hook` reaches this through the runner's
views, and a hook must start fast.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RefusalWords:
    """One refusal in words: why, and what a person can do about it in each place."""

    reason: str
    #: What the terminal adds: the flag that arms anyway.
    terminal: str | None = None
    #: What the page adds: when its button still helps, or what to do instead.
    page: str | None = None

    def in_terminal(self) -> str:
        """The clause `rewake show` and `rewake auto-resume` print."""
        return f"{self.reason}; {self.terminal}" if self.terminal else self.reason

    def on_page(self) -> str:
        """The clause the page makes a sentence of."""
        return f"{self.reason}; {self.page}" if self.page else self.reason


REFUSALS: dict[str, RefusalWords] = {
    "not_paused_on_provider_limit": RefusalWords(
        "auto-resume is only for a run paused on a provider limit, and this one is not"
    ),
    "reset_not_stated": RefusalWords(
        "the limit message states no reset time, so rewake cannot tell when to resume"
    ),
    "native_auto_continue": RefusalWords(
        "Claude Code said it continues this session by itself when the limit resets",
        terminal="add --despite-native to arm anyway",
        page="turn auto-resume on anyway only if it does not",
    ),
    "attempt_already_resumed": RefusalWords(
        "this attempt's auto-resume already ran or was overtaken; a resume is never repeated"
    ),
    "conversation_not_saved": RefusalWords(
        "the CLI saved no conversation for this attempt (the model never answered in it), so "
        "a resume would have nothing to continue; only a fresh start of the task can follow",
        terminal="add --fresh-if-missing to arm that",
        # The page arms no fresh start (re-running the task is the user's choice, made where
        # the work directory is): it names the command that does.
        page="to start the task afresh after the reset, arm that on the command line: "
        "rewake auto-resume NAME on --fresh-if-missing",
    ),
    "session_cancelled": RefusalWords("the session was cancelled, which is final"),
    "recovery_in_progress": RefusalWords(
        "a resume for this session is being sent right now; wait for its outcome"
    ),
}


def as_sentence(clause: str) -> str:
    """`the session was cancelled` -> `The session was cancelled.`, for the page."""
    return clause[:1].upper() + clause[1:] + "."
