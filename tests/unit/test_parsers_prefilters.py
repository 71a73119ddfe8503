"""The shortcuts that make the parser fast change no answer: the fold, the gates, the lookahead."""

from __future__ import annotations

import math
import random
import re
import sys
from datetime import UTC, date, datetime, timedelta, timezone
from re import _constants as sre
from re import _parser as sre_parser
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from rewake.parsers import claude, general, grammar, parse, timeres
from rewake.parsers.grammar import NEEDLE_REACH, Gated, all_needles
from rewake.parsers.text import _FOLD, fold, normalize
from tests.support import corpus


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
    r"|(?P<hit>You(?:'ve|\s+have)?\s+(?:hit|reached)\s+your\s+"
    r"(?P<which>(?:[\w.+'-]{1,24}\s+){0,3}?)limit\b"
    r"(?!\s+of\s+requests)(?:\s+for\s+Claude\s+messages\b)?)"
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
        "You've hit your limit for Claude messages. Limits will reset at 9:30 AM.\n"
    )
    texts = [heads] + [case.text for case in corpus.cases()]
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


def test_gates_never_hide_a_match(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every gated pattern finds, reading only around its needles, exactly what its regex
    finds in the whole text, on every corpus text and wrapped, re-spaced and joined variants
    of it: a needle that a line break can split would hide a banner the regex reads."""
    from rewake.parsers import codex, gemini

    # Every text read in stretches, each needle in its own unless they touch.
    monkeypatch.setattr(grammar, "_SHARED_STRETCH_GAP", 0)
    rng = random.Random(14)
    texts = [case.text for case in corpus.cases()]
    texts.append("You're out of Codex\nmessages. Your rate limit resets on Dec 3, 2026 5:00 PM.")
    hidden = []
    for text in texts:
        for variant in [text, *_wrapped_variants(text, rng)]:
            norm = normalize(variant).norm
            for gate in (*claude.GATES, *codex.GATES, *gemini.GATES, *general.GATES):
                gated = [match.span() for match in gate.finditer(norm)]
                plain = [match.span() for match in gate.pattern.finditer(norm)]
                if gated != plain:
                    hidden.append((gate.pattern.pattern[:40], norm[:60]))
    assert hidden == []


#: Runs of white space a scrollback may hold between and inside banners: a box's padding,
#: blank lines, indentation, and the rarer spaces the fold leaves alone.
_WHITE_RUNS = (" " * 700, "\n" * 450, " \n " * 300, "\t" * 90, "    \n" * 160, "\u2028" * 30)


@pytest.mark.parametrize("shared_stretch_gap", [0, grammar._SHARED_STRETCH_GAP])
def test_gates_read_long_scrollback_as_the_whole_text(
    shared_stretch_gap: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every gated pattern finds the same matches around its needles as in the whole text, in
    long scrollback: corpus messages far apart and close together, runs of white space of
    every kind inside banners and between them, needles at the text's very start and end;
    with each needle in a stretch of its own, and with nearby ones sharing one."""
    from rewake.parsers import codex, gemini

    monkeypatch.setattr(grammar, "_SHARED_STRETCH_GAP", shared_stretch_gap)
    rng = random.Random(21)
    messages = [case.text for case in corpus.cases()]
    gates = (*claude.GATES, *codex.GATES, *gemini.GATES, *general.GATES)
    differing = []
    for round_ in range(60):
        parts = []
        for message in rng.sample(messages, rng.randint(1, 12)):
            for _ in range(rng.randint(0, 3)):  # a wide run where a space was
                at = message.find(" ", rng.randrange(len(message) or 1))
                if at >= 0:
                    message = message[:at] + rng.choice(_WHITE_RUNS) + message[at + 1 :]
            parts.append(message)
            parts.append(rng.choice(_WHITE_RUNS) * rng.randint(0, 3) + "x" * rng.randint(0, 2500))
        norm = normalize("".join(parts[:-1]) if round_ % 2 else "\n".join(parts)).norm
        for gate in gates:
            gated = [match.span() for match in gate.finditer(norm)]
            plain = [match.span() for match in gate.pattern.finditer(norm)]
            if gated != plain:
                differing.append((round_, gate.pattern.pattern[:40]))
    assert differing == []


def test_stretches_look_at_each_character_at_most_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Working out where stretches start and end looks at no character more than twice, even
    in white space with a short needle every few thousand characters, where each look could
    otherwise run on past many needles to find enough other characters."""
    looked_at = []
    counting = grammar._visible
    monkeypatch.setattr(
        grammar, "_visible", lambda piece: looked_at.append(len(piece)) or counting(piece)
    )
    gated = Gated(r"hit\s+your\s+limit", ("hit",))
    text = ("hit" + " " * 4500) * 300 + "hit your\n\n   limit"
    assert [match.span() for match in gated.finditer(text)] == [
        match.span() for match in gated.pattern.finditer(text)
    ]
    assert sum(looked_at) <= 2 * len(text)


#: Lines a long scrollback holds between CLI messages: shell output, a TUI's borders, a
#: stream-json row, an emoji (the text is then four bytes a character), Latin-1 and wider
#: letters, the case-blind regex's kin of ASCII letters, and "?" beside needle words.
_SCROLLBACK_NOISE = (
    "$ npm test",
    "  \u2713 renders the banner (12 ms)",
    "2026-07-25 14:03:11,123 INFO worker: job 4411 finished in 3.2s",
    "\u256d\u2500\u2500\u2500\u2500\u256e",
    "\x1b[1;32m\u2714\x1b[0m Compiled successfully",
    '{"type":"assistant","message":{"content":[{"type":"text","text":"Running the tests."}]}}',
    '{"captured_at":"2026-07-25T12:00:00Z","error":"fetch failed: ECONNRESET"}',
    "\U0001f590 caf\u00e9 \u00c9t\u00e9 \u4e2d\u6587 \u017fpend \u0130NSUFFICIENT",
    "Connection? refused? credit? usage? limit? 5pm?",
    "\u273b Brewed for 1h 14m 17s",
)


def _long_scrollbacks(count: int, seed: int) -> list[str]:
    """Scrollbacks of 5-80 KiB: noise with corpus messages of every CLI here and there."""
    rng = random.Random(seed)
    messages = [case.text for case in corpus.cases()]
    texts = []
    for _ in range(count):
        size = rng.randint(5_000, 80_000)
        parts: list[str] = []
        length = 0
        while length < size:
            part = rng.choice(messages) if rng.random() < 0.08 else rng.choice(_SCROLLBACK_NOISE)
            parts.append(part)
            length += len(part) + 1
        texts.append("\n".join(parts))
    return texts


@pytest.mark.parametrize("shared_stretch_gap", [0, grammar._SHARED_STRETCH_GAP])
def test_remembered_needle_searches_give_the_plain_verdicts(
    shared_stretch_gap: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parsing with a long text's needle searches remembered for every gate (and done in its
    Latin-1 copy) gives the verdicts of searching afresh for each gate, on every corpus text
    and on long generated scrollbacks; with every text read in stretches, and as parse does."""
    monkeypatch.setattr(grammar, "_SHARED_STRETCH_GAP", shared_stretch_gap)
    texts = [case.text for case in corpus.cases()]
    scrollbacks = 12 if shared_stretch_gap else 4
    texts += _long_scrollbacks(scrollbacks, seed=shared_stretch_gap + 3)
    observed = datetime(2026, 7, 25, 12, 0, tzinfo=UTC)

    def verdicts() -> list[Any]:
        return [parse(text, observed_at=observed, zone="Europe/Berlin") for text in texts]

    remembered = verdicts()
    monkeypatch.setattr(grammar, "REMEMBER_SEARCHES", False)
    assert verdicts() == remembered
    # The scrollbacks' verdicts rest on words found: the comparison is not of empty verdicts.
    assert sum(verdict.evidence is not None for verdict in remembered[-scrollbacks:]) >= (
        scrollbacks // 2
    )


@pytest.mark.parametrize(
    "text",
    [
        "x\u4e2dy and x?y, ECONNRESET",
        "\U0001f590 Connection refused \u00e9 credit \u017fpend Spend SPEND",
        "caf\u00e9 caf? \u00ff\u00ff \u273b \u273b",
    ],
)
def test_remembered_searches_find_each_needle_where_the_text_holds_it(text: str) -> None:
    """The remembered searches, in the Latin-1 copy or the text itself, find each needle at
    exactly the places str.find finds it, also needles with a "?", which in the copy stands
    for every character outside Latin-1, and needles outside Latin-1."""
    long_text = text + " " * 5_000 + text
    needles = ("x?y", "?", "ECONNRESET", "Connection", "caf\u00e9", "\u00ff", "\u273b", "Spend")
    searched = grammar._Searched(long_text)
    for needle in needles:
        assert searched.first(needle) == long_text.find(needle)
        assert searched.holds(needle) == (needle in long_text)
    assert searched.spans_of(needles) == grammar._spans_of(long_text, needles)
    # Listed twice, the second time from memory: the same spans.
    assert searched.spans_of(needles[::-1]) == grammar._spans_of(long_text, needles)
    spellings = (b"spend", b"connection", b"caf\xe9")
    lowered = long_text.encode("latin-1", "replace").lower()
    assert searched.lowered_spans_of(spellings) == grammar._spans_of(lowered, spellings)


def test_gate_index_opens_the_same_gates_with_searches_remembered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """GateIndex opens the same gates in a long text whether its needle searches are
    remembered or not, and every needle it notes absent is absent from the text."""
    from rewake.parsers import pipeline

    for text in _long_scrollbacks(6, seed=11):
        norm = normalize(text).norm
        remembered = pipeline._ALL_GATES.open(norm)
        searched = grammar._searched(norm)
        assert searched is not None
        assert all(norm.find(needle) == at for needle, at in searched._first.items())
        monkeypatch.setattr(grammar, "REMEMBER_SEARCHES", False)
        assert pipeline._ALL_GATES.open(norm) == remembered
        monkeypatch.setattr(grammar, "REMEMBER_SEARCHES", True)
        grammar.forget_searches()


def test_each_thread_remembers_the_searches_of_its_own_text() -> None:
    """A thread reading one long text does not see or replace another thread's remembered
    searches, and parses in threads give the verdicts of parses one after the other."""
    from concurrent.futures import ThreadPoolExecutor

    text, other = (normalize(t).norm for t in _long_scrollbacks(2, seed=5))
    mine = grammar._searched(text)
    with ThreadPoolExecutor(max_workers=1) as pool:
        theirs = pool.submit(grammar._searched, other).result()
    assert theirs is not None and theirs.text is other
    assert grammar._searched(text) is mine
    grammar.forget_searches()

    scrollbacks = _long_scrollbacks(8, seed=9)
    observed = datetime(2026, 7, 25, 12, 0, tzinfo=UTC)

    def verdict(text: str) -> Any:
        return parse(text, observed_at=observed, zone="Europe/Berlin")

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(verdict, scrollbacks)) == [verdict(t) for t in scrollbacks]


def test_case_blind_gates_find_their_needles_in_any_case() -> None:
    """A case-blind pattern reads a needle spelled in another case than its listed ones, as
    its regex does, wherever a listed one opened it."""
    gated = Gated(r"hit\s+your\s+spend\s+limit", ("spend", "Spend"), re.IGNORECASE)
    text = "Spend less.\n" + "." * 50_000 + "\nYou HIT your SpEnD\n   limit"
    assert [match.group() for match in gated.finditer(text)] == ["HIT your SpEnD\n   limit"]


def test_case_kin_lists_every_other_character_a_case_blind_letter_matches() -> None:
    """The table of characters a case-blind regex takes for an ASCII letter besides its two
    cases is complete, checked against every code point, and holds none from Latin-1."""
    any_letter = re.compile("|".join("abcdefghijklmnopqrstuvwxyz"), re.IGNORECASE)
    found: dict[str, str] = {}
    for code in range(0x80, 0x110000):
        char = chr(code)
        if any_letter.fullmatch(char):
            for letter in "abcdefghijklmnopqrstuvwxyz":
                if re.fullmatch(letter, char, re.IGNORECASE):
                    found[letter] = found.get(letter, "") + char
    assert found == grammar._CASE_KIN_OF_LETTER
    assert all(ord(char) > 0xFF for kin in found.values() for char in kin)


@pytest.mark.parametrize(
    "text",
    [
        "SpEnD and spend and SPEND; sPeNd",
        "caf\u00e9 \u00c9t\u00e9 spend \U0001f590 Spend \u2500\u2500 SPEND \u00ff",
        "\u017fpend: the long s is an s to the regex",
        "\u0130NSUFFICIENT and \u0131nsufficient, spend",
        "INSUFFICIENT insufficient \u00edNSUFFICIENT",
        "no needle here at all \u4e2d\u6587",
    ],
)
def test_case_blind_needles_are_found_where_the_case_blind_regex_finds_them(text: str) -> None:
    """A case-blind pattern's needles are found at least everywhere its case-blind regex
    finds them, in ASCII, Latin-1 and wider text, and with the non-ASCII letters a
    case-blind regex takes for ASCII ones (the long s, the dotted and dotless i)."""
    for needles in (("spend", "Spend", "SPEND"), ("nsufficient", "NSUFFICIENT")):
        gated = Gated("|".join(needles), needles, re.IGNORECASE)
        long_text = text + " " * 5_000 + text
        spans = set(gated._needle_spans(long_text))
        regex = re.compile("|".join(map(re.escape, needles)), re.IGNORECASE)
        assert {match.span() for match in regex.finditer(long_text)} <= spans
        assert all(regex.fullmatch(long_text, *span) for span in spans)


def test_naming_the_cli_only_where_two_read_alike_changes_no_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counting which CLI a text names only when two CLIs' scanners read the same words gives
    the verdicts that counting it whenever findings of two CLIs occur gives, on every corpus
    text and on scrollbacks that join messages of all three CLIs."""
    from rewake.parsers import pipeline

    rng = random.Random(8)
    texts = [case.text for case in corpus.cases()]
    texts += ["\n".join(rng.sample(texts, rng.randint(2, 8))) for _ in range(300)]
    # A JSON line that names no CLI is read by every CLI's scanner, at the line's place.
    json_lines = [
        '{"error":{"message":"Too many requests. Please retry in 30s"}}',
        '{"type":"error","message":"Too many requests. Please retry in 30s"}',
    ]
    texts += [
        f"{naming}\n{line}"
        for naming in ("Claude Code v2.1", "Gemini CLI v0.9", "OpenAI Codex v0.50", "")
        for line in json_lines
    ]
    observed = datetime(2026, 7, 25, 12, 0, tzinfo=UTC)

    def verdicts() -> list[Any]:
        return [parse(text, observed_at=observed, zone="Europe/Berlin") for text in texts]

    lazy = verdicts()
    read_alike = pipeline._read_alike
    seen: set[tuple[bool, bool]] = set()

    def whenever_two_clis(found: list[Any]) -> bool:
        two_clis = len({finding.provider for finding in found}) > 1
        seen.add((two_clis, read_alike(found)))
        return two_clis

    monkeypatch.setattr(pipeline, "_read_alike", whenever_two_clis)
    assert verdicts() == lazy
    # Both ways were taken: texts with two CLIs' findings that were and were not read alike.
    assert {(True, True), (True, False)} <= seen


def _reach(items: Any) -> float:
    """How many characters other than white space a parsed regex may read from where it
    starts, inf when unbounded. White space it matches is not counted; the one character after
    a run, an anchor's or a lookaround's end, that a test reads and may find visible, is."""
    total = 0.0
    for op, value in items:
        if op is sre.LITERAL:
            total += not chr(value).isspace()
        elif op in (sre.NOT_LITERAL, sre.ANY, sre.AT):
            total += 1
        elif op is sre.IN:
            total += not _white_space_class(value)
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            _, most, item = value
            width = _reach(item)
            total += 1 + (0 if width == 0 else math.inf if most == sre.MAXREPEAT else most * width)
        elif op is sre.SUBPATTERN:
            total += _reach(value[3])
        elif op is sre.ATOMIC_GROUP:
            total += _reach(value)
        elif op is sre.BRANCH:
            total += max(_reach(branch) for branch in value[1])
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            total += 1 + _reach(value[1])
        else:
            raise AssertionError(f"no reach known for {op}")
    return total


def _pattern_reach(pattern: re.Pattern[str]) -> float:
    """_reach of a whole pattern, with the character after its end that it may read."""
    return 1 + _reach(sre_parser.parse(pattern.pattern, pattern.flags))


def _white_space_class(items: Any) -> bool:
    """Whether a character class matches only white space ([ \\t], \\s)."""
    for op, value in items:
        if op is sre.LITERAL and chr(value).isspace():
            continue
        if op is sre.RANGE and all(chr(code).isspace() for code in range(value[0], value[1] + 1)):
            continue
        if op is sre.CATEGORY and value is sre.CATEGORY_SPACE:
            continue
        return False
    return True


def test_every_gated_pattern_reads_within_the_needle_reach() -> None:
    """No gated pattern reads further from a needle than NEEDLE_REACH characters other than
    white space, its longest needle included: the stretches around needles hold every match."""
    from rewake.parsers import codex, gemini

    too_far = {}
    for gate in (*claude.GATES, *codex.GATES, *gemini.GATES, *general.GATES):
        reach = _pattern_reach(gate.pattern)
        longest_needle = max(map(len, gate.needles))
        if reach + longest_needle >= NEEDLE_REACH:
            too_far[gate.pattern.pattern[:40]] = reach + longest_needle
    assert too_far == {}


def test_reach_counts_white_space_runs_and_refuses_unbounded_reads() -> None:
    """The reach measure counts a run of white space as the one character that ends it, and a
    repeat of anything else without a bound as unbounded."""
    assert _pattern_reach(re.compile(r"hit\s+your")) == 9
    assert _pattern_reach(re.compile(r"a[^\n]{0,80}(?=\s|$)")) == 85
    assert _pattern_reach(re.compile(r"a.*b")) == math.inf


def test_white_space_is_the_same_to_str_split_and_the_regex() -> None:
    """The characters str.split splits at are exactly those the regex's white-space class
    matches, over all of Unicode: counting the characters between needles needs both to agree."""
    regex_space = re.compile(r"\s")
    differing = [
        hex(code)
        for code in range(sys.maxunicode + 1)
        if chr(code).isspace() != bool(regex_space.match(chr(code)))
    ]
    assert differing == []
