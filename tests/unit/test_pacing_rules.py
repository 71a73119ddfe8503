"""Per-account pacing decisions: in-flight limits, staggers, clock jumps, and that pacing only
ever delays."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rewake.marks.pacing import AccountLoad, PacingRules, plan_starts, start_allowed_at

NOW = datetime(2026, 11, 30, 17, 0, tzinfo=UTC)
RULES = PacingRules(max_in_flight=2, stagger_s=3)


def test_idle_account_starts_now() -> None:
    """An account with nothing in flight and no recent start may start at once."""
    assert start_allowed_at(AccountLoad(), RULES, NOW) == NOW


def test_full_account_waits_for_a_finish() -> None:
    """With max_in_flight sends in flight, no instant is given: a send must finish first."""
    assert start_allowed_at(AccountLoad(2, NOW - timedelta(minutes=1)), RULES, NOW) is None


def test_recent_start_holds_until_stagger_passes() -> None:
    """A start 1 s ago with a 3 s stagger allows the next one 2 s from now."""
    load = AccountLoad(1, NOW - timedelta(seconds=1))
    assert start_allowed_at(load, RULES, NOW) == NOW + timedelta(seconds=2)


def test_start_recorded_in_the_future_delays_one_stagger_at_most() -> None:
    """After the clock went back an hour, the account waits one stagger, not the hour."""
    load = AccountLoad(0, NOW + timedelta(hours=1))
    assert start_allowed_at(load, RULES, NOW) == NOW + timedelta(seconds=3)


def test_plan_starts_one_per_account_per_stagger() -> None:
    """Three marks of one account due together: the first starts, the others wait the stagger."""
    plan = plan_starts([(1, "acct"), (2, "acct"), (3, "other")], {}, RULES, NOW)
    assert plan.start == [1, 3]
    assert plan.wait == {2: NOW + timedelta(seconds=3)}


def test_plan_starts_never_paces_marks_without_account() -> None:
    """Marks with no account_key are never held by pacing."""
    plan = plan_starts([(1, None), (2, None), (3, None)], {}, RULES, NOW)
    assert plan.start == [1, 2, 3]


def test_zero_stagger_fills_the_in_flight_limit() -> None:
    """With no stagger, an account starts up to max_in_flight at once and no more."""
    rules = PacingRules(max_in_flight=2, stagger_s=0)
    plan = plan_starts([(n, "a") for n in range(5)], {}, rules, NOW)
    assert plan.start == [0, 1]
    assert plan.wait == {2: None, 3: None, 4: None}


def test_plan_starts_no_more_than_the_limit() -> None:
    """With a limit (the free workers), no more start; the rest are left for later unjudged,
    and a mark pacing holds does not use up the limit."""
    candidates = [(1, "acct"), (2, "acct"), (3, None), (4, "other"), (5, None)]
    loads: dict[str, AccountLoad] = {}
    plan = plan_starts(candidates, loads, RULES, NOW, limit=2)
    assert plan.start == [1, 3]
    assert plan.wait == {2: NOW + timedelta(seconds=3)}
    assert plan.later == [4, 5]
    assert "other" not in loads  # the account of a mark left for later is not charged


def test_rules_refuse_nonsense() -> None:
    """A limit below one or a negative stagger is a configuration error."""
    with pytest.raises(ValueError, match="max_in_flight"):
        PacingRules(max_in_flight=0)
    with pytest.raises(ValueError, match="stagger"):
        PacingRules(stagger_s=-1)


@given(
    in_flight=st.integers(0, 5),
    last_offset_s=st.one_of(st.none(), st.floats(-7200, 7200)),
    max_in_flight=st.integers(1, 4),
    stagger_s=st.floats(0, 60),
)
def test_pacing_only_delays(
    in_flight: int, last_offset_s: float | None, max_in_flight: int, stagger_s: float
) -> None:
    """Whatever the load, the allowed start is never before now and at most one stagger off
    (unless the account is full)."""
    last = None if last_offset_s is None else NOW + timedelta(seconds=last_offset_s)
    rules = PacingRules(max_in_flight=max_in_flight, stagger_s=stagger_s)
    allowed = start_allowed_at(AccountLoad(in_flight, last), rules, NOW)
    if in_flight >= max_in_flight:
        assert allowed is None
    else:
        assert allowed is not None
        assert NOW <= allowed <= NOW + timedelta(seconds=stagger_s)
