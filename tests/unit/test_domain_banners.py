"""Banners: a business and a technical label for each failure kind."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from rewake.reports.banners import BUSINESS_LABELS, banner_for, describe_wait, format_local

NOW = datetime(2026, 11, 30, 14, 47, tzinfo=UTC)
BERLIN = ZoneInfo("Europe/Berlin")
QUOTA = {"kind": "provider_quota", "provider": "claude", "reset_at": "2026-11-30T16:00:00Z",
         "resolution_s": 60, "form": "named_zone", "scope": "five_hour"}  # fmt: skip


def test_provider_limit_banner_shows_the_reset_and_the_wait() -> None:
    """ "Paused · provider limit / resets 17:00 CET, in 1 h 13 min", and the instant in UTC."""
    reset = datetime(2026, 11, 30, 16, 0, tzinfo=UTC)
    banner = banner_for(
        "provider_quota", QUOTA, halted=False, reset_at=reset, now=NOW, display_zone=BERLIN
    )
    assert (banner.business, banner.detail) == (
        "Paused · provider limit",
        "resets 17:00 CET, in 1 h 13 min",
    )
    assert banner.technical == (
        "provider_quota: verdict provider_quota from claude; scope five_hour; "
        "reset_at 2026-11-30T16:00:00Z +60 s (named_zone)"
    )


@pytest.mark.parametrize(
    ("code", "detail"),
    [("not_stated", "the reset time was not stated"), ("no_reset", "waiting will not help")],
)
def test_provider_limit_without_reset_says_why(code: str, detail: str) -> None:
    """A limit without a reset says the time was not stated, or that waiting will not help."""
    verdict = {"kind": "provider_quota", "refusal": {"code": code, "detail": "x"}}
    banner = banner_for(
        "provider_quota", verdict, halted=False, reset_at=None, now=NOW, display_zone=BERLIN
    )
    assert banner.detail == detail
    assert f"refusal {code}: x" in banner.technical


def test_sign_in_banner_names_the_command() -> None:
    """ "Paused · sign-in needed" with the command the CLI named."""
    verdict = {"kind": "login_required", "login_command": "claude /login"}
    banner = banner_for(
        "login_required", verdict, halted=False, reset_at=None, now=NOW, display_zone=BERLIN
    )
    assert (banner.business, banner.detail) == ("Paused · sign-in needed", "run `claude /login`")


@pytest.mark.parametrize("kind", sorted(BUSINESS_LABELS))
def test_every_kind_has_both_labels(kind: str) -> None:
    """Each of the eight failure kinds has a business label and a technical one naming it."""
    banner = banner_for(
        kind, {"kind": "none"}, halted=False, reset_at=None, now=NOW, display_zone=UTC
    )
    assert banner.business and banner.detail
    assert banner.technical.startswith(f"{kind}: verdict none")
    assert len(BUSINESS_LABELS) == 8


def test_halted_banner_says_stopped() -> None:
    """A halted run shows "Stopped · halted", whatever its kind."""
    banner = banner_for(
        "execution_failure", QUOTA, halted=True, reset_at=None, now=NOW, display_zone=BERLIN
    )
    assert banner.business == "Stopped · halted"
    assert banner.technical.endswith("run halted")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(-5, "already passed"), (0, "already passed"), (59, "in under a minute"), (60, "in 1 min"),
     (7980, "in 2 h 13 min"), (7200, "in 2 h"), (100800, "in 1 d 4 h"), (172800, "in 2 d")],
)  # fmt: skip
def test_describe_wait(seconds: int, text: str) -> None:
    """Waits read as a person says them, rounded down to the minute."""
    assert describe_wait(NOW + timedelta(seconds=seconds), NOW) == text


def test_format_local_adds_the_day_when_it_is_not_today() -> None:
    """Today's reset shows the time and zone; another day's adds weekday, day and month."""
    today = datetime(2026, 11, 30, 22, 0, tzinfo=UTC)
    assert format_local(today, BERLIN, NOW) == "23:00 CET"
    tomorrow = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    assert format_local(tomorrow, BERLIN, NOW) == "Tue 1 Dec 09:00 CET"
