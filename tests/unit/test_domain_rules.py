"""The service's pure rules: failure kinds, what is newer, due_at, session state, the gate."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest

from rewake.errors import DomainError
from rewake.marks.rules import (
    OfferFacts,
    auto_resume_refusal,
    due_at_for,
    sweeper_warnings,
    sweepers_will,
)
from rewake.reports.rules import (
    EVENTS_CUT,
    EVENTS_MAX_DEPTH,
    MESSAGE_LIMIT_CHARS,
    CleanJSON,
    FailurePoint,
    check_observed_at,
    clean_json,
    clean_text,
    derive_failure_kind,
    is_newer,
    keep_last_part,
)
from rewake.sessions.rules import session_state, tombstone_kept, tombstones_expire_before

NOW = datetime(2026, 11, 30, 13, 6, tzinfo=UTC)
PAUSED = OfferFacts(
    cancelled=False,
    has_failure=True,
    run_paused_at_failure=True,
    failure_kind="provider_quota",
    halted=False,
    reset_at=datetime(2026, 11, 30, 16, 40, tzinfo=UTC),
    refusal_code=None,
    refusal_detail=None,
    native_auto_continue=False,
    attempt_resumed_before=False,
)


@pytest.mark.parametrize(
    ("stated", "verdict_kind", "halted", "kind"),
    [
        (None, "provider_quota", False, "provider_quota"),
        (None, "login_required", False, "login_required"),
        (None, "transient", False, "execution_failure"),
        (None, "none", False, "execution_failure"),
        ("runtime_limit", "provider_quota", False, "runtime_limit"),
        (None, "provider_quota", True, "execution_failure"),
        ("provider_quota", "none", True, "execution_failure"),
        (None, "login_required", True, "login_required"),
    ],
)
def test_failure_kind(stated: str | None, verdict_kind: str, halted: bool, kind: str) -> None:
    """The host's kind wins, else the verdict's; a halted run is never a provider limit."""
    assert derive_failure_kind(stated, verdict_kind, halted) == kind


def test_newer_is_a_higher_attempt_or_a_later_observation() -> None:
    """Within a run the attempt number decides; across runs the observation time does."""
    marked = FailurePoint("r1", 2, NOW)
    assert is_newer(FailurePoint("r1", 3, NOW - timedelta(hours=1)), marked)
    assert not is_newer(FailurePoint("r1", 2, NOW + timedelta(hours=1)), marked)
    assert not is_newer(FailurePoint("r1", 1, NOW + timedelta(hours=1)), marked)
    assert is_newer(FailurePoint("r2", 1, NOW + timedelta(seconds=1)), marked)
    assert not is_newer(FailurePoint("r2", 9, NOW), marked)


def test_due_at_adds_resolution_and_delay_but_never_lies_in_the_past() -> None:
    """due_at = reset_at + resolution_s + delay; armed later than that, it is due now."""
    reset = datetime(2026, 11, 30, 16, 40, tzinfo=UTC)
    assert due_at_for(reset, 60, 30, NOW) == datetime(2026, 11, 30, 16, 41, 30, tzinfo=UTC)
    late = datetime(2026, 11, 30, 17, 0, tzinfo=UTC)
    assert due_at_for(reset, 60, 30, late) == late


@pytest.mark.parametrize(
    ("cancelled", "runs", "state"),
    [
        (True, ["running"], "cancelled"),
        (False, ["completed", "paused"], "paused"),
        (False, ["completed", "running"], "running"),
        (False, ["completed", "completed"], "finished"),
    ],
)
def test_session_state(cancelled: bool, runs: list[str], state: str) -> None:
    """Cancelled is final; a paused run pauses the session; all runs completed is finished."""
    assert session_state(cancelled, runs) == state


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"cancelled": True}, "session_cancelled"),
        ({"has_failure": False}, "not_paused_on_provider_limit"),
        ({"attempt_resumed_before": True}, "attempt_already_resumed"),
        ({"run_paused_at_failure": False}, "not_paused_on_provider_limit"),
        ({"failure_kind": "login_required"}, "not_paused_on_provider_limit"),
        ({"halted": True}, "not_paused_on_provider_limit"),
        ({"reset_at": None, "refusal_code": "not_stated"}, "reset_not_stated"),
        ({"reset_at": None, "refusal_code": "no_reset"}, "reset_not_stated"),
        ({"native_auto_continue": True}, "native_auto_continue"),
    ],
)
def test_gate_refusals(change: dict[str, object], code: str) -> None:
    """Auto-resume is offered only for the current, paused, provider-limited attempt."""
    refusal = auto_resume_refusal(replace(PAUSED, **change), despite_native=False)  # type: ignore[arg-type]
    assert refusal is not None and refusal.code == code


def test_gate_offers_a_paused_limit_and_despite_native_overrides() -> None:
    """A paused limit with a reset is offered; despite_native lifts only the native refusal."""
    assert auto_resume_refusal(PAUSED, despite_native=False) is None
    native = replace(PAUSED, native_auto_continue=True)
    assert auto_resume_refusal(native, despite_native=True) is None


def test_observed_at_checks() -> None:
    """Naive, future (beyond 5 min) and pre-2000 observed_at are refused with their codes."""
    for observed, code in [
        (datetime(2026, 11, 30, 13, 0), "observed_at_naive"),
        (NOW + timedelta(minutes=5, seconds=1), "observed_in_future"),
        (datetime(1999, 12, 31, tzinfo=UTC), "invalid_request"),
        (datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5))), "invalid_request"),
    ]:
        with pytest.raises(DomainError) as refused:
            check_observed_at(observed, NOW)
        assert refused.value.code == code
    check_observed_at(NOW + timedelta(minutes=5), NOW)
    check_observed_at(datetime(2026, 11, 30, 9, 6, tzinfo=timezone(timedelta(hours=-4))), NOW)


def test_long_text_keeps_its_end() -> None:
    """Text beyond the limit keeps its last part, where the banner that stopped the run is."""
    text = "a" * 10 + "b" * MESSAGE_LIMIT_CHARS
    assert keep_last_part(text) == ("b" * MESSAGE_LIMIT_CHARS, True)
    assert keep_last_part("short") == ("short", False)


def test_unstorable_characters_are_replaced() -> None:
    """NUL and lone surrogates (which PostgreSQL and UTF-8 refuse) become U+FFFD, anywhere."""
    assert clean_text("a\x00b\ud800c") == "a\ufffdb\ufffdc"
    assert clean_json({"k\x00": ["\ud800", 1, None]}).value == {"k\ufffd": ["\ufffd", 1, None]}


def test_clean_json_cuts_any_nesting_without_recursing() -> None:
    """Arrays nested 100,000 deep are cut below EVENTS_MAX_DEPTH levels, flagged, no
    RecursionError; shallower values are kept whole."""
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    cleaned = clean_json(deep)
    assert cleaned.cut_too_deep and not cleaned.had_non_finite
    nested, levels = cleaned.value, 0
    while isinstance(nested, list):
        nested, levels = nested[0], levels + 1
    assert (nested, levels) == (EVENTS_CUT, EVENTS_MAX_DEPTH + 1)
    shallow = [{"a": [1, {"b": "c"}], "d": None}, "e"]
    assert clean_json(shallow) == CleanJSON(shallow)


def test_clean_json_names_non_finite_numbers() -> None:
    """NaN and the infinities, which are not JSON, become their names as strings."""
    cleaned = clean_json([math.nan, math.inf, -math.inf, {"x": 1e400}, 2.5])
    assert cleaned.value == ["NaN", "Infinity", "-Infinity", {"x": "Infinity"}, 2.5]
    assert cleaned.had_non_finite and not cleaned.cut_too_deep


def test_observed_at_past_year_9999_is_in_the_future() -> None:
    """An instant that overflows past year 9999 when put in UTC (a negative offset on the last
    day) is observed_in_future, not "before 2000"."""
    with pytest.raises(DomainError) as refused:
        check_observed_at(datetime.fromisoformat("9999-12-31T23:59:59-14:00"), NOW)
    assert refused.value.code == "observed_in_future"


def test_reset_not_stated_names_the_refusal() -> None:
    """The refusal's detail says what the verdict's refusal code means, the code and its detail."""
    facts = replace(PAUSED, reset_at=None, refusal_code="stale", refusal_detail="13:00 passed")
    refusal = auto_resume_refusal(facts, despite_native=False)
    assert refusal is not None and refusal.extra == {"refusal": "stale"}
    assert refusal.detail == "the stated reset has already passed (stale: 13:00 passed)"


def test_tombstones_are_kept_for_their_retention() -> None:
    """A tombstone is kept for exactly its retention; older ones are past it."""
    deleted = NOW - timedelta(days=30)
    assert tombstone_kept(deleted, NOW, 30)
    assert not tombstone_kept(deleted - timedelta(microseconds=1), NOW, 30)
    assert tombstones_expire_before(NOW, 30) == deleted


@pytest.mark.parametrize(
    ("executors", "will", "warnings"),
    [
        ([], "nothing", ["no sweeper seen in the last 90 s"]),
        (["log"], "log", ["executor is log: nothing will be resumed"]),
        (["log", "log"], "log", ["executor is log: nothing will be resumed"]),
        (["log", "command"], "resume", []),
        (["webhook"], "resume", []),
        ([None], "resume", []),
    ],
)
def test_what_the_sweepers_seen_will_do_with_a_due_mark(
    executors: list[str | None], will: str, warnings: list[str]
) -> None:
    """One sweeper that resumes is enough; only log sweepers resume nothing; a sweeper that
    does not name its executor (an older rewake) is taken to resume."""
    assert sweepers_will(executors) == will
    assert sweeper_warnings(sweepers_will(executors), 90) == warnings


def test_every_refusal_code_of_the_parser_has_its_own_words() -> None:
    """A banner never says "the reset time was not stated" for another refusal: each code the
    parser can give has words of its own, and none shares another's."""
    from rewake.parsers.verdict import REFUSALS

    words = [refusal.words for refusal in REFUSALS.values()]
    assert len(set(words)) == len(words) and all(words)
