"""The shortcuts that make the parser fast change no answer: the fold, the gates, the lookahead."""

from __future__ import annotations

import random
import re
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

from rewake.parsers import claude, timeres
from rewake.parsers.grammar import Gated, all_needles
from rewake.parsers.text import _FOLD, fold, normalize

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def test_fold_equals_translating_every_character() -> None:
    """fold gives what str.translate with the whole fold table gives, on any mix of characters."""
    rng = random.Random(7)
    alphabet = [chr(code) for code in _FOLD] + list("ab \n\u2713\u25a0\u24ff\u00a1\U0001f600")
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert fold(text) == text.translate(_FOLD)


def test_gate_with_one_needle_opens_only_when_it_occurs() -> None:
    """A one-needle gate runs its pattern exactly when the needle is in the text."""
    gated = Gated(r"Retrying\s+in\s+\d+", ("Retrying",))
    assert list(gated.finditer("retrying in 4")) == []
    assert [match.group() for match in gated.finditer("Retrying in 4")] == ["Retrying in 4"]


def test_scanner_needles_leave_out_needles_that_contain_another() -> None:
    """A needle that contains another one adds nothing to a scanner's any-needle test."""
    first = Gated(r"You've used \d+%", ("You've used",))
    second = Gated(r"You've hit", ("You've",))
    assert all_needles(first, second) == ("You've",)


#: Claude's banner pattern as first written, one named group per scope: the reference the
#: literal-first form (each alternative's first character outside its group) must agree with.
_PLAIN_STOP = re.compile(
    r"(?P<five_hour>5[- ]?hours?\s+limit\s+reached)"
    r"|(?P<session>[Ss]ession\s+limit\s+reached)"
    r"|(?P<weekly>(?:(?:Opus|Sonnet|Fable|Haiku)\s+)?[Ww]eekly\s+limit\s+reached)"
    r"|(?P<monthly>[Mm]onthly\s+limit\s+reached)"
    r"|(?P<hit>You(?:'ve)?\s+(?:hit|reached)\s+your\s+"
    r"(?P<which>(?:[\w.+'-]{1,24}\s+){0,3}?)limit\b"
    r"(?!\s+of\s+requests))"
    r"|(?P<extra>You're\s+out\s+of\s+extra\s+usage\b)"
    r"|(?P<credits_out>You're\s+out\s+of\s+(?:usage\s+)?credits\b)"
    r"|(?P<legacy>Claude(?:\s+(?:AI|Max|Pro))?\s+usage\s+limit\s+reached\b)"
    r"|(?P<continuing>Continuing)(?=\s+automatically\s+at\s)"
    r"|(?P<waiting>Usage\s+limit\s+reached(?:\s+again)?)(?=\s{0,3}·|[ \t]{0,3}\.?[ \t]*(?:\n|$))"
    r"|(?P<bare>Limit\s+reached)(?=\s{0,3}·\s{0,3}resets|[ \t]{0,3}\.?[ \t]*(?:\n|$))"
)
_PLAIN_SCOPES = {
    "five_hour": "five_hour",
    "session": "session",
    "weekly": "weekly",
    "monthly": "monthly",
    "extra": "extra_usage",
    "credits_out": "credits",
}


def _plain_reading(match: re.Match[str]) -> tuple[tuple[int, int], str | None, bool]:
    head = match.lastgroup
    if head == "hit":
        scope = claude.limit_scope(match.group("which"))
    else:
        scope = _PLAIN_SCOPES.get(head or "")
    return match.span(), scope, head == "bare"


def test_literal_first_stop_pattern_reads_as_the_plain_one() -> None:
    """Claude's banner pattern, written with each alternative's first character outside its
    group (so the regex engine skips positions in C), finds the same banners at the same spans
    with the same scopes as the plain pattern, on every alternative and every corpus text."""
    # One line per alternative, in each case it accepts, then every captured message.
    heads = (
        "5-hour limit reached\nsession limit reached\nSession limit reached\n"
        "Opus weekly limit reached\nSonnet weekly limit reached\nFable weekly limit reached\n"
        "Haiku weekly limit reached\nWeekly limit reached\nweekly limit reached\n"
        "Monthly limit reached\nmonthly limit reached\nYou've hit your limit\n"
        "You've hit your Opus limit\nYou've hit your daily limit\n"
        "You're out of extra usage\nClaude usage limit reached\nLimit reached · resets 5pm\n"
        "You're out of usage credits\nContinuing automatically at 4pm\n"
        "Usage limit reached again · set to continue automatically at 4pm\n"
        "You've hit your org's monthly usage limit\n"
        "Opus  nearly weekly limit reached\nSonnet\n  weekly limit reached\n"
    )
    texts = [heads] + [path.read_text(encoding="utf-8") for path in sorted(CORPUS.glob("*/*.txt"))]
    for text in texts:
        norm = normalize(text).norm
        expected = [_plain_reading(m) for m in _PLAIN_STOP.finditer(norm)]
        found = [
            (m.span(), claude._scope(m), m.group("bare") is not None)
            for m in claude._STOP.pattern.finditer(norm)
        ]
        assert found == expected


def test_read_wall_agrees_with_the_round_trip() -> None:
    """read_wall's offset comparison names the instants the aware round trip gives, on every
    day of a year with DST changes, at the hours they happen: one instant where the wall time
    survives the round trip, a fold where both readings survive, a gap where neither does."""
    zones = [
        ZoneInfo(name)
        for name in ("Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Tehran")
    ]
    zones.append(timezone(timedelta(hours=5, minutes=30)))
    for zone in zones:
        day = date(2025, 1, 1)
        while day.year == 2025:
            for hour in (0, 1, 2, 3, 23):
                for minute in (0, 30, 59):
                    wall = (day.year, day.month, day.day, hour, minute)
                    instants = []
                    for fold_ in (0, 1):
                        aware = datetime(*wall, tzinfo=zone, fold=fold_)
                        instant = aware.astimezone(UTC)
                        back = instant.astimezone(zone)
                        survives = (back.year, back.month, back.day, back.hour, back.minute)
                        instants.append((instant, survives == wall))
                    reading = timeres.read_wall(day, hour, minute, zone)
                    (first, first_ok), (second, second_ok) = instants
                    if first == second:
                        assert reading == timeres.Unambiguous(first)
                    elif first_ok and second_ok:
                        assert reading == timeres.Fold(first, second)
                    else:
                        assert not first_ok and not second_ok
                        assert reading == timeres.Gap(first, second)
            day += timedelta(days=1)


def _wrapped_variants(text: str, rng: random.Random) -> list[str]:
    """The text as a terminal may show it: each space once a line break with indentation,
    runs of spaces, and lines joined."""
    spaces = [index for index, char in enumerate(text) if char == " "]
    variants = [text.replace("\n", " "), text.replace(" ", "  ")]
    for index in rng.sample(spaces, min(len(spaces), 6)):
        variants.append(text[:index] + "\n    " + text[index + 1 :])
    return variants


def test_codex_and_gemini_gates_never_hide_a_match() -> None:
    """Every Codex and Gemini gated pattern finds, with its needle test, exactly what its
    regex finds without it, on every corpus text and wrapped, re-spaced and joined variants
    of it: a needle that a line break can split would hide a banner the regex reads."""
    from rewake.parsers import codex, gemini

    rng = random.Random(14)
    texts = [path.read_text(encoding="utf-8") for path in sorted(CORPUS.glob("*/*.txt"))]
    texts.append("You're out of Codex\nmessages. Your rate limit resets on Dec 3, 2026 5:00 PM.")
    hidden = []
    for text in texts:
        for variant in [text, *_wrapped_variants(text, rng)]:
            norm = normalize(variant).norm
            for gate in (*codex.GATES, *gemini.GATES):
                gated = [match.span() for match in gate.finditer(norm)]
                plain = [match.span() for match in gate.pattern.finditer(norm)]
                if gated != plain:
                    hidden.append((gate.pattern.pattern[:40], norm[:60]))
    assert hidden == []
