"""Per-account pacing: how many resumes of one account may be in flight, and how far apart
their starts must be. Pacing only ever delays a start; it never moves one before due_at.

Many sessions of one account reset at the same instant; resuming them all at once would hit
the provider's limit again. These rules decide, for one account at `now`, whether a send may
start now, when it may, or that it must wait for a send in flight to finish.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)


@dataclass(frozen=True, slots=True)
class PacingRules:
    """At most `max_in_flight` sends per account, starts at least `stagger_s` apart."""

    max_in_flight: int = 2
    stagger_s: float = 2.0

    def __post_init__(self) -> None:
        if self.max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        if self.stagger_s < 0:
            raise ValueError("stagger_s cannot be negative")


@dataclass(frozen=True, slots=True)
class AccountLoad:
    """What the database says about one account: sends in flight, and the latest start."""

    in_flight: int = 0
    last_started_at: datetime | None = None

    def started(self, at: datetime) -> AccountLoad:
        return AccountLoad(self.in_flight + 1, at)


def start_allowed_at(load: AccountLoad, rules: PacingRules, now: datetime) -> datetime | None:
    """`now` when a send may start now, a later instant when the stagger holds it until then,
    None when as many sends as allowed are in flight (one must finish first).

    A latest start later than `now` means the clock went back: the stagger then counts from
    `now`, so a clock jump delays an account by one stagger at most, never by the jump.
    """
    if load.in_flight >= rules.max_in_flight:
        return None
    if load.last_started_at is None or rules.stagger_s <= 0:
        return now
    earliest = min(load.last_started_at, now) + timedelta(seconds=rules.stagger_s)
    return max(now, earliest)


@dataclass(slots=True)
class StartPlan(Generic[T]):
    """Which candidates start now, for those pacing holds when to look again (None: when a
    send of the account finishes), and those left for later because `limit` starts were
    planned already (nothing holds them but a free worker)."""

    start: list[T] = field(default_factory=list)
    wait: dict[T, datetime | None] = field(default_factory=dict)
    later: list[T] = field(default_factory=list)


def plan_starts(
    candidates: Sequence[tuple[T, str | None]],
    loads: dict[str, AccountLoad],
    rules: PacingRules,
    now: datetime,
    *,
    limit: int | None = None,
) -> StartPlan[T]:
    """Decide, in order, which of `candidates` (item, account_key) may start at `now`, at most
    `limit` of them (None: no limit); the ones past the limit are left for later, unjudged.

    Items without an account are never paced. `loads` is updated as starts are planned, so a
    second item of one account sees the first one's start.
    """
    plan: StartPlan[T] = StartPlan()
    for item, account in candidates:
        if limit is not None and len(plan.start) >= limit:
            plan.later.append(item)
            continue
        if account is None:
            plan.start.append(item)
            continue
        load = loads.get(account, AccountLoad())
        allowed = start_allowed_at(load, rules, now)
        if allowed is not None and allowed <= now:
            plan.start.append(item)
            loads[account] = load.started(now)
        else:
            plan.wait[item] = allowed
    return plan


def accounts_of(candidates: Iterable[tuple[T, str | None]]) -> list[str]:
    """The distinct accounts among candidates, sorted (the order locks are taken in)."""
    return sorted({account for _, account in candidates if account is not None})
