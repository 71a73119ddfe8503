"""What the page shows for a session, worked out from the API's own JSON: the banner split
into words a person reads, the state of its mark, and the one action that fits.

Pure functions: the request's `now` and the policy come in as arguments, so the words a page
shows are tested without a browser or a database.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Literal

from rewake.context import JSON
from rewake.instants import parse_instant
from rewake.reports.refusal_words import REFUSAL_REASONS, as_sentence

#: Each refusal of `PUT .../auto-resume` (and the other refusals a click may meet) in words.
#: The page's script shows the same words for a refusal that arrives when a button is clicked.
#: The arming refusals' reasons are shared with the terminal; the page's way around native
#: auto-continue is its "Turn on anyway" button, and the other codes only a click meets.
REFUSAL_WORDS: dict[str, str] = {
    **{code: as_sentence(reason) for code, reason in REFUSAL_REASONS.items()},
    "native_auto_continue": as_sentence(
        f"{REFUSAL_REASONS['native_auto_continue']}; turn auto-resume on anyway only if it does not"
    ),
    "mark_not_uncertain": "The mark was settled meanwhile; reload to see how.",
    "mark_ambiguous": "Several resumes are uncertain; settle them from the API, naming each.",
    "session_deleted": "The session was deleted.",
    "session_not_found": "rewake has no such session.",
    "unauthorized": "Your sign-in is no longer valid; sign in again.",
    "loopback_only": "Only this machine may act here.",
}

#: Why a mark was cleared, in words.
CLEAR_REASONS: dict[str, str] = {
    "disabled": "turned off by hand",
    "manual_resume": "the run was resumed by hand",
    "new_failure": "a newer failure replaced it",
    "cancel": "the session was cancelled",
    "delete": "the session was deleted",
}

#: What a banner of this refusal adds: what the person can do instead of waiting.
REFUSAL_HINTS: dict[str, str] = {
    "no_reset": "add credits or raise the limit",
}

Tone = Literal["ok", "info", "warn", "bad"]
ActionKind = Literal["arm", "arm_despite_native", "disarm", "resolve", "none"]


@dataclass(frozen=True, slots=True)
class BannerView:
    """A failure's banner: `headline` ("Paused · provider limit"), then either a reset with
    its countdown or `detail` in words (backticked commands become `commands`)."""

    headline: str
    detail: str
    technical: str
    failure_kind: str
    reset_at: str | None = None
    command: str | None = None


@dataclass(frozen=True, slots=True)
class MarkView:
    """The mark's state in words, with the instant it counts down to."""

    tone: Tone
    headline: str
    detail: str | None = None
    due_at: str | None = None
    check: str | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ActionView:
    """The one action that fits, or why the usual one is not offered."""

    kind: ActionKind
    label: str = ""
    enabled: bool = True
    code: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Card:
    """One session as the list (and the top of its own page) shows it."""

    root_id: str
    state: str
    provider: str | None
    banner: BannerView | None
    mark: MarkView | None
    action: ActionView
    updated_at: str | None = None


def banner_view(failure: JSON | None) -> BannerView | None:
    """The banner of a failure summary (`failure_kind`, `reset_at`, `banner`), in parts."""
    if failure is None:
        return None
    banner = failure["banner"]
    detail = str(banner["detail"])
    counts_down = failure["failure_kind"] == "provider_quota" and failure.get("reset_at")
    command = None
    if detail.count("`") == 2:  # "run `/login`": the command is shown as code
        before, command, after = detail.split("`")
        detail = (before + after).strip()
    refusal = refusal_code_of(str(banner["technical"]))
    if refusal in REFUSAL_HINTS:
        detail = f"{detail}: {REFUSAL_HINTS[refusal]}"
    return BannerView(
        headline=str(banner["business"]),
        detail=detail,
        technical=str(banner["technical"]),
        failure_kind=str(failure["failure_kind"]),
        reset_at=str(failure["reset_at"]) if counts_down else None,
        command=command,
    )


def refusal_code_of(technical: str) -> str | None:
    """The verdict's refusal code as the technical label names it ("refusal no_reset: ...")."""
    _, found, rest = technical.partition("refusal ")
    return rest.split(":", 1)[0] if found else None


def mark_view(mark: JSON, *, resume_delay_s: int) -> MarkView | None:
    """The mark's state in words, with its warnings whatever the state (an uncertain mark's
    "no sweeper seen" matters as much as an armed one's); None for a session that never had
    one."""
    state = mark.get("state")
    if state is None:
        return None
    view = _mark_words(mark, str(state), resume_delay_s)
    return replace(view, warnings=tuple(str(w) for w in mark.get("warnings") or ()))


def _mark_words(mark: JSON, state: str, resume_delay_s: int) -> MarkView:
    detail = mark.get("outcome_detail")
    if state == "armed":
        held = held_for_account(mark, resume_delay_s)
        return MarkView(
            "ok",
            "Auto-resume is on",
            held or f"armed by {mark['armed_by']}; resumes once, after the reset",
            due_at=mark["due_at"],
        )
    if state in ("claimed", "sending"):
        return MarkView("info", "Resuming now", "the resume is being sent")
    if state == "uncertain":
        return MarkView(
            "warn",
            "Unknown whether the resume arrived",
            "the send started but its answer never came back; it is never sent again",
            check=uncertain_check(mark),
        )
    if state == "done":
        return MarkView("ok", "Resumed", detail or "the host accepted the resume")
    if state == "failed":
        if mark.get("outcome") == "not_sent":
            return MarkView("bad", "Not resumed", "settled by hand: the resume was not sent")
        return MarkView("bad", "The resume failed", detail or "the host refused it")
    if state == "logged":
        return MarkView("info", "Logged only", "the log executor resumes nothing; see its log")
    if state == "expired":
        return MarkView("bad", "Expired, not sent", detail or mark.get("clear_reason"))
    if state == "superseded":
        return MarkView("info", "Overtaken", detail or "the run moved on before the resume")
    if state == "cleared":
        reason = str(mark.get("clear_reason"))
        return MarkView("info", "Auto-resume is off", CLEAR_REASONS.get(reason, reason))
    return MarkView("info", f"Mark {state}", detail)


def held_for_account(mark: JSON, resume_delay_s: int) -> str | None:
    """Words for an armed mark whose due_at was moved later than its own reset asks: a resumed
    session of the same account hit the limit again, so this one waits for that reset."""
    reset_at, due_at, armed_at = mark.get("reset_at"), mark.get("due_at"), mark.get("armed_at")
    if not (reset_at and due_at and armed_at):
        return None
    own = parse_instant(reset_at) + timedelta(
        seconds=(mark.get("resolution_s") or 0) + resume_delay_s
    )
    if parse_instant(due_at) <= max(own, parse_instant(armed_at)):
        return None
    account = mark.get("account_key") or "its account"
    return f"held for the account {account}: another session of it hit the limit again"


def uncertain_check(mark: JSON) -> str:
    """What to look at before settling an uncertain mark by hand."""
    key = mark.get("attempt_key")
    where = f" (the host logs it under attempt key {key})" if key else ""
    return (
        f"Check whether run {mark['run_id']} went on after attempt {mark['attempt']}{where}: "
        "if it did, the resume arrived."
    )


def action_for(session_state: str, mark: JSON) -> ActionView:
    """The one action that fits: turn off a live mark, settle an uncertain one, turn on where
    the API would accept it, or say why it would not (only for a paused session)."""
    state = mark.get("state")
    if state in ("armed", "claimed"):
        return ActionView("disarm", "Turn auto-resume off")
    if state == "sending":
        return ActionView("none", reason="A resume is being sent; it cannot be stopped now.")
    if state == "uncertain":
        return ActionView("resolve", "Settle")
    offer = mark.get("offer") or {}
    if offer.get("available"):
        return ActionView("arm", "Turn auto-resume on")
    code = offer.get("code")
    if code == "native_auto_continue":  # the API's detail names a JSON field: not for a page
        reason = REFUSAL_WORDS[code]
        return ActionView("arm_despite_native", "Turn on anyway", code=code, reason=reason)
    reason = refusal_words(code, offer.get("detail"))
    if session_state != "paused":
        return ActionView("none")
    if code == "attempt_already_resumed":  # the mark's outcome says what happened
        return ActionView("none", code=code, reason=REFUSAL_WORDS[code])
    return ActionView("arm", "Turn auto-resume on", enabled=False, code=code, reason=reason)


def refusal_words(code: str | None, detail: str | None) -> str:
    """A refusal as a person reads it: the code's sentence, then the API's own detail."""
    words = REFUSAL_WORDS.get(str(code), "")
    if detail:
        return f"{words} rewake says: {detail}." if words else f"{detail}."
    return words


def card(summary: JSON, mark: JSON, *, resume_delay_s: int) -> Card:
    """A session's card from its summary (as `GET /api/agent/runs` lists it) and its mark."""
    failure = summary.get("failure")
    return Card(
        root_id=str(summary["root_id"]),
        state=str(summary["state"]),
        provider=failure.get("provider") if failure else None,
        banner=banner_view(failure),
        mark=mark_view(mark, resume_delay_s=resume_delay_s),
        action=action_for(str(summary["state"]), mark),
        updated_at=summary.get("updated_at"),
    )
