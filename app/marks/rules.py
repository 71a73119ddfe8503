"""Pure rules of auto-resume marks: when one falls due, and whether a failure offers one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from rewake.errors import DomainError
from rewake.parsers.verdict import REFUSALS


def due_at_for(
    reset_at: datetime, resolution_s: int, resume_delay_s: int, now: datetime
) -> datetime:
    """reset_at + resolution_s + resume delay; a mark armed after that is due at once (now)."""
    due = reset_at + timedelta(seconds=resolution_s + resume_delay_s)
    return max(due, now)


@dataclass(frozen=True, slots=True)
class OfferFacts:
    """What the auto-resume offer needs to know about a session's current failure."""

    cancelled: bool
    has_failure: bool
    run_paused_at_failure: bool
    failure_kind: str | None
    halted: bool
    reset_at: datetime | None
    refusal_code: str | None
    refusal_detail: str | None
    native_auto_continue: bool
    attempt_resumed_before: bool
    #: The report's word that the CLI saved no conversation (False), or None: not known.
    conversation_saved: bool | None = None


def auto_resume_refusal(
    facts: OfferFacts, *, despite_native: bool, fresh_if_missing: bool = False
) -> DomainError | None:
    """Why auto-resume cannot be armed for the session's current failure, or None if it can.
    `fresh_if_missing`: the arming accepts that the resume starts the task afresh when there
    is no conversation to continue, as the CLI's `--fresh-if-missing` does."""
    if facts.cancelled:
        return DomainError("session_cancelled", "the session was cancelled")
    if not facts.has_failure:
        return DomainError(
            "not_paused_on_provider_limit",
            "the session's current attempt did not fail: it has not failed yet, or it moved on",
        )
    if facts.attempt_resumed_before:
        return DomainError(
            "attempt_already_resumed",
            "this attempt's auto-resume already ran or was overtaken; it is never repeated",
        )
    if not facts.run_paused_at_failure:
        return DomainError(
            "not_paused_on_provider_limit", "the run has moved on from the failed attempt"
        )
    if facts.failure_kind != "provider_quota" or facts.halted:
        why = "the run was halted" if facts.halted else f"the failure is {facts.failure_kind}"
        return DomainError("not_paused_on_provider_limit", why)
    if facts.reset_at is None:
        return reset_not_stated(facts.refusal_code, facts.refusal_detail)
    if facts.conversation_saved is False and not fresh_if_missing:
        return DomainError(
            "conversation_not_saved",
            "the CLI saved no conversation for this attempt (the model never answered in it), "
            "so a resume has nothing to continue; send fresh_if_missing: true to arm a resume "
            "that starts the task afresh",
        )
    if facts.native_auto_continue and not despite_native:
        return DomainError(
            "native_auto_continue",
            "the CLI said it continues by itself; send despite_native: true to arm anyway",
        )
    return None


def reset_not_stated(refusal_code: str | None, refusal_detail: str | None) -> DomainError:
    """The refusal of a limit with no usable reset, naming the verdict's refusal and why."""
    code = refusal_code or "not_stated"
    what = REFUSALS.get(code, REFUSALS["not_stated"]).words
    said = f"{code}: {refusal_detail}" if refusal_detail else code
    return DomainError("reset_not_stated", f"{what} ({said})", refusal=code)


#: What the sweepers seen lately will do with a due mark: nothing (none runs), log it only,
#: or resume it.
SweepersWill = Literal["nothing", "log", "resume"]


def sweepers_will(executors: Sequence[str | None]) -> SweepersWill:
    """Judged by the executors of the sweepers seen lately (None: a sweeper of an older rewake,
    which does not say, and is taken to resume): one that resumes is enough."""
    if not executors:
        return "nothing"
    return "log" if all(executor == "log" for executor in executors) else "resume"


def sweeper_warnings(will: SweepersWill, fresh_s: int) -> list[str]:
    """What keeps a live mark from being resumed, in words."""
    if will == "nothing":
        return [f"no sweeper seen in the last {fresh_s} s"]
    if will == "log":
        return ["executor is log: nothing will be resumed"]
    return []
