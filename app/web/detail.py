"""The session page's parts beyond the card: the CLI text with the verdict's evidence marked,
and the timeline in words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rewake.context import JSON
from rewake.reports import session_json
from rewake.reports.evidence import locate, narrow

#: Characters of CLI text shown on either side of the evidence; scrollback can be megabytes.
CONTEXT_CHARS = 2_000
#: Without evidence, this much of the end of the text is shown (the stop banner is last).
TAIL_CHARS = 4_000

#: C0 controls (but newline and tab) as their visible Control Pictures, one character for one,
#: so that ANSI escapes show as ␛[31m and the evidence offsets still hold.
_VISIBLE_CONTROLS = {code: 0x2400 + code for code in range(32) if code not in (9, 10)} | {
    0x7F: 0x2421
}

#: Timeline events in words; others are shown as their code.
EVENT_WORDS: dict[str, str] = {
    "failure_reported": "failure reported",
    "attempt_started": "attempt started",
    "attempt_completed": "attempt completed",
    "manual_resume": "resumed by hand",
    "cancelled": "cancelled",
    "mark_armed": "auto-resume turned on",
    "mark_cleared": "auto-resume cleared",
    "mark_claimed": "resume claimed by a sweeper",
    "mark_sending": "resume being sent",
    "mark_done": "resume arrived",
    "mark_failed": "resume failed",
    "mark_uncertain": "resume outcome unknown",
    "mark_resolved": "uncertain resume settled by hand",
    "mark_held": "held for the account",
    "mark_expired": "auto-resume expired",
    "mark_logged": "resume logged (log executor)",
    "mark_superseded": "resume overtaken",
    "mark_rearmed": "claim lapsed before sending: armed again",
    "mark_released": "claim released: armed again",
    "mark_reconciled": "uncertain resume settled by the host's lookup",
}


@dataclass(frozen=True, slots=True)
class Excerpt:
    """The part of a failure's CLI text shown, split around the evidence: `hit` is what the
    verdict rests on (empty when it is not in the stored text)."""

    before: str
    hit: str
    after: str
    cut_before: int
    cut_after: int
    evidence_elsewhere: str | None = None


@dataclass(frozen=True, slots=True)
class CliBox:
    """The failure's "What the CLI printed" box: its heading and the text shown in it."""

    heading: str
    part: Excerpt
    from_events: bool
    #: The API's address of the whole stored text, when the answer carried one.
    whole_url: str | None = None


def cli_box(failure: JSON) -> CliBox:
    """The printed text around the verdict's evidence, or, when it says nothing, what the CLI
    reported through its events (`session_json.shown_text`); the evidence is marked wherever
    its words appear in the text shown."""
    shown = session_json.shown_text(failure)
    evidence = (failure.get("verdict") or {}).get("evidence")
    prefix = "cli_text" if shown.from_events else "message"
    starts_at = failure.get(f"{prefix}_from") or 0
    whole = failure.get(f"{prefix}_stored_chars")
    part = excerpt(shown.text, evidence, starts_at=starts_at, whole_chars=whole)
    return CliBox(shown.heading, part, shown.from_events, failure.get(f"{prefix}_url"))


def excerpt(
    message: str, evidence: JSON | None, *, starts_at: int = 0, whole_chars: int | None = None
) -> Excerpt:
    """The CLI text around the verdict's evidence (text[start:end]). `message` may be a part
    of the stored text (the session's answer carries a part), beginning at character
    `starts_at` of the whole, `whole_chars` long; the evidence's offsets index the whole.
    When they do not point at the evidence in the text (the verdict read structured events,
    or the text was cut), its last occurrence is marked; failing that, the evidence is shown
    apart."""
    whole = whole_chars if whole_chars is not None else starts_at + len(message)
    after_part = whole - starts_at - len(message)
    start, end = locate(message, _shifted(evidence, starts_at))
    if start is None or end is None:
        tail_from = max(0, len(message) - TAIL_CHARS)
        elsewhere = None
        if evidence and evidence.get("text"):
            text = str(evidence["text"])
            narrowed = narrow(text)
            elsewhere = text[narrowed[0] : narrowed[1]]
        return Excerpt(
            _visible(message[tail_from:]), "", "", starts_at + tail_from, after_part, elsewhere
        )
    # A whole JSON event is not what a person reads: the field that says it is marked.
    first, last = narrow(message[start:end])
    start, end = start + first, start + last
    lo, hi = max(0, start - CONTEXT_CHARS), min(len(message), end + CONTEXT_CHARS)
    return Excerpt(
        before=_visible(message[lo:start]),
        hit=_visible(message[start:end]),
        after=_visible(message[end:hi]),
        cut_before=starts_at + lo,
        cut_after=len(message) - hi + after_part,
    )


def _shifted(evidence: JSON | None, by: int) -> JSON | None:
    """The evidence with its offsets counted from character `by` of the text."""
    if not by or not evidence:
        return evidence
    start, end = evidence.get("start"), evidence.get("end")
    if not isinstance(start, int) or not isinstance(end, int):
        return evidence
    return {**evidence, "start": start - by, "end": end - by}


def _visible(text: str) -> str:
    return text.translate(_VISIBLE_CONTROLS)


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    at: str | None
    words: str
    event: str
    actor: str | None
    where: str
    detail: str


def timeline(entries: list[JSON]) -> list[TimelineEntry]:
    """The session's timeline oldest first, as the API and `rewake show` give it (a story read
    forward, the same order everywhere), each event in words with its raw detail."""
    shown = []
    for entry in entries:
        where = " ".join(
            part
            for part in (
                f"run {entry['run_id']}" if entry.get("run_id") else "",
                f"attempt {entry['attempt']}" if entry.get("attempt") is not None else "",
            )
            if part
        )
        shown.append(
            TimelineEntry(
                at=entry.get("at"),
                words=EVENT_WORDS.get(str(entry["event"]), str(entry["event"]).replace("_", " ")),
                event=str(entry["event"]),
                actor=entry.get("actor"),
                where=where,
                detail=_detail_text(entry.get("detail")),
            )
        )
    return shown


def _detail_text(detail: Any) -> str:
    """A timeline entry's detail as `key value; ...`, leaving out what says nothing."""
    if isinstance(detail, dict):
        return "; ".join(
            f"{key} {_detail_text(value)}" for key, value in detail.items() if _says(value)
        )
    if isinstance(detail, list):
        return ", ".join(_detail_text(value) for value in detail if _says(value))
    return str(detail) if _says(detail) else ""


def _says(value: Any) -> bool:
    return value is not None and value is not False and value != [] and value != {}


def failure_summary(failure: JSON) -> JSON:
    """A stored failure (as the session JSON has it) as a list summary has it."""
    counts = failure["failure_kind"] == "provider_quota" and not failure["halted"]
    return {
        "failure_kind": failure["failure_kind"],
        "provider": failure["provider"],
        "reset_at": failure["verdict"].get("reset_at") if counts else None,
        "account_key": failure.get("account_key"),
        "banner": failure["banner"],
    }


def current_failure(view: JSON) -> JSON | None:
    """The session's current failure (the attempt `current` names), as a list summary has it."""
    failure = session_json.current_failure(view)
    return failure_summary(failure) if failure is not None else None
