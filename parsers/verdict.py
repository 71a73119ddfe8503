"""The Verdict: what `rewake.parsers.parse` concludes about one piece of CLI output.

Its JSON form (`Verdict.to_json`) is a contract shared with the service, the CLI and the
hosts; field names and values are listed in docs/design.md#verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

Provider = Literal["claude", "codex", "gemini"]
Kind = Literal["provider_quota", "login_required", "transient", "other_failure", "none"]
Form = Literal["epoch", "structured", "named_zone", "offset_zone", "local_time", "duration"]

PROVIDERS: tuple[Provider, ...] = ("claude", "codex", "gemini")


@dataclass(frozen=True, slots=True)
class RefusalCode:
    """One refusal code: what it means, and the same said to a person (the clause a banner or an
    error shows after "auto-resume is not offered:")."""

    meaning: str
    words: str


#: Every refusal code, the one table of them: docs/design.md's table names the same codes (a
#: test compares), and the service words its banners and errors from it.
REFUSALS: dict[str, RefusalCode] = {
    "not_stated": RefusalCode(
        'a limit with no reset time stated ("try again later")',
        "the reset time was not stated",
    ),
    "no_reset": RefusalCode(
        "waiting will not help: spend caps, credits, disabled allocation, `limit: 0`",
        "waiting will not help",
    ),
    "time_not_stated": RefusalCode(
        "a date with no time of day; the date is in the detail",
        "the reset day was stated but not the time",
    ),
    "zone_unknown": RefusalCode(
        "the time needs the host's zone, which is missing, invalid or Etc/Unknown",
        "the reset time needs the host's time zone, which is unknown",
    ),
    "zone_ambiguous": RefusalCode(
        "the zone abbreviation names more than one offset",
        "the reset time's zone is ambiguous",
    ),
    "nonexistent_local_time": RefusalCode(
        "the local time falls in a DST gap: the zone is not the CLI's",
        "the reset time does not exist in the host's time zone",
    ),
    "day_ambiguous": RefusalCode(
        "a time printed without a date names one instant today and one tomorrow that the CLI "
        "prints alike (a day shortened by DST)",
        "the reset time could be today's or tomorrow's (a day shortened by DST)",
    ),
    "stale": RefusalCode(
        "the stated reset has already passed",
        "the stated reset has already passed",
    ),
    "out_of_window": RefusalCode(
        "the reset lies further ahead than the limit's window allows",
        "the stated reset is further ahead than the limit allows",
    ),
    "conflicting": RefusalCode(
        "two live banners of one scope disagree beyond their resolution",
        "the limit messages disagree about the reset",
    ),
    "unparseable": RefusalCode(
        "a limit banner whose time could not be read",
        "the reset time could not be read",
    ),
}
#: Each code with its meaning (the public `rewake.parsers.REFUSAL_CODES`), read off REFUSALS.
REFUSAL_CODES: dict[str, str] = {code: refusal.meaning for code, refusal in REFUSALS.items()}


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a provider_quota verdict carries no reset_at."""

    code: str
    detail: str

    def __post_init__(self) -> None:
        if self.code not in REFUSAL_CODES:
            raise ValueError(f"unknown refusal code {self.code!r}")

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "detail": self.detail}


# Evidence and Verdict are built by name only: a field added or reordered can never shift a
# positional argument into the wrong slot of the contract.
@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """The substring of the original text a verdict rests on: text[start:end]."""

    text: str
    start: int
    end: int

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "start": self.start, "end": self.end}


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """What one piece of CLI output says about why the run stopped and when it may resume."""

    kind: Kind
    provider: Provider | None = None
    reset_at: datetime | None = None
    resolution_s: int | None = None
    form: Form | None = None
    refusal: Refusal | None = None
    scope: str | None = None
    retry_after_s: float | None = None
    native_auto_continue: bool = False
    login_command: str | None = None
    evidence: Evidence | None = None

    def __post_init__(self) -> None:
        if self.reset_at is not None:
            if self.reset_at.tzinfo is None:
                raise ValueError("reset_at must be aware")
            if self.resolution_s is None:
                raise ValueError("reset_at needs resolution_s")
        if self.kind == "provider_quota" and self.reset_at is None and self.refusal is None:
            raise ValueError("a provider_quota verdict without reset_at needs a refusal")

    def to_json(self) -> dict[str, Any]:
        """The contract form: plain JSON types, reset_at as an ISO-8601 UTC instant."""
        return {
            "provider": self.provider,
            "kind": self.kind,
            "reset_at": format_instant(self.reset_at) if self.reset_at else None,
            "resolution_s": self.resolution_s,
            "form": self.form,
            "refusal": self.refusal.to_json() if self.refusal else None,
            "scope": self.scope,
            "retry_after_s": self.retry_after_s,
            "native_auto_continue": self.native_auto_continue,
            "login_command": self.login_command,
            "evidence": self.evidence.to_json() if self.evidence else None,
        }


def format_instant(instant: datetime) -> str:
    """ISO-8601 in UTC with a Z, to the microsecond only when there is one."""
    utc = instant.astimezone(UTC)
    text = utc.isoformat(timespec="microseconds" if utc.microsecond else "seconds")
    return text.replace("+00:00", "Z")
