"""Round trips: render a limit message from a true reset as the CLI would, parse it back.

Each example draws a message family, a host zone, a true reset instant (often near a DST
change, a local midnight or a new year) and the moment the CLI printed it, renders the text
with tests/support/render.py and parses it with the observed_at and zone the host would report.

Left out on purpose, because the rules themselves make them ambiguous rather than the parser
wrong: a repeated wall time (DST fold: the rules take the later reading, so a reset at the
first reading comes out late, never early; checked separately), and a time of day without a
date more than 23 h 58 min ahead (Claude prints a bare time for any reset under 24 h ahead, so
one a day ahead to within the minute prints the minute passing at observed_at, which rule 3a
reads as that minute).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from rewake import parsers
from rewake.parsers import Verdict
from tests.support.render import (
    DAY,
    FAMILIES,
    FAMILIES_BY_NAME,
    HOST_ZONES,
    HOUR,
    MINUTE,
    TIME_OF_DAY_MAX_LEAD_S,
    Family,
    Rendered,
    claude_clock,
    claude_when,
    codex_duration_words,
    codex_retry_timestamp,
    fold_shift,
    gemini_reset_time,
    go_duration,
    local,
    local_midnight,
    utc_offset_changes,
)

EARLIEST = datetime(2025, 1, 1, tzinfo=UTC)
LATEST = datetime(2030, 12, 31, tzinfo=UTC)

PROPERTY_SETTINGS = settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@dataclass(frozen=True, slots=True)
class Scenario:
    """A message printed by one CLI at printed_at about a reset at true_reset."""

    family: Family
    zone: str
    true_reset: datetime
    printed_at: datetime
    rendered: Rendered

    @property
    def lead(self) -> timedelta:
        return self.true_reset - self.printed_at

    @property
    def fold(self) -> timedelta:
        """How much later than the truth the later reading of a repeated wall time is."""
        if self.rendered.wall_time is None or self.rendered.wall_zone is None:
            return timedelta(0)
        return fold_shift(self.rendered.wall_time, self.rendered.wall_zone)

    @property
    def ambiguous_by_rule(self) -> bool:
        """A dateless time so far ahead that rule 3's look-back reads it as yesterday's, or one
        that names a second instant the CLI prints alike (`short_day_twin`)."""
        return self.short_day_twin or (
            self.rendered.shape == "time_of_day"
            and self.rendered.provider != "codex"
            and self.lead > timedelta(seconds=TIME_OF_DAY_MAX_LEAD_S)
        )

    @property
    def short_day_twin(self) -> bool:
        """Claude's dateless wall time recurs, the day before (a minute not yet begun) or after
        (one beginning under 24 h after printing), which only a day that DST shortens allows:
        Claude prints both without a date, and outside a five-hour window the parser refuses
        (day_ambiguous; tests/unit/test_parser_pieces.py)."""
        rendered = self.rendered
        if rendered.shape != "time_of_day" or rendered.provider != "claude":
            return False
        if self.family.name in SHORT_SCOPE_TIMES or rendered.wall_time is None:
            return False
        tz = ZoneInfo(rendered.wall_zone or self.zone)
        for days in (-1, 1):
            other = rendered.wall_time + timedelta(days=days)
            start = other.replace(tzinfo=tz).astimezone(UTC)
            if start.astimezone(tz).replace(tzinfo=None) != other:
                continue  # the zone skips that wall time that day
            if self.printed_at < start < self.printed_at + timedelta(days=1):
                return True
        return False


@st.composite
def anchors(draw: st.DrawFn, zone: str) -> datetime:
    """An instant anywhere, or near a UTC-offset change, local midnight or new year in zone."""
    where = draw(
        st.sampled_from(["anywhere", "offset_change", "near_change", "midnight", "new_year"])
    )
    if where in ("offset_change", "near_change") and utc_offset_changes(zone):
        change = draw(st.sampled_from(utc_offset_changes(zone)))
        reach = 8 * HOUR if where == "offset_change" else 20 * MINUTE
        return change + timedelta(seconds=draw(st.integers(-reach, reach)))
    if where == "midnight":
        day = draw(st.dates(date(2025, 1, 2), date(2030, 12, 20)))
        return local_midnight(day, zone) + timedelta(seconds=draw(st.integers(-4 * HOUR, 4 * HOUR)))
    if where == "new_year":
        year = draw(st.integers(2026, 2030))
        midnight = local_midnight(date(year, 1, 1), zone)
        return midnight + timedelta(seconds=draw(st.integers(-2 * DAY, 2 * DAY)))
    span = int((LATEST - EARLIEST).total_seconds())
    return EARLIEST + timedelta(seconds=draw(st.integers(0, span)))


@st.composite
def scenarios(draw: st.DrawFn, families: tuple[Family, ...] = FAMILIES) -> Scenario:
    """A family, host zone, true reset and printing moment, and the text the CLI printed."""
    family = draw(st.sampled_from(families))
    zone = draw(st.sampled_from(HOST_ZONES))
    anchor = draw(anchors(zone))
    granularity = draw(st.sampled_from(family.granularities_s))
    if family.lead_in_ms:
        lead_ms = draw(st.integers(family.min_lead_s * 1000, family.max_lead_s * 1000))
        lead = timedelta(milliseconds=lead_ms)
    else:
        lead = timedelta(seconds=draw(st.integers(family.min_lead_s, family.max_lead_s)))
    if draw(st.booleans()):
        # The anchor is the reset.
        reset_s = int(anchor.timestamp()) // granularity * granularity
        true_reset = datetime.fromtimestamp(reset_s, UTC)
        printed_at = true_reset - lead
    else:
        # The anchor is the moment of printing: the reset is the last mark within the lead.
        printed_at = anchor
        reset_s = int((anchor + lead).timestamp()) // granularity * granularity
        true_reset = datetime.fromtimestamp(reset_s, UTC)
        if true_reset - printed_at < timedelta(seconds=family.min_lead_s):
            true_reset += timedelta(seconds=granularity)
    options = {name: draw(st.sampled_from(values)) for name, values in family.options.items()}
    rendered = family.render(true_reset, zone, printed_at, **options)
    return Scenario(family, zone, true_reset, printed_at, rendered)


def observed_as(instant: datetime, zone: str, how: str) -> datetime:
    """The same instant with a different tzinfo: the parser must read it as an instant only."""
    if how == "host":
        return instant.astimezone(ZoneInfo(zone))
    if how == "fixed":
        return instant.astimezone(timezone(timedelta(hours=-7, minutes=-30)))
    return instant.astimezone(UTC)


def zone_arguments(scenario: Scenario, *, allow_missing: bool) -> st.SearchStrategy[str | None]:
    """What the host may pass as `zone`: its own, and when the text needs none, anything."""
    if scenario.rendered.needs_host_zone and not allow_missing:
        return st.just(scenario.zone)
    choices: list[str | None] = [scenario.zone, scenario.zone, None, "Etc/Unknown"]
    if not scenario.rendered.needs_host_zone:
        choices.append(HOST_ZONES[(HOST_ZONES.index(scenario.zone) + 7) % len(HOST_ZONES)])
    return st.sampled_from(choices)


def run_parse(
    scenario: Scenario, observed_at: datetime, zone: str | None, provider: str | None
) -> Verdict:
    """Parse the rendered text, noting everything a failure report needs."""
    note(f"family={scenario.family.name} host zone={scenario.zone}")
    note(f"text={scenario.rendered.text!r}")
    note(
        f"true reset={scenario.true_reset.isoformat()} printed_at={scenario.printed_at.isoformat()}"
    )
    note(f"observed_at={observed_at.isoformat()} zone={zone!r} provider={provider!r}")
    verdict = parsers.parse(
        scenario.rendered.text, observed_at=observed_at, zone=zone, provider=provider
    )
    note(f"verdict={verdict.to_json()}")
    return verdict


def assert_valid_refusal(verdict: Verdict) -> None:
    """A limit banner without reset_at is a provider_quota refusal with a known code."""
    assert verdict.kind == "provider_quota", f"a limit banner read as {verdict.kind}"
    assert verdict.refusal is not None
    assert verdict.refusal.code in parsers.REFUSAL_CODES


def assert_never_early(verdict: Verdict, true_reset: datetime) -> None:
    """The latest instant the verdict allows is at or after the true reset."""
    assert verdict.reset_at is not None and verdict.resolution_s is not None
    latest = verdict.reset_at + timedelta(seconds=verdict.resolution_s)
    assert true_reset <= latest, f"early by {true_reset - latest}"


LAGS = st.one_of(st.just(0), st.integers(1, 10 * MINUTE), st.integers(10 * MINUTE, 2 * DAY))
# "host" most often: aware arithmetic in a ZoneInfo tzinfo is wall-clock arithmetic in Python.
OBSERVED_TZINFOS = st.sampled_from(["utc", "host", "host", "fixed"])


def check_exact_or_refused(
    scenario: Scenario, lag_s: int, how: str, zone: str | None, provider: str | None
) -> None:
    """The general round trip: an interval holding the truth, or a refusal; never early."""
    observed = scenario.printed_at + timedelta(seconds=lag_s)
    verdict = run_parse(scenario, observed_as(observed, scenario.zone, how), zone, provider)
    zone_missing = zone in (None, "Etc/Unknown")
    if scenario.rendered.needs_host_zone and zone_missing:
        assert verdict.reset_at is None, "a wall time without its zone was placed anyway"
        assert_valid_refusal(verdict)
        assert verdict.refusal is not None
        allowed = {"zone_unknown"} if lag_s == 0 else {"zone_unknown", "stale"}
        assert verdict.refusal.code in allowed
        return
    if verdict.reset_at is None:
        assert_valid_refusal(verdict)
        return
    assert_never_early(verdict, scenario.true_reset)
    if lag_s == 0 or scenario.rendered.shape in ("dated", "epoch", "structured"):
        late = verdict.reset_at - scenario.true_reset
        assert late <= scenario.fold, f"late by {late}"
    elif scenario.rendered.shape == "duration":
        late = verdict.reset_at - scenario.true_reset
        assert late <= timedelta(seconds=lag_s), f"late by {late}, observed {lag_s} s after"


@PROPERTY_SETTINGS
@given(data=st.data(), scenario=scenarios())
def test_roundtrip_is_exact_or_refused_and_never_early(
    data: st.DataObject, scenario: Scenario
) -> None:
    """Any rendered banner parses to an interval holding the true reset, or to a refusal."""
    assume(not scenario.ambiguous_by_rule)
    check_exact_or_refused(
        scenario,
        data.draw(LAGS, label="seconds between printing and observing"),
        data.draw(OBSERVED_TZINFOS, label="observed_at tzinfo"),
        data.draw(zone_arguments(scenario, allow_missing=True), label="zone"),
        data.draw(st.sampled_from([None, scenario.rendered.provider]), label="provider"),
    )


def check_normal_path(scenario: Scenario, how: str, zone: str | None, provider: str | None) -> None:
    """The normal path: a live banner is read exactly, with its resolution and scope."""
    verdict = run_parse(
        scenario, observed_as(scenario.printed_at, scenario.zone, how), zone, provider
    )
    assert verdict.kind == "provider_quota", f"read as {verdict.kind}"
    assert verdict.refusal is None, f"refused: {verdict.refusal}"
    assert verdict.provider == scenario.rendered.provider
    assert verdict.reset_at is not None
    late = verdict.reset_at - scenario.true_reset
    assert late <= timedelta(0), f"late by {late}"
    assert_never_early(verdict, scenario.true_reset)


@PROPERTY_SETTINGS
@given(data=st.data(), scenario=scenarios())
def test_roundtrip_normal_path_is_not_refused(data: st.DataObject, scenario: Scenario) -> None:
    """A live banner for a reset 1 min to one window ahead, clear of DST folds, is read exactly."""
    assume(not scenario.ambiguous_by_rule)
    assume(scenario.fold == timedelta(0))
    check_normal_path(
        scenario,
        data.draw(OBSERVED_TZINFOS, label="observed_at tzinfo"),
        data.draw(zone_arguments(scenario, allow_missing=False), label="zone"),
        data.draw(st.sampled_from([None, scenario.rendered.provider]), label="provider"),
    )


@PROPERTY_SETTINGS
@given(scenario=scenarios())
def test_roundtrip_names_scope_and_resolution(scenario: Scenario) -> None:
    """A live banner's verdict names the scope the text names and the resolution it printed."""
    assume(not scenario.ambiguous_by_rule)
    assume(scenario.fold == timedelta(0))
    verdict = run_parse(scenario, scenario.printed_at, scenario.zone, None)
    assert verdict.reset_at is not None
    assert verdict.resolution_s == scenario.rendered.resolution_s, "resolution"
    if scenario.rendered.scope_pinned:
        assert verdict.scope == scenario.rendered.scope, "scope"


NOT_DURATIONS = tuple(
    family
    for family in FAMILIES
    if family.name not in ("codex_try_again_in", "gemini_capacity_reset_after")
)
SHORT_SCOPE_TIMES = ("claude_session_limit", "claude_five_hour")
AFTERS = st.one_of(
    st.integers(1, 9 * MINUTE), st.integers(11 * MINUTE, 17 * HOUR), st.integers(HOUR, 3 * DAY)
)


def passed_expectation(scenario: Scenario, after_s: int) -> set[str] | None:
    """The refusal codes allowed when read after_s past the reset; empty: read it exactly."""
    rendered = scenario.rendered
    observed = scenario.true_reset + timedelta(seconds=after_s)
    zone = scenario.zone
    same_local_date = local(observed, zone).date() == local(scenario.printed_at, zone).date()
    moments_ago = after_s <= 9 * MINUTE
    if rendered.shape in ("dated", "epoch", "structured") and after_s >= HOUR:
        return {"stale", "out_of_window"}
    if rendered.shape == "time_of_day" and rendered.provider == "codex" and same_local_date:
        return set() if moments_ago else {"stale"}
    short_scope = scenario.family.name in SHORT_SCOPE_TIMES and rendered.shape == "time_of_day"
    if rendered.shape == "time_of_day" and rendered.provider != "codex" and moments_ago:
        # Rule 3a: the grace stands only where the next occurrence is outside the window; in a
        # window that admits it, a passed time is the next day's, and so is one whose printed
        # minute is under way where the CLI prints tomorrow's reset alike (Claude, no date under
        # 24 h); Gemini dates another day's reset, so its minute under way is today's.
        printed_minute = scenario.true_reset.replace(second=0, microsecond=0)
        minute_not_passed = observed < printed_minute + timedelta(minutes=1)
        dated_elsewhere = rendered.provider == "gemini"
        return set() if short_scope or (minute_not_passed and dated_elsewhere) else {NEXT_DAY}
    if short_scope and 11 * MINUTE <= after_s <= 17 * HOUR:
        return {"stale", "out_of_window", "nonexistent_local_time"}
    return None


#: The expectation that a passed time of day is read as its next day's occurrence.
NEXT_DAY = "next_day"


def check_passed(scenario: Scenario, after_s: int, expected: set[str]) -> None:
    """Read after the reset: refused with an expected code, read exactly (moments ago in a
    short window), or read as the next day's occurrence (a window that admits it)."""
    observed = scenario.true_reset + timedelta(seconds=after_s)
    verdict = run_parse(scenario, observed, scenario.zone, scenario.rendered.provider)
    if expected == {NEXT_DAY}:
        assert verdict.reset_at is not None, f"refused a time of day {after_s} s past"
        later = verdict.reset_at - scenario.true_reset
        # A day on, give or take a DST change and the seconds the CLI cut.
        assert timedelta(hours=22, minutes=59) <= later <= timedelta(hours=25), later
        assert verdict.reset_at > observed - timedelta(minutes=1), "read as passed"
    elif expected:
        assert verdict.reset_at is None, "a reset that has passed was not refused"
        assert_valid_refusal(verdict)
        assert verdict.refusal is not None and verdict.refusal.code in expected
    else:
        assert verdict.reset_at is not None, f"refused a reset {after_s} s past"
        late = verdict.reset_at - scenario.true_reset
        assert late <= timedelta(0), f"late by {late}"
        assert_never_early(verdict, scenario.true_reset)


@PROPERTY_SETTINGS
@given(data=st.data(), scenario=scenarios(NOT_DURATIONS))
def test_passed_reset_is_stale_unless_moments_ago(data: st.DataObject, scenario: Scenario) -> None:
    """Scrollback read after the reset: stale when clearly passed; within 10 minutes exact
    in a 5 h window, the next day's occurrence in a window that admits it (rule 3a)."""
    assume(not scenario.ambiguous_by_rule)
    assume(scenario.fold == timedelta(0))
    after_s = data.draw(AFTERS, label="seconds after the true reset")
    expected = passed_expectation(scenario, after_s)
    assume(expected is not None)
    assert expected is not None
    check_passed(scenario, after_s, expected)


@pytest.mark.parametrize("zone", ["America/New_York", "Europe/Berlin", "Australia/Lord_Howe"])
def test_fold_takes_the_later_reading(zone: str) -> None:
    """A bare wall time repeated by a DST fold resolves to its later reading (rule 2)."""
    # The first reading of a repeated wall time: one minute before the clocks go back in 2026.
    first = next(
        change - timedelta(minutes=1)
        for change in utc_offset_changes(zone)
        if change.year == 2026 and fold_shift(wall_of(change - timedelta(minutes=1), zone), zone)
    )
    later = first + fold_shift(wall_of(first, zone), zone)
    printed_at = first - timedelta(hours=1)
    rendered = FAMILIES_BY_NAME["claude_session_limit"].render(first, zone, printed_at)
    verdict = parsers.parse(rendered.text, observed_at=printed_at, zone=zone)
    assert verdict.reset_at == later, rendered.text


def wall_of(instant: datetime, zone: str) -> datetime:
    """The naive wall time of the instant in the zone, to the minute."""
    return local(instant, zone).replace(second=0, microsecond=0, tzinfo=None)


# --------------------------------------------------------------------------- the renderers


@pytest.mark.parametrize(
    ("reset", "now", "zone", "printed"),
    [
        ("2026-05-11T13:36:59+00:00", "2026-05-11T09:00:00+00:00", "UTC", "1:36 PM"),
        ("2026-05-11T13:36:00+00:00", "2026-05-10T09:00:00+00:00", "UTC", "May 11th, 2026 1:36 PM"),
        (
            "2026-05-12T00:05:00+00:00",
            "2026-05-11T22:00:00+00:00",
            "UTC",
            "May 12th, 2026 12:05 AM",
        ),
        (
            "2026-05-13T12:00:00+00:00",
            "2026-05-11T22:00:00+00:00",
            "UTC",
            "May 13th, 2026 12:00 PM",
        ),
        ("2026-08-23T03:16:00+00:00", "2026-08-20T00:00:00+00:00", "UTC", "Aug 23rd, 2026 3:16 AM"),
        ("2026-08-21T03:16:00+00:00", "2026-08-20T00:00:00+00:00", "UTC", "Aug 21st, 2026 3:16 AM"),
        # 01:30Z is still the 11th in New York, where "now" is too.
        ("2026-05-12T01:30:00+00:00", "2026-05-11T20:00:00+00:00", "America/New_York", "9:30 PM"),
    ],
)
def test_codex_retry_timestamp(reset: str, now: str, zone: str, printed: str) -> None:
    """Codex prints a bare time on the host's current date, else month, ordinal day and year."""
    assert (
        codex_retry_timestamp(datetime.fromisoformat(reset), zone, datetime.fromisoformat(now))
        == printed
    )


@pytest.mark.parametrize(
    ("reset", "zone", "narrow", "printed"),
    [
        ("2026-01-15T22:55:00+00:00", "America/Los_Angeles", False, "2:55 PM PST"),
        ("2026-07-15T21:55:00+00:00", "America/Los_Angeles", False, "2:55 PM PDT"),
        ("2026-07-16T01:57:00+00:00", "America/Sao_Paulo", False, "10:57 PM GMT-3"),
        ("2026-07-16T09:00:00+00:00", "Asia/Kolkata", True, "2:30\u202fPM GMT+5:30"),
        ("2026-07-16T09:00:00+00:00", "UTC", False, "9:00 AM UTC"),
        ("2026-01-16T09:00:00+00:00", "Europe/London", False, "9:00 AM GMT"),
        ("2026-07-16T09:00:00+00:00", "Europe/London", False, "10:00 AM GMT+1"),
        ("2026-07-16T09:00:00+00:00", "Etc/GMT+5", False, "4:00 AM GMT-5"),
        ("2026-07-16T00:00:00+00:00", "Pacific/Honolulu", False, "2:00 PM HST"),
    ],
)
def test_gemini_reset_time(reset: str, zone: str, narrow: bool, printed: str) -> None:
    """Gemini prints en-US short names for US zones and GMT offsets for every other zone."""
    assert gemini_reset_time(datetime.fromisoformat(reset), zone, narrow) == printed


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (3 * HOUR + 2 * MINUTE + 59, "3 hours 2 minutes"),
        (4 * DAY + 2 * HOUR, "4 days 2 hours"),
        (4 * DAY + 20 * HOUR + 9 * MINUTE, "4 days 20 hours 9 minutes"),
        (61, "1 minutes"),
    ],
)
def test_codex_duration_words(seconds: int, words: str) -> None:
    """The old Codex duration floors to the minute and drops zero units."""
    assert codex_duration_words(seconds) == words


@pytest.mark.parametrize(
    ("milliseconds", "printed"),
    [
        (31447000, "8h44m7s"),
        (53000, "53s"),
        (89, "89ms"),
        (0, "0s"),
        (3600000, "1h0m0s"),
        (60500, "1m0.5s"),
    ],
)
def test_go_duration(milliseconds: int, printed: str) -> None:
    """Go's Duration.String, as Code Assist prints its reset delay."""
    assert go_duration(milliseconds) == printed


def test_claude_times() -> None:
    """Claude drops ":00", writes am/pm in lower case and dates only a reset 24 h or more ahead,
    even one on the next local day under 24 h ahead staying bare."""
    wall = datetime(2026, 7, 25, 0, 0)
    assert [
        claude_clock(wall.replace(hour=h, minute=m)) for h, m in ((0, 0), (12, 0), (17, 40))
    ] == ["12am", "12pm", "5:40pm"]
    reset = datetime(2026, 7, 26, 1, 0, tzinfo=UTC)  # 21:00 on the 25th in New York
    assert claude_when(reset, "America/New_York", reset - timedelta(hours=30)) == "Jul 25, 9pm"
    assert (
        claude_when(reset, "America/New_York", reset - timedelta(hours=30), "at") == "Jul 25 at 9pm"
    )
    assert claude_when(reset, "America/New_York", reset - timedelta(hours=2)) == "9pm"
    assert claude_when(reset, "America/New_York", reset - timedelta(hours=23, minutes=55)) == "9pm"
    assert claude_when(reset, "America/New_York", reset - timedelta(hours=24)) == "Jul 25, 9pm"
