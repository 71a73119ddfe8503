"""Rows of transcripts and rollouts, each pinned on its own: which error row decides, and
which scope a Codex window's length names."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from rewake.parsers import parse

OBSERVED = datetime(2026, 7, 5, 10, 0, tzinfo=UTC)


def _error_row(minute: int, banner: str) -> str:
    """A Claude transcript row recording an API error, as the CLI appends it."""
    return json.dumps(
        {
            "type": "assistant",
            "timestamp": f"2026-07-05T09:{minute:02d}:00.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": banner}]},
            "error": "rate_limit",
            "isApiErrorMessage": True,
        }
    )


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ("1pm", "2:30pm", datetime(2026, 7, 5, 14, 30, tzinfo=UTC)),
        ("2:30pm", "1pm", datetime(2026, 7, 5, 13, 0, tzinfo=UTC)),
    ],
)
def test_a_later_error_row_supersedes_the_one_before(
    first: str, second: str, expected: datetime
) -> None:
    """Of two error rows of one scope, the later (a later request's answer) decides, not the
    latest reset, and the two are not a conflict."""
    text = "\n".join(
        [
            _error_row(10, f"You've hit your session limit · resets {first} (UTC)"),
            _error_row(40, f"You've hit your session limit · resets {second} (UTC)"),
        ]
    )
    verdict = parse(text, observed_at=OBSERVED, zone="UTC", provider="claude")
    assert verdict.kind == "provider_quota"
    assert verdict.refusal is None
    assert verdict.reset_at == expected


def test_two_printed_banners_of_one_scope_still_conflict() -> None:
    """Two banners of one scope on a screen, nothing between, 90 min apart: conflicting."""
    text = (
        "You've hit your session limit · resets 1pm (UTC)\n"
        "You've hit your session limit · resets 2:30pm (UTC)\n"
    )
    verdict = parse(text, observed_at=OBSERVED, zone="UTC", provider="claude")
    assert verdict.reset_at is None
    assert verdict.refusal is not None
    assert verdict.refusal.code == "conflicting"


def _rollout(window_minutes: int) -> str:
    """A Codex rollout's token_count row with its primary window at 100 %."""
    return json.dumps(
        {
            "type": "event_msg",
            "payload": {
                "type": "token_count",
                "rate_limits": {
                    "primary": {
                        "used_percent": 100,
                        "window_minutes": window_minutes,
                        # 2026-07-05T11:00:00Z, an hour after OBSERVED
                        "resets_at": 1783249200,
                    },
                    "secondary": None,
                },
            },
        }
    )


@pytest.mark.parametrize(
    ("minutes", "scope"),
    [(300, "five_hour"), (10080, "weekly"), (40320, "monthly"), (43200, "monthly"), (20160, None)],
)
def test_codex_window_length_names_its_scope(minutes: int, scope: str | None) -> None:
    """A Codex window of 28 to 31 days is monthly; a length of no known window names none."""
    verdict = parse(_rollout(minutes), observed_at=OBSERVED, zone="UTC", provider="codex")
    assert verdict.reset_at == datetime(2026, 7, 5, 11, 0, tzinfo=UTC)
    assert verdict.scope == scope
