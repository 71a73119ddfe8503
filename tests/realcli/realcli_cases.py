"""Drawing the real-CLI cases and judging the parser's verdicts on what the CLIs printed.

A case's true reset is drawn relative to the real clock (the CLIs read it): minutes to days
ahead, the 23 h 50 min - 24 h 05 min band where Claude stops printing a date, resets next to
local midnight in the drawn zone, and next to a DST transition where some zone has one
within the week. Draws come from a seeded generator; the seed is in every test id and
REWAKE_REALCLI_SEED replays it. `next_transitions` and `draw_near_transition` place a case
next to a zone's coming transition, for a CLI that runs on a faked clock
(test_realcli_dst.py).

Judging follows docs/design.md: a stated reset must bracket the truth (reset_at <= truth <=
reset_at + resolution_s), a message that states none must be refused with the right code,
and the kind must be right. Outcomes are appended to REWAKE_REALCLI_OUTCOMES (a JSON-lines
file) when that is set, so a run can be summed up per CLI.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar
from zoneinfo import ZoneInfo, available_timezones

from rewake.parsers import Verdict

#: Zones the CLIs run under: half- and quarter-hour offsets, both hemispheres, UTC, unset.
ZONES: tuple[str | None, ...] = (
    "Asia/Kolkata",
    "Asia/Kathmandu",
    "Australia/Adelaide",
    "Pacific/Auckland",
    "America/New_York",
    "America/Los_Angeles",
    "America/Sao_Paulo",
    "America/St_Johns",
    "Australia/Eucla",
    "Europe/Berlin",
    "UTC",
    None,
)

T = TypeVar("T")
R = TypeVar("R")

MINUTE = 60
HOUR = 3600
DAY = 86400


#: One seed per process, whichever module draws first.
_CLOCK_SEED = int(time.time()) % 100_000


def run_seed() -> int:
    """The seed of a run's draws: REWAKE_REALCLI_SEED, else drawn from the clock once per
    process. Each module draws from `random.Random(f"<module>:{seed}")`, so one seed replays
    them all."""
    fixed = os.environ.get("REWAKE_REALCLI_SEED")
    return int(fixed) if fixed else _CLOCK_SEED


def drawn_at() -> datetime:
    """The instant the cases' resets are placed from (next midnight, next DST transition):
    REWAKE_REALCLI_DRAWN_AT (epoch seconds), else now. The workers of a parallel run each
    collect the tests and must draw the same cases, ids included: tests/conftest.py fixes
    this and the seed once for them all."""
    fixed = os.environ.get("REWAKE_REALCLI_DRAWN_AT")
    return datetime.fromtimestamp(int(fixed), UTC) if fixed else datetime.now(UTC)


def slug(zone: str | None) -> str:
    return (zone or "unset").replace("/", "_")


def span(seconds: float) -> str:
    """3h12m5s, as case ids spell an offset."""
    sign = "-" if seconds < 0 else ""
    whole = int(abs(seconds))
    days, rest = divmod(whole, DAY)
    hours, rest = divmod(rest, HOUR)
    minutes, secs = divmod(rest, MINUTE)
    parts = [f"{v}{u}" for v, u in ((days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")) if v]
    return sign + ("".join(parts) or "0s")


def band_offset(rng: random.Random, band: str) -> float:
    """A reset this far ahead of now, in seconds, for a named band."""
    low, high = {
        "minutes": (3 * MINUTE, HOUR),
        "hours": (HOUR, 20 * HOUR),
        "five_hour": (3 * MINUTE, 5 * HOUR - 2 * MINUTE),
        "day_edge": (23 * HOUR + 50 * MINUTE, 24 * HOUR + 5 * MINUTE),
        "days": (DAY + 10 * MINUTE, 6 * DAY + 23 * HOUR),
    }[band]
    return rng.uniform(low, high)


def next_local_midnight(zone: str | None, after: datetime) -> datetime:
    tz = ZoneInfo(zone or "UTC")
    local = after.astimezone(tz)
    midnight = datetime(local.year, local.month, local.day, tzinfo=tz) + timedelta(days=1)
    return midnight.astimezone(UTC)


def midnight_offset(rng: random.Random, zone: str | None, now: datetime,
                    earliest_s: float = 10 * MINUTE) -> float:  # fmt: skip
    """An offset that lands within two minutes of a local midnight in `zone`."""
    midnight = next_local_midnight(zone, now + timedelta(seconds=earliest_s))
    return (midnight - now).total_seconds() + rng.uniform(-120, 120)


def dst_transitions(now: datetime, within_s: float) -> list[tuple[str, datetime]]:
    """Every (zone, instant) where some zone's UTC offset changes within `within_s` of now,
    found hour by hour (a transition is an offset change between two whole hours)."""
    found: list[tuple[str, datetime]] = []
    start = now.replace(minute=0, second=0, microsecond=0)
    steps = int(within_s // HOUR) + 1
    for name in sorted(available_timezones()):
        if "/" not in name or name.startswith(("Etc/", "SystemV/", "posix", "right")):
            continue
        tz = ZoneInfo(name)
        before = start.astimezone(tz).utcoffset()
        for step in range(1, steps):
            instant = start + timedelta(hours=step)
            offset = instant.astimezone(tz).utcoffset()
            if offset != before:
                found.append((name, instant))
                break
            before = offset
    return found


@dataclass(frozen=True)
class Transition:
    """One change of a zone's UTC offset: at `at` the offset goes from `before` to `after`.
    Clocks going forward skip `length` of wall time (a gap); going back, they repeat it (a
    fold)."""

    zone: str
    at: datetime
    before: timedelta
    after: timedelta

    @property
    def gap(self) -> bool:
        return self.after > self.before

    @property
    def length(self) -> timedelta:
        return abs(self.after - self.before)


def next_transitions(zone: str, after: datetime, within: timedelta = timedelta(days=400),
                     ) -> list[Transition]:  # fmt: skip
    """The zone's offset changes in (after, after + within], each to the second: found hour
    by hour, then narrowed down."""
    tz = ZoneInfo(zone)
    offset = lambda at: at.astimezone(tz).utcoffset() or timedelta(0)  # noqa: E731
    found = []
    step = after.replace(minute=0, second=0, microsecond=0)
    end = after + within
    while step < end:
        low, high = step, step + timedelta(hours=1)
        if offset(low) != offset(high):
            while high - low > timedelta(seconds=1):
                middle = low + (high - low) / 2
                low, high = (middle, high) if offset(middle) == offset(low) else (low, middle)
            at = high.replace(microsecond=0)
            if after < at <= end:
                found.append(Transition(zone, at, offset(low), offset(at)))
        step += timedelta(hours=1)
    return found


def draw_near_transition(rng: random.Random, kind: str,
                         change: Transition) -> tuple[datetime, datetime]:  # fmt: skip
    """(the faked clock at the run's start, the true reset) for a kind of case next to a
    transition at T whose skipped or repeated wall time lasts L (test_realcli_dst.py says
    what each kind is for). Margins of a minute or more keep a case in its kind although
    the CLI prints a few seconds after its start."""
    at, length = change.at, change.length.total_seconds()
    minutes = lambda low, high: timedelta(seconds=rng.uniform(low * MINUTE, high * MINUTE))  # noqa: E731
    if kind == "across" and change.gap:
        start, truth = at - minutes(30, 180), at + minutes(40, 180)
    elif kind == "across":
        start = at - change.length - minutes(30, 120)
        truth = at + change.length + minutes(30, 180)
    elif kind == "gap":
        start, truth = at - minutes(6, 120), at + minutes(1, 20)
    elif kind == "gap_dated":
        start, truth = at - minutes(25 * 60, 3 * 24 * 60), at + minutes(1, 20)
    elif kind == "short_day":
        # The printed wall time recurs: once `x` after the start, and (the truth) a short day
        # of 24 h - L later, still under the 24 h from which Claude prints a date.
        start = at - minutes(60, 180)
        truth = start + timedelta(seconds=DAY - length) + minutes(3, length / MINUTE - 5)
    elif kind in ("fold_first", "fold_dated"):
        early = (25 * 60, 3 * 24 * 60) if kind == "fold_dated" else (10, 180)
        start = at - change.length - minutes(*early)
        truth = at - change.length + minutes(1, length / MINUTE - 2)
    elif kind == "fold_second":
        start = at - change.length - minutes(10, 180)
        truth = at + minutes(1, length / MINUTE - 2)
    elif kind == "fold_now":
        start = at - change.length + minutes(10, length / MINUTE - 2)
        truth = start + change.length - minutes(2, 8)
    else:
        raise ValueError(kind)
    return start.replace(microsecond=0), truth.replace(microsecond=0)


def named_reading(truth: datetime, zone: str) -> datetime:
    """The instant docs/design.md reads `truth`'s wall time as when the text names no offset: the
    same, except in a fold's first pass, where it is the second pass (rule 2, never early)."""
    local = truth.astimezone(ZoneInfo(zone))
    return local.replace(fold=1).astimezone(UTC)


@dataclass(frozen=True)
class Expect:
    """What the truth calls for: a reset (bracketed) or a refusal code, and the kind."""

    kind: str
    provider: str | None
    truth: datetime | None = None
    refusals: frozenset[str] = frozenset()
    native: bool | None = None
    #: How long after the provider answered the CLI may have printed a duration (a wait
    #: counts from observed_at, which is that much later than the provider's own instant).
    late_s: float = 0.0


@dataclass
class Outcome:
    cli: str
    case: str
    source: str
    outcome: str  # right, wrong, refused, kind_wrong, refusal_wrong
    verdict: dict[str, Any] = field(default_factory=dict)
    why: str = ""


def judge(verdict: Verdict, expect: Expect) -> tuple[str, str]:
    """("right" | "wrong" | "refused" | "kind_wrong" | "refusal_wrong", why)."""
    stated = verdict.reset_at
    if expect.truth is not None and stated is not None:
        late = timedelta(seconds=expect.late_s)
        upper = stated + timedelta(seconds=verdict.resolution_s or 0)
        if not (stated - late <= expect.truth <= upper):
            return "wrong", f"truth {expect.truth.isoformat()} outside [{stated}, {upper}]"
    if expect.truth is None and stated is not None:
        return "wrong", f"a reset {stated.isoformat()} where the CLI printed none"
    # A message that is no stop may still name its CLI: only the kind matters then.
    provider_wrong = expect.kind != "none" and verdict.provider != expect.provider
    if verdict.kind != expect.kind or provider_wrong:
        got, wanted = f"{verdict.provider}/{verdict.kind}", f"{expect.provider}/{expect.kind}"
        return "kind_wrong", f"{got}, not {wanted}"
    if expect.truth is not None and stated is None:
        code = verdict.refusal.code if verdict.refusal else None
        return "refused", f"refused ({code}) where the CLI printed a reset"
    if expect.refusals:
        code = verdict.refusal.code if verdict.refusal else None
        if code not in expect.refusals:
            return "refusal_wrong", f"refusal {code}, not one of {sorted(expect.refusals)}"
    if expect.native is not None and verdict.native_auto_continue != expect.native:
        return "kind_wrong", f"native_auto_continue {verdict.native_auto_continue}"
    return "right", ""


def verdict_json(verdict: Verdict) -> dict[str, Any]:
    return {
        "provider": verdict.provider,
        "kind": verdict.kind,
        "reset_at": verdict.reset_at.isoformat() if verdict.reset_at else None,
        "resolution_s": verdict.resolution_s,
        "form": verdict.form,
        "scope": verdict.scope,
        "refusal": verdict.refusal.code if verdict.refusal else None,
        "native_auto_continue": verdict.native_auto_continue,
    }


def record(outcome: Outcome) -> None:
    path = os.environ.get("REWAKE_REALCLI_OUTCOMES")
    if not path:
        return
    with Path(path).open("a", encoding="utf-8") as out:
        out.write(json.dumps(outcome.__dict__) + "\n")


@dataclass
class Judged:
    """One case's run: the verdict per source, what the truth calls for, what was printed."""

    case: str
    verdicts: dict[str, Verdict]
    expect: Expect
    printed: str


def run_parallel(run: Callable[[T], R], cases: Sequence[T], workers: int = 2,
                 key: Callable[[T], str] = str) -> dict[str, R | BaseException]:  # fmt: skip
    """Each case run on a small thread pool (each with its own mock and HOME), keyed by id;
    a case whose run raised keeps its exception, for its own test to report. Two at a time:
    the parallel suite already runs six groups beside each other on two cores, and with three
    apiece Claude Code's exit was seen to end before it flushed its transcript."""
    results: dict[str, R | BaseException] = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(run, case): key(case) for case in cases}
        for future, name in futures.items():
            try:
                results[name] = future.result()
            except BaseException as failed:  # reported by the case's own test
                results[name] = failed
    return results


def assert_judged(result: Judged | BaseException | None) -> None:
    if result is None:
        raise AssertionError("the case did not run")
    if isinstance(result, BaseException):
        raise result
    assert_sources(result.case, result.verdicts, result.expect, result.printed)


def assert_sources(case: str, verdicts: dict[str, Verdict], expect: Expect,
                   printed: str) -> None:  # fmt: skip
    """Every source judged right; where a text and a structured source both exist they agree
    (same kind, and resets within each other's resolution)."""
    failures = []
    for source, verdict in verdicts.items():
        outcome, why = judge(verdict, expect)
        cli = expect.provider or case.split("-", 1)[0]
        record(Outcome(cli, case, source, outcome, verdict_json(verdict), why))
        if outcome != "right":
            failures.append(f"{source}: {outcome}: {why}; verdict {verdict_json(verdict)}")
    if "text" in verdicts and "structured" in verdicts:
        text, structured = verdicts["text"], verdicts["structured"]
        if text.kind != structured.kind:
            failures.append(f"text says {text.kind}, structured says {structured.kind}")
        elif text.reset_at and structured.reset_at:
            slack = timedelta(seconds=max(text.resolution_s or 0, structured.resolution_s or 0))
            if abs(text.reset_at - structured.reset_at) > slack:
                failures.append(
                    f"text reset {text.reset_at} and structured {structured.reset_at} disagree"
                )
    assert not failures, f"{case}:\n" + "\n".join(failures) + f"\n--- printed:\n{printed[-3000:]}"
