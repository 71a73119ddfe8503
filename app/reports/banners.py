"""The banner shown for a failure: a business label for people, a technical one for operators.

"Paused · provider limit / resets 17:00 CET, in 2 h 13 min" reads well on a dashboard; the
technical label names the verdict, the form and the instant in UTC.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from rewake.parsers.verdict import REFUSALS

BUSINESS_LABELS: dict[str, tuple[str, str]] = {
    "provider_quota": ("Paused · provider limit", "the provider's usage limit stopped the run"),
    "login_required": ("Paused · sign-in needed", "sign in to the CLI again"),
    "runtime_limit": ("Stopped · time limit reached", "the run hit the host's runtime limit"),
    "conversation_missing": (
        "Stopped · conversation not found",
        "the CLI could not find the conversation to continue",
    ),
    "missing_outcome": ("Stopped · no result", "the CLI ended without reporting a result"),
    "interrupted_start": (
        "Stopped · interrupted at start",
        "the CLI was interrupted before it started working",
    ),
    "host_failure": ("Stopped · host error", "the host failed while running the CLI"),
    "execution_failure": ("Stopped · failed", "the CLI failed"),
}


@dataclass(frozen=True, slots=True)
class Banner:
    """What a dashboard shows for one failed attempt."""

    kind: str
    business: str
    detail: str
    technical: str

    def to_json(self) -> dict[str, str]:
        return {
            "kind": self.kind,
            "business": self.business,
            "detail": self.detail,
            "technical": self.technical,
        }


def banner_for(
    failure_kind: str,
    verdict: dict[str, Any],
    *,
    halted: bool,
    reset_at: datetime | None,
    now: datetime,
    display_zone: tzinfo | None,
) -> Banner:
    """The banner of a failure, with times shown in `display_zone` relative to `now`."""
    business, detail = BUSINESS_LABELS[failure_kind]
    technical = _technical(failure_kind, verdict, halted)
    if halted:
        return Banner(
            failure_kind,
            "Stopped · halted",
            "the run was stopped; its output is not treated as a provider limit",
            technical,
        )
    if failure_kind == "provider_quota":
        if reset_at is not None:
            when = format_local(reset_at, display_zone, now)
            detail = f"resets {when}, {describe_wait(reset_at, now)}"
        else:
            refusal = verdict.get("refusal") or {}
            detail = REFUSALS.get(str(refusal.get("code")), REFUSALS["not_stated"]).words
    elif failure_kind == "login_required" and verdict.get("login_command"):
        detail = f"run `{verdict['login_command']}`"
    elif failure_kind == "execution_failure" and verdict.get("kind") == "transient":
        detail = "a temporary provider error"
    return Banner(failure_kind, business, detail, technical)


def _technical(failure_kind: str, verdict: dict[str, Any], halted: bool) -> str:
    provider = verdict.get("provider") or "unknown provider"
    parts = [f"{failure_kind}: verdict {verdict.get('kind')} from {provider}"]
    if verdict.get("scope"):
        parts.append(f"scope {verdict['scope']}")
    if verdict.get("reset_at"):
        resolution = verdict.get("resolution_s")
        parts.append(f"reset_at {verdict['reset_at']} +{resolution} s ({verdict.get('form')})")
    refusal = verdict.get("refusal")
    if refusal:
        parts.append(f"refusal {refusal.get('code')}: {refusal.get('detail')}")
    if verdict.get("retry_after_s") is not None:
        parts.append(f"retry after {verdict['retry_after_s']} s")
    if verdict.get("native_auto_continue"):
        parts.append("the CLI continues by itself")
    if halted:
        parts.append("run halted")
    return "; ".join(parts)


def format_local(instant: datetime, zone: tzinfo | None, now: datetime) -> str:
    """`17:00 CET` on the day of `now` in `zone` (None: the server's zone), else
    `Tue 1 Dec 17:00 CET`."""
    local = instant.astimezone(zone)
    clock = f"{local:%H:%M} {local.tzname() or ''}".strip()
    if local.date() == now.astimezone(zone).date():
        return clock
    return f"{local:%a} {local.day} {local:%b} {clock}"


def describe_wait(instant: datetime, now: datetime) -> str:
    """`in 2 h 13 min`, `in under a minute`, `in 3 d 4 h`, or `already passed`."""
    seconds = int((instant - now).total_seconds())
    if seconds <= 0:
        return "already passed"
    minutes = seconds // 60
    if minutes == 0:
        return "in under a minute"
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    if days:
        return f"in {days} d {hours} h" if hours else f"in {days} d"
    if hours:
        return f"in {hours} h {minutes} min" if minutes else f"in {hours} h"
    return f"in {minutes} min"
