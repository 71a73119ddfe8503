"""The Verdict contract: built by name, checked on construction, and its JSON form."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from rewake.parsers import Evidence, Refusal, Verdict, parse

RESET = datetime(2026, 7, 19, 15, 40, tzinfo=UTC)


def test_verdict_and_evidence_take_their_fields_by_name_only() -> None:
    """A positional argument is a TypeError, so no field can land in another's slot."""
    verdict: Any = Verdict
    evidence: Any = Evidence
    with pytest.raises(TypeError):
        verdict("none")
    with pytest.raises(TypeError):
        evidence("resets 5:40pm", 0, 13)
    assert Evidence(text="resets 5:40pm", start=0, end=13).end == 13


def test_a_quota_verdict_needs_a_reset_or_a_refusal() -> None:
    """provider_quota without reset_at is refused unless a refusal says why."""
    with pytest.raises(ValueError, match="needs a refusal"):
        Verdict(kind="provider_quota", provider="codex")
    refusal = Refusal("not_stated", "try again later")
    assert Verdict(kind="provider_quota", provider="codex", refusal=refusal).refusal == refusal


def test_a_reset_must_be_aware_and_carry_its_resolution() -> None:
    """A naive reset_at, or one without resolution_s, cannot be built."""
    with pytest.raises(ValueError, match="must be aware"):
        Verdict(kind="provider_quota", reset_at=datetime(2026, 7, 19, 15, 40), resolution_s=60)
    with pytest.raises(ValueError, match="needs resolution_s"):
        Verdict(kind="provider_quota", reset_at=RESET)


def test_a_refusal_code_must_be_a_known_one() -> None:
    """Refusal accepts only the codes listed in REFUSAL_CODES."""
    with pytest.raises(ValueError, match="unknown refusal code"):
        Refusal("invalid", "no such code")


def test_to_json_gives_every_field_with_reset_at_in_utc() -> None:
    """to_json names every field, with reset_at as an ISO-8601 instant in UTC ending in Z."""
    berlin_summer = timezone(timedelta(hours=2))
    verdict = Verdict(
        kind="provider_quota",
        provider="claude",
        reset_at=datetime(2026, 7, 19, 17, 40, tzinfo=berlin_summer),
        resolution_s=60,
        form="named_zone",
        scope="five_hour",
        native_auto_continue=True,
        evidence=Evidence(text="resets 5:40pm (Europe/Berlin)", start=3, end=32),
    )
    assert verdict.to_json() == {
        "provider": "claude",
        "kind": "provider_quota",
        "reset_at": "2026-07-19T15:40:00Z",
        "resolution_s": 60,
        "form": "named_zone",
        "refusal": None,
        "scope": "five_hour",
        "retry_after_s": None,
        "native_auto_continue": True,
        "login_command": None,
        "evidence": {"text": "resets 5:40pm (Europe/Berlin)", "start": 3, "end": 32},
    }


def test_a_warning_gives_kind_none_with_its_words_as_evidence() -> None:
    """A usage warning is no stop: kind none, no reset, and the warning's own words (escapes
    left out) at their offsets in the original text."""
    text = "\x1b[33mYou've used 91% of your weekly limit\x1b[0m\n"
    verdict = parse(text, observed_at=datetime(2026, 7, 19, 13, 5, tzinfo=UTC), zone="UTC")
    assert verdict == Verdict(
        kind="none",
        provider="claude",
        evidence=Evidence(text="You've used 91% of your weekly limit", start=5, end=41),
    )
