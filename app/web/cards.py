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
from rewake.reports.outcome_words import outcome_reason, what_was_said
from rewake.reports.refusal_words import REFUSALS, as_sentence

#: Each refusal of `PUT .../auto-resume` (and the other refusals a click may meet) in words.
#: The page's script shows the same words for a refusal that arrives when a button is clicked.
#: The arming refusals are the one table shared with the terminal, with the page's way around
#: each (`rewake.reports.refusal_words`); the other codes only a click meets.
REFUSAL_WORDS: dict[str, str] = {
    **{code: as_sentence(words.on_page()) for code, words in REFUSALS.items()},
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

#: What to do instead of waiting, for a limit no reset lifts, by the verdict's scope; the
#: provider's name fills `{provider}`.
NEXT_STEPS: dict[str, str] = {
    "credits": "add credits to the {provider} account, then resume the session",
    "spend_cap": "raise the spend cap of the {provider} account, then resume the session",
}
#: The same for any other scope (an organisation's limit, a plan's quota).
NO_RESET_STEP = "raise the limit of the {provider} account (or ask who sets it), then resume"
#: What a resumed session that still shows paused is waiting for.
RESUMED_NOT_REPORTED = "it shows as running once its host reports the new attempt"
#: Why a paused session that waiting will not help offers no auto-resume.
BLOCKED_REASON = (
    "Auto-resume is not offered: no reset will end this pause, so there is nothing to wait for."
)

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
    blocked: bool = False
    next_step: tuple[str, str, str] | None = None


@dataclass(frozen=True, slots=True)
class MarkView:
    """The mark's state in words, with the instant it counts down to."""

    tone: Tone
    headline: str
    detail: str | None = None
    due_at: str | None = None
    check: str | None = None
    warnings: tuple[str, ...] = ()
    technical: str | None = None


@dataclass(frozen=True, slots=True)
class ActionView:
    """The one action that fits, or why the usual one is not offered (then `kind` is "none":
    the page never shows a disabled button)."""

    kind: ActionKind
    label: str = ""
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

    @property
    def blocked(self) -> bool:
        """Paused where waiting will not help: the card looks different and says what to do."""
        return self.state == "paused" and self.banner is not None and self.banner.blocked


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
    kind, technical = str(failure["failure_kind"]), str(banner["technical"])
    refusal = refusal_code_of(technical)
    step = next_step(kind, refusal, _scope_of(technical), failure.get("provider"), command)
    return BannerView(
        headline=str(banner["business"]),
        detail=detail,
        technical=technical,
        failure_kind=kind,
        reset_at=str(failure["reset_at"]) if counts_down else None,
        command=command,
        blocked=step is not None,
        next_step=step,
    )


def next_step(
    failure_kind: str,
    refusal: str | None,
    scope: str | None,
    provider: str | None,
    command: str | None,
) -> tuple[str, str, str] | None:
    """What to do instead of waiting, as (words, command, words) with the command shown as
    code; None where waiting (or auto-resume) is the way on. Sign-in and limits no reset lifts
    (credits, spend caps) are the cases waiting will not help."""
    if failure_kind == "login_required":
        if command:
            return ("run ", command, " in the session, then resume it")
        return ("sign in to the CLI again in the session, then resume it", "", "")
    if failure_kind == "provider_quota" and refusal == "no_reset":
        words = NEXT_STEPS.get(str(scope), NO_RESET_STEP)
        return (words.format(provider=provider or "provider's"), "", "")
    return None


def _scope_of(technical: str) -> str | None:
    """The verdict's scope as the technical label names it ("...; scope credits; ...")."""
    for part in technical.split("; "):
        if part.startswith("scope "):
            return part.removeprefix("scope ")
    return None


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
    return replace(
        view,
        warnings=tuple(str(w) for w in mark.get("warnings") or ()),
        technical=mark_technical(mark),
    )


def mark_technical(mark: JSON) -> str | None:
    """The outcome as recorded ("outcome exit_1: pid 29954 exited 1"), shown beside the words
    as the technical part; None before an outcome."""
    outcome, said = mark.get("outcome"), mark.get("outcome_detail")
    if not outcome and not said:
        return None
    parts = (f"outcome {outcome}" if outcome else None, said)
    return ": ".join(str(part) for part in parts if part)


def outcome_words(mark: JSON, otherwise: str | None) -> str | None:
    """How the resume ended, in words (`rewake.reports.outcome_words`): the expiry's own reason
    when it says one, else the outcome code's; `otherwise` for a mark with no code."""
    outcome = mark.get("outcome")
    if outcome == "expired" and mark.get("outcome_detail") == "host_unseen":
        outcome = "host_unseen"
    words = outcome_reason(outcome) or otherwise
    said = what_was_said(outcome, mark.get("outcome_detail"))
    # What the program or host said is the reason itself: beside the words, not only below.
    return f"{words}: {said}" if words and said else words


def _mark_words(mark: JSON, state: str, resume_delay_s: int) -> MarkView:
    """The words of each state; an outcome's technical detail ("pid 29954 exited 1") is never
    the words, it is shown beside them (`mark_technical`)."""
    if state == "armed" and mark.get("outcome") == "deferred":
        said = mark.get("outcome_detail")
        return MarkView("warn", "Waiting: an open session holds the conversation",
                        str(said) if said else outcome_words(mark, None),
                        due_at=mark["due_at"])  # fmt: skip
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
            f"{outcome_words(mark, 'the send started but its answer never came back')}; "
            "it is never sent again",
            check=uncertain_check(mark),
        )
    if state == "done":
        return MarkView("ok", "Resumed", outcome_words(mark, "the host accepted the resume"))
    if state == "failed":
        if mark.get("outcome") == "not_sent":
            return MarkView("bad", "Not resumed", "settled by hand: the resume was not sent")
        return MarkView("bad", "The resume failed", outcome_words(mark, "the host refused it"))
    if state == "logged":
        return MarkView("info", "Logged only", "the log executor resumes nothing; see its log")
    if state == "expired":
        return MarkView("bad", "Expired, not sent", outcome_words(mark, mark.get("clear_reason")))
    if state == "superseded":
        return MarkView("info", "Overtaken", outcome_words(mark, "the run moved on"))
    if state == "cleared":
        reason = str(mark.get("clear_reason"))
        return MarkView("info", "Auto-resume is off", CLEAR_REASONS.get(reason, reason))
    return MarkView("info", f"Mark {state}", outcome_words(mark, None))


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


def action_for(session_state: str, mark: JSON, *, blocked: bool = False) -> ActionView:
    """The one action that fits: turn off a live mark, settle an uncertain one, turn on where
    the API would accept it, or, with no button, say why not (only for a paused session; for
    one that waiting will not help, that there is nothing to wait for)."""
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
    if session_state != "paused":
        return ActionView("none")
    if code == "attempt_already_resumed":  # the mark's outcome says what happened
        return ActionView("none", code=code, reason=REFUSAL_WORDS[code])
    if code == "conversation_not_saved":  # the API's detail names a JSON field: not for a page
        words = REFUSAL_WORDS[code]
        reason = f"Auto-resume is not offered: {words[:1].lower()}{words[1:]}"
        return ActionView("none", code=code, reason=reason)
    if blocked:
        return ActionView("none", code=code, reason=BLOCKED_REASON)
    reason = refusal_words(code, offer.get("detail"))
    return ActionView(
        "none", code=code, reason=f"Auto-resume is not offered: {reason[:1].lower()}{reason[1:]}"
    )


def refusal_words(code: str | None, detail: str | None) -> str:
    """A refusal as a person reads it: the code's sentence, then the API's own detail."""
    words = REFUSAL_WORDS.get(str(code), "")
    if detail:
        return f"{words} rewake says: {detail}." if words else f"{detail}."
    return words


def card(summary: JSON, mark: JSON, *, resume_delay_s: int) -> Card:
    """A session's card from its summary (as `GET /api/agent/runs` lists it) and its mark."""
    failure = summary.get("failure")
    banner = banner_view(failure)
    shown = mark_view(mark, resume_delay_s=resume_delay_s)
    if shown is not None and shown.headline == "Resumed" and summary["state"] == "paused":
        # True now: the resume arrived, the new attempt is not reported yet.
        shown = replace(shown, detail=f"{shown.detail}; {RESUMED_NOT_REPORTED}")
    return Card(
        root_id=str(summary["root_id"]),
        state=str(summary["state"]),
        provider=failure.get("provider") if failure else None,
        banner=banner,
        mark=shown,
        action=action_for(
            str(summary["state"]), mark, blocked=banner is not None and banner.blocked
        ),
        updated_at=summary.get("updated_at"),
    )
