"""The parser's shared pieces, each pinned on its own: text offsets, clock arithmetic, grammar."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from rewake.parsers.grammar import Gated, read_duration, wrappable
from rewake.parsers.text import normalize
from rewake.parsers.timeres import (
    Fold,
    Gap,
    Reset,
    Unambiguous,
    at_epoch,
    epoch_instant,
    next_time_of_day,
    next_weekday_time,
    read_wall,
    same_day_time,
    to_24h,
    wall_instant,
)
from rewake.parsers.verdict import Refusal
from rewake.parsers.zones import iana_zone, printed_zone

NEW_YORK = ZoneInfo("America/New_York")


def test_normalize_maps_offsets_back_across_removed_escapes() -> None:
    """After ANSI and OSC 8 escapes are removed, norm offsets still point into the original."""
    original = "\x1b[1;31mYou've\x1b[0m hit \x1b]8;;https://x\x1b\\your\x1b]8;;\x1b\\ limit"
    text = normalize(original)
    assert text.norm == "You've hit your limit"
    start, end = text.original_span(0, len(text.norm))
    assert original[start:end].startswith("You've")
    assert original[start:end].endswith("limit")
    word = text.norm.index("your")
    assert original[text.original_offset(word) : text.original_offset(word) + 4] == "your"


def test_normalize_folds_lookalikes_one_for_one() -> None:
    """Box borders, narrow spaces, curly quotes and U+2219 fold without changing length."""
    original = "│ You’ve hit your limit ∙ resets 3:28\u202fPM │"
    text = normalize(original)
    assert len(text.norm) == len(original)
    assert "You've hit your limit · resets 3:28 PM" in text.norm


@pytest.mark.parametrize(
    ("hour", "minute", "meridiem", "expected"),
    [
        (12, 0, "am", (0, 0)),
        (12, 30, "pm", (12, 30)),
        (1, 5, "PM", (13, 5)),
        (11, 59, "a.m.", (11, 59)),
    ],
)
def test_to_24h_reads_twelve_hour_clocks(
    hour: int, minute: int, meridiem: str, expected: tuple[int, int]
) -> None:
    """12am is midnight, 12pm noon, and the meridiem's case and dots do not matter."""
    assert to_24h(hour, minute, meridiem) == expected


def test_to_24h_rejects_impossible_times() -> None:
    """13pm, 0am and minute 60 are not times of day."""
    assert to_24h(13, 0, "pm") is None
    assert to_24h(0, 0, "am") is None
    assert to_24h(5, 60, "pm") is None


def test_read_wall_names_a_fold_with_both_instants() -> None:
    """1:30 on New York's fall-back night happens twice: EDT first, then EST."""
    reading = read_wall(date(2026, 11, 1), 1, 30, NEW_YORK)
    assert reading == Fold(
        datetime(2026, 11, 1, 5, 30, tzinfo=UTC), datetime(2026, 11, 1, 6, 30, tzinfo=UTC)
    )


def test_read_wall_names_a_gap() -> None:
    """2:30 on New York's spring-forward night is skipped: a Gap, not an instant."""
    assert isinstance(read_wall(date(2026, 3, 8), 2, 30, NEW_YORK), Gap)


def test_read_wall_is_unambiguous_on_an_ordinary_day() -> None:
    """An ordinary wall time has one instant."""
    reading = read_wall(date(2026, 7, 1), 17, 0, NEW_YORK)
    assert reading == Unambiguous(datetime(2026, 7, 1, 21, 0, tzinfo=UTC))


def test_wall_instant_takes_the_later_reading_in_a_fold() -> None:
    """A fold is read as its second instant (EST), never early."""
    instant = wall_instant(date(2026, 11, 1), 1, 30, NEW_YORK)
    assert instant == datetime(2026, 11, 1, 6, 30, tzinfo=UTC)


def test_wall_instant_refuses_a_gap_as_nonexistent() -> None:
    """A time in a gap is nonexistent_local_time."""
    result = wall_instant(date(2026, 3, 8), 2, 30, NEW_YORK)
    assert isinstance(result, Refusal)
    assert result.code == "nonexistent_local_time"


FIVE_HOURS = timedelta(hours=5, minutes=15)
DAY_WINDOW = timedelta(hours=25)


def test_next_time_of_day_keeps_a_five_hour_reset_that_passed_moments_ago() -> None:
    """Within a 5 h window, a time 9 minutes past is still that instant (due at once)."""
    observed = datetime(2026, 7, 1, 21, 9, tzinfo=UTC)  # 17:09 in New York
    result = next_time_of_day(17, 0, NEW_YORK, observed, limit=FIVE_HOURS, form="named_zone")
    assert isinstance(result, Reset)
    assert result.at == datetime(2026, 7, 1, 21, 0, tzinfo=UTC)


def test_next_time_of_day_in_a_day_window_takes_tomorrow() -> None:
    """A weekly "resets 8:37pm (UTC)" seen at 20:42:09 is tomorrow's 20:37, never today's."""
    observed = datetime(2026, 12, 1, 20, 42, 9, tzinfo=UTC)
    result = next_time_of_day(20, 37, UTC, observed, limit=DAY_WINDOW, form="named_zone")
    assert isinstance(result, Reset)
    assert result.at == datetime(2026, 12, 2, 20, 37, tzinfo=UTC)


def test_next_time_of_day_within_the_printed_minute_takes_the_later_in_a_day_window() -> None:
    """A weekly 8:42pm seen at 20:42:59, from a CLI that prints tomorrow's reset without a date
    too (Claude): tomorrow's 20:42 would be printed alike, so it is the reading, never today's
    (a day early if the CLI meant it). From one that dates another day's (Gemini): today's."""
    observed = datetime(2026, 12, 1, 20, 42, 59, tzinfo=UTC)
    claude = next_time_of_day(
        20, 42, UTC, observed, limit=DAY_WINDOW, form="named_zone", dateless_tomorrow=True
    )
    assert isinstance(claude, Reset)
    assert claude.at == datetime(2026, 12, 2, 20, 42, tzinfo=UTC)
    gemini = next_time_of_day(20, 42, UTC, observed, limit=DAY_WINDOW, form="named_zone")
    assert isinstance(gemini, Reset)
    assert gemini.at == datetime(2026, 12, 1, 20, 42, tzinfo=UTC)


def test_next_time_of_day_keeps_the_current_minute_in_a_five_hour_window() -> None:
    """A five-hour 8:42pm seen at 20:42:59: tomorrow lies beyond the window, so today's."""
    observed = datetime(2026, 12, 1, 20, 42, 59, tzinfo=UTC)
    result = next_time_of_day(
        20, 42, UTC, observed, limit=FIVE_HOURS, form="named_zone", dateless_tomorrow=True
    )
    assert isinstance(result, Reset)
    assert result.at == datetime(2026, 12, 1, 20, 42, tzinfo=UTC)


BERLIN = ZoneInfo("Europe/Berlin")


def test_a_dateless_time_that_recurs_under_24_h_on_a_short_day_is_refused() -> None:
    """Seen at 10:00 on the Saturday before Berlin springs forward (a 23-hour Sunday), Claude's
    dateless 10:30am names today's, 30 min ahead, and Sunday's, 23.5 h ahead, both printed
    without a date: in a weekly window neither is taken (day_ambiguous)."""
    observed = datetime(2027, 3, 27, 9, 0, tzinfo=UTC)  # 10:00 in Berlin
    result = next_time_of_day(
        10, 30, BERLIN, observed, limit=DAY_WINDOW, form="named_zone", dateless_tomorrow=True
    )
    assert isinstance(result, Refusal) and result.code == "day_ambiguous", result


def test_a_short_day_is_no_ambiguity_where_the_window_or_the_date_settles_it() -> None:
    """The same 10:30am in a five-hour window is today's (Sunday's lies beyond it); 11:30am
    recurs 24.5 h ahead, where Claude would print a date, so it is today's; and a CLI that
    dates another day's reset (Gemini) means today's."""
    observed = datetime(2027, 3, 27, 9, 0, tzinfo=UTC)  # 10:00 in Berlin
    five_hour = next_time_of_day(
        10, 30, BERLIN, observed, limit=FIVE_HOURS, form="named_zone", dateless_tomorrow=True
    )
    later = next_time_of_day(
        11, 30, BERLIN, observed, limit=DAY_WINDOW, form="named_zone", dateless_tomorrow=True
    )
    gemini = next_time_of_day(10, 30, BERLIN, observed, limit=DAY_WINDOW, form="named_zone")
    for result, wall in ((five_hour, (10, 30)), (later, (11, 30)), (gemini, (10, 30))):
        assert isinstance(result, Reset), result
        assert result.at == datetime(2027, 3, 27, *wall, tzinfo=BERLIN)


def test_next_time_of_day_beyond_the_window_is_stale() -> None:
    """A session reset printed for 17:00 and read at 17:11 would be tomorrow: beyond 5 h."""
    observed = datetime(2026, 7, 1, 21, 11, tzinfo=UTC)
    result = next_time_of_day(17, 0, NEW_YORK, observed, limit=FIVE_HOURS, form="named_zone")
    assert isinstance(result, Refusal)
    assert result.code == "stale"


def test_next_weekday_time_rolls_a_passed_weekday_to_next_week() -> None:
    """A "Tuesday 9am" seen on a Tuesday at 9:05 is next Tuesday's 9am, never today's."""
    observed = datetime(2026, 7, 7, 9, 5, tzinfo=UTC)  # a Tuesday
    window = timedelta(days=7, hours=1)
    result = next_weekday_time(1, 9, 0, UTC, observed, limit=window, form="named_zone")
    assert isinstance(result, Reset)
    assert result.at == datetime(2026, 7, 14, 9, 0, tzinfo=UTC)


def test_next_weekday_time_across_a_dst_change() -> None:
    """A "Tuesday 9am (America/New_York)" seen the Thursday before the spring change is
    9am EDT on the Tuesday after it (13:00Z)."""
    observed = datetime(2026, 3, 5, 15, 0, tzinfo=UTC)
    window = timedelta(days=7, hours=1)
    result = next_weekday_time(1, 9, 0, NEW_YORK, observed, limit=window, form="named_zone")
    assert isinstance(result, Reset)
    assert result.at == datetime(2026, 3, 10, 13, 0, tzinfo=UTC)


def test_same_day_time_never_rolls_to_tomorrow() -> None:
    """Codex's bare time is on the host's current date; one that has passed is stale."""
    observed = datetime(2026, 7, 1, 21, 11, tzinfo=UTC)
    result = same_day_time(17, 0, NEW_YORK, observed, form="local_time")
    assert isinstance(result, Refusal)
    assert result.code == "stale"


def test_epochs_in_milliseconds_and_seconds_agree() -> None:
    """An epoch in milliseconds is the same instant as in seconds; token counts are not."""
    assert epoch_instant(1755615600) == epoch_instant(1755615600000)
    assert epoch_instant(216327) is None
    assert epoch_instant(1e400) is None


def test_at_epoch_refuses_a_passed_reset() -> None:
    """An epoch more than 10 minutes before observed_at is stale."""
    observed = datetime(2026, 1, 1, tzinfo=UTC)
    result = at_epoch(observed.timestamp() - 3600, observed, limit=timedelta(days=1), form="epoch")
    assert isinstance(result, Refusal)
    assert result.code == "stale"


@pytest.mark.parametrize(
    ("text", "seconds", "resolution"),
    [
        ("8h44m7s", 31447, 0),
        ("2 days 10 hours 19 minutes", 2 * 86400 + 10 * 3600 + 19 * 60, 60),
        ("51820.6s", 51820.6, 0),
        ("89ms", 0.089, 0),
        ("10h 33m", 10 * 3600 + 33 * 60, 60),
        ("8h44m\n   7s", 31447, 0),
    ],
)
def test_read_duration(text: str, seconds: float, resolution: int) -> None:
    """Durations in every printed shape sum to seconds, with minute or second resolution."""
    duration = read_duration(text)
    assert duration is not None
    assert duration.seconds == pytest.approx(seconds)
    assert duration.resolution_s == resolution


def test_wrappable_matches_a_phrase_wrapped_inside_a_word() -> None:
    """A terminal wrap inside 'again' (with indentation) still matches; other text does not."""
    pattern = re.compile(wrappable("try again at"))
    assert pattern.search("or try a\n   gain at 8:41 AM")
    assert pattern.search("or try again at 8:41 AM")
    assert not pattern.search("or try a gain at 8:41 AM")


def test_gated_pattern_runs_only_when_a_needle_occurs() -> None:
    """A gate with its needle absent yields nothing; present, it yields every match."""
    gated = Gated(r"limit\s+reached", ("reached",))
    assert list(gated.finditer("no such words")) == []
    assert len(list(gated.finditer("limit reached, limit\nreached"))) == 2


def test_zone_lookup_accepts_aliases_and_refuses_unknowns() -> None:
    """Asia/Calcutta is Kolkata, Etc/GMT+5 is UTC-5; Etc/Unknown and paths are no zone."""
    calcutta = iana_zone("Asia/Calcutta")
    assert calcutta is not None
    assert calcutta.utcoffset(datetime(2026, 1, 1)) == timedelta(hours=5, minutes=30)
    gmt5 = iana_zone("Etc/GMT+5")
    assert gmt5 is not None
    assert gmt5.utcoffset(datetime(2026, 1, 1)) == timedelta(hours=-5)
    assert iana_zone("Etc/Unknown") is None
    assert iana_zone("../../etc/passwd") is None


def test_printed_zone_reads_short_names_and_offsets() -> None:
    """PST is -8 whatever the date; GMT+5:30 is exact; an unlisted name is not guessed."""
    pst = printed_zone("PST")
    assert pst is not None
    assert pst.utcoffset(None) == timedelta(hours=-8)
    half = printed_zone("GMT+5:30")
    assert half is not None
    assert half.utcoffset(None) == timedelta(hours=5, minutes=30)
    assert printed_zone("CET") is None
