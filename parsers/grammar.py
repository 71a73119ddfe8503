"""Pieces of grammar the providers share: times, dates, zones in parentheses, durations.

Every pattern is bounded: fixed-width pieces and `{m,n}` counts, no nested unbounded
quantifiers, so a scan stays linear in the length of the scrollback.
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import AnyStr

MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip

#: "5pm", "12:50am", "1 PM", "3:28\u202fPM" (the narrow space is folded to a space).
TIME_12 = r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s?(?P<meridiem>[AaPp]\.?[Mm]\.?)(?![A-Za-z])"
MONTH_NAME = (
    r"(?P<month>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
    r"(?:uary|ruary|ch|il|e|y|ust|t|tember|ober|ember)?\.?"
)
#: "15:30", "09:00", "19:00": a 24-hour clock, no meridiem after it, no seconds. Only the hours
#: no 12-hour clock prints: 13-23, or zero-padded (en-US never pads "9:00 AM"); a bare "12:30"
#: or "9:30" may be a 12-hour time whose meridiem was lost, so it is not read.
TIME_24 = (
    r"(?P<hour>0\d|1[3-9]|2[0-3]):(?P<minute>[0-5]\d)(?![\d:])"
    r"(?!\s?[AaPp]\.?[Mm]\.?(?![A-Za-z]))"
)
#: "Tuesday", "Tue", "Tues", "Thu", "Thurs", "Mon."; weekday_number maps it.
WEEKDAY = (
    r"(?P<weekday>Mon(?:day)?|Tue(?:s(?:day)?)?|Wed(?:nesday)?|Thu(?:r(?:s(?:day)?)?)?"
    r"|Fri(?:day)?|Sat(?:urday)?|Sun(?:day)?)\.?(?![A-Za-z])"
)
#: "(Europe/Berlin)", "(GMT+5:30)", also wrapped: "(America/New_\n   York)".
ZONE_IN_PARENS = r"\(\s{0,4}(?P<zone>[A-Za-z][A-Za-z0-9_/+:\-\s]{0,60}?)\s{0,4}\)"

_DURATION_UNIT = (
    r"(?:days?|d|hours?|hrs?|h|minutes?|mins?|m|milliseconds?|ms|seconds?|secs?|s)(?![A-Za-z])"
)
#: "8h44m7s", "2 days 10 hours 19 minutes", "10h 33m", "51820.6s", "89ms", "1 seconds", and
#: "less than a minute" (a wait somewhere under 60 s: read as 0 s to the minute).
DURATION = (
    rf"(?:(?:\d{{1,9}}(?:\.\d{{1,12}})?\s{{0,4}}{_DURATION_UNIT}[\s,]{{0,4}}(?:and\s+)?){{1,5}}"
    r"|less\s{1,4}than\s{1,4}(?:a|one)\s{1,4}minute\b)"
)

_DURATION_PART = re.compile(
    r"(?P<value>\d{1,9}(?:\.\d{1,12})?)\s{0,4}(?P<unit>days?|d|hours?|hrs?|h|minutes?|mins?|m"
    r"|milliseconds?|ms|seconds?|secs?|s)(?![A-Za-z])"
)
_UNIT_SECONDS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}


@dataclass(frozen=True, slots=True)
class Duration:
    seconds: float
    #: 0 when the text gives seconds or finer, 60 when it stops at minutes or coarser.
    resolution_s: int


def read_duration(text: str) -> Duration | None:
    """The total of a duration's parts, or None when it has none."""
    if text.startswith("less"):
        # Under a minute: the wait may be 0 s, and the minute's rest is its resolution.
        return Duration(seconds=0.0, resolution_s=60)
    total = 0.0
    has_seconds = False
    found = False
    for part in _DURATION_PART.finditer(text):
        found = True
        unit = part.group("unit").lower()
        value = float(part.group("value"))
        if unit == "ms" or unit.startswith("milli"):
            total += value / 1000.0
            has_seconds = True
        elif unit.startswith("min") or unit == "m":
            total += value * 60.0
        else:
            total += value * _UNIT_SECONDS[unit[0]]
            has_seconds = has_seconds or unit[0] == "s"
    if not found:
        return None
    return Duration(seconds=total, resolution_s=0 if has_seconds else 60)


def month_number(name: str) -> int:
    return MONTHS[name[:3].lower()]


_WEEKDAYS = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}


def weekday_number(name: str) -> int:
    """0 for Monday, as date.weekday() counts."""
    return _WEEKDAYS[name[:3].lower()]


_WHITE_SPACE = re.compile(r"\s+")


# Cached: called on printed zone names, a few of which recur in every text that has one.
@lru_cache(maxsize=1024)
def squeeze(text: str) -> str:
    """A token that a terminal wrapped: its white space removed ("New_\n  York" -> "New_York")."""
    return _WHITE_SPACE.sub("", text)


def any_within(sorted_positions: list[int], low: int, high: int) -> bool:
    """Whether any position lies in [low, high]; a binary search, so many matches in a long
    scrollback cost n log n, not n squared."""
    index = bisect_left(sorted_positions, low)
    return index < len(sorted_positions) and sorted_positions[index] <= high


#: How far a gated pattern reads on either side of a needle it holds, in characters other
#: than white space, the needle's own length included: a match starts and ends, and its
#: lookarounds look, within this many. White space is not counted: `\s+` lets a banner cross
#: any run of it (a box's padding, a wrapped line's indentation).
#: tests/unit/test_parsers_prefilters.py checks every gated pattern against it.
NEEDLE_REACH = 400


#: What a case-blind regex takes for an ASCII letter besides its two cases, by letter
#: (re.fullmatch("s", "\u017f", re.IGNORECASE)); none of them is in Latin-1.
#: tests/unit/test_parsers_prefilters.py checks this against every code point.
_CASE_KIN_OF_LETTER = {"i": "\u0130\u0131", "k": "\u212a", "s": "\u017f"}


#: Needles closer than this share one stretch, and a text no longer than this is read whole:
#: reading a few thousand characters costs less than working out where stretches end.
_SHARED_STRETCH_GAP = 10 * NEEDLE_REACH


class Gated:
    """A pattern read only where its needles are.

    Each needle is a literal that every match contains, so a text without one holds no match;
    a substring test costs far less than a regex pass, and most texts name few of the phrases.
    In a long text the pattern reads only the stretches around its needles: a megabyte of
    scrollback costs a search for each needle, not a regex pass over all of it for each
    pattern that one of its lines opened.
    """

    __slots__ = (
        "_ascii_spellings",
        "_case_blind_needle",
        "_case_kin",
        "_compiled",
        "flags",
        "needles",
        "regex",
    )

    def __init__(self, regex: str, needles: tuple[str, ...], flags: int = 0) -> None:
        self.regex = regex
        self.flags = flags
        self.needles = needles
        self._compiled: re.Pattern[str] | None = None
        # A case-blind pattern matches its needle in any case ("SpEnD"): it is found so too,
        # each spelling once.
        spellings = tuple(dict.fromkeys(needle.lower() for needle in needles))
        case_blind = bool(flags & re.IGNORECASE)
        self._case_blind_needle = (
            re.compile("|".join(map(re.escape, spellings)), re.IGNORECASE) if case_blind else None
        )
        self._ascii_spellings = (
            tuple(spelling.encode("ascii") for spelling in spellings)
            if case_blind and all(spelling.isascii() for spelling in spellings)
            else None
        )
        self._case_kin = "".join(
            dict.fromkeys(
                kin
                for spelling in spellings
                for letter in spelling
                for kin in _CASE_KIN_OF_LETTER.get(letter, "")
            )
        )

    @property
    def pattern(self) -> re.Pattern[str]:
        """The regex, compiled when a text first opens the gate: `rewake parse` reads one
        message, which opens a few of the patterns, and compiling them all would take longer
        than the parse."""
        if self._compiled is None:
            self._compiled = re.compile(self.regex, self.flags)
        return self._compiled

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """The matches self.pattern.finditer(text) gives.

        A long text is read in the stretches around the needles. Every match holds a needle
        and reads within NEEDLE_REACH of it, and a stretch reaches that far past each of its
        needles: no match is cut short where a stretch ends, and what matches at a position is
        what matches there in the whole text. Each search resumes where the last match ended,
        as finditer's does.
        """
        if len(text) <= _SHARED_STRETCH_GAP:
            yield from self.pattern.finditer(text)
            return
        resume = 0
        for start, end in self._stretches(text):
            for match in self.pattern.finditer(text, max(start, resume), end):
                resume = match.end()
                yield match

    def _stretches(self, text: str) -> list[tuple[int, int]]:
        """The stretches around the needles, in the order of the text, ones that touch joined.
        The look for a stretch's start stops at the stretch before it, and the look for its
        end at the next needle: where they meet the two are one stretch, so each character is
        looked at no more than twice however the needles and white space lie."""
        spans = self._needle_spans(text)
        stretches: list[tuple[int, int]] = []
        index = 0
        while index < len(spans):
            first_start, last_end = spans[index]
            index += 1
            while index < len(spans) and spans[index][0] - last_end <= _SHARED_STRETCH_GAP:
                last_end = max(last_end, spans[index][1])
                index += 1
            floor = stretches[-1][1] if stretches else 0
            ceiling = spans[index][0] if index < len(spans) else len(text)
            start = _reach_back(text, first_start, floor)
            end = _reach_ahead(text, last_end, ceiling)
            if stretches and start <= floor:
                start = stretches.pop()[0]
            stretches.append((start, end))
        return stretches

    def _needle_spans(self, text: str) -> list[tuple[int, int]]:
        """Where the needles occur, in the order of the text."""
        searched = _searched(text)
        if self._ascii_spellings is not None and not any(
            (searched.holds(kin) if searched else kin in text) for kin in self._case_kin
        ):
            # Latin-1 with "?" for every other character keeps one byte per character, so
            # offsets stay; no character outside ASCII but the kin is an ASCII letter in
            # another case. A substring search in the lowered bytes is several times faster
            # than the case-blind regex.
            if searched is not None:
                return searched.lowered_spans_of(self._ascii_spellings)
            return _spans_of(text.encode("latin-1", "replace").lower(), self._ascii_spellings)
        if self._case_blind_needle is not None:
            # The search skips needles that overlap one it found; a needle's length in
            # NEEDLE_REACH covers them.
            return [match.span() for match in self._case_blind_needle.finditer(text)]
        if searched is not None:
            return searched.spans_of(self.needles)
        return _spans_of(text, self.needles)


def _spans_of(text: AnyStr, needles: Iterable[AnyStr]) -> list[tuple[int, int]]:
    """Where each needle occurs in text, overlaps included, in the order of the text."""
    spans: list[tuple[int, int]] = []
    for needle in needles:
        spans.extend(_occurrences(text, needle, text.find(needle)))
    spans.sort()
    return spans


def _occurrences(text: AnyStr, needle: AnyStr, first: int) -> list[tuple[int, int]]:
    """Every span of needle in text, overlaps included, from its first occurrence on (-1:
    none)."""
    spans = []
    at = first
    while at >= 0:
        spans.append((at, at + len(needle)))
        at = text.find(needle, at + 1)
    return spans


#: Whether the needle searches in a long text are remembered while the scanners read it
#: (_Searched). False gives the plain searches; tests/unit/test_parsers_prefilters.py parses
#: both ways and requires the same verdicts.
REMEMBER_SEARCHES = True


class _Searched:
    """What the needle searches found in one long text, for every gate and scanner that reads
    it. Each substring search of a megabyte of scrollback is a pass over all of it: GateIndex
    looks for every needle once to tell which gates open, and each opened gate then lists
    where its needles are. Remembered, a needle is looked for once per text: a listing starts
    at the first occurrence GateIndex found, a needle GateIndex found absent costs nothing
    more, and a needle two gates share ("overloaded_error") is listed once.

    A needle in Latin-1 is looked for in the text's Latin-1 copy, one byte per character
    ("?" for every other): a byte search runs over a quarter of the memory of a text that
    holds an emoji, and finds the needle exactly where the text holds it. The lowered copy
    that case-blind gates search is made from it, once."""

    __slots__ = ("_first", "_latin1", "_lowered", "_lowered_spans", "_spans", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._first: dict[str, int] = {}
        self._spans: dict[str, list[tuple[int, int]]] = {}
        self._lowered_spans: dict[bytes, list[tuple[int, int]]] = {}
        self._latin1: bytes | None = None
        self._lowered: bytes | None = None

    def holds(self, needle: str) -> bool:
        """needle in text, looked for at most once."""
        return self.first(needle) >= 0

    def first(self, needle: str) -> int:
        """text.find(needle), looked for at most once."""
        at = self._first.get(needle)
        if at is None:
            encoded = _latin1_needle(needle)
            at = self.text.find(needle) if encoded is None else self._bytes().find(encoded)
            self._first[needle] = at
        return at

    def lack(self, entries: tuple[_Entry, ...]) -> None:
        """Note that the text holds none of these needles (nor those inside them): it lacks
        the character they are filed under."""
        for needle, _, inner in entries:
            self._first[needle] = -1
            self.lack(inner)

    def spans_of(self, needles: Iterable[str]) -> list[tuple[int, int]]:
        """_spans_of(text, needles), each needle listed at most once."""
        spans: list[tuple[int, int]] = []
        for needle in needles:
            listed = self._spans.get(needle)
            if listed is None:
                encoded = _latin1_needle(needle)
                first = self.first(needle)
                listed = self._spans[needle] = (
                    _occurrences(self.text, needle, first)
                    if encoded is None
                    else _occurrences(self._bytes(), encoded, first)
                )
            spans.extend(listed)
        spans.sort()
        return spans

    def lowered_spans_of(self, spellings: Iterable[bytes]) -> list[tuple[int, int]]:
        """_spans_of(text.encode("latin-1", "replace").lower(), spellings), each spelling
        listed at most once."""
        if self._lowered is None:
            self._lowered = self._bytes().lower()
        spans: list[tuple[int, int]] = []
        for spelling in spellings:
            listed = self._lowered_spans.get(spelling)
            if listed is None:
                listed = self._lowered_spans[spelling] = _occurrences(
                    self._lowered, spelling, self._lowered.find(spelling)
                )
            spans.extend(listed)
        spans.sort()
        return spans

    def _bytes(self) -> bytes:
        if self._latin1 is None:
            self._latin1 = self.text.encode("latin-1", "replace")
        return self._latin1


# Needles are few and fixed: each one's Latin-1 form is worked out once.
_LATIN1_NEEDLES: dict[str, bytes | None] = {}


def _latin1_needle(needle: str) -> bytes | None:
    """The needle in Latin-1 when a search of a text's Latin-1 copy finds it exactly where the
    text holds it: each of its characters in Latin-1, none "?" (which stands for the others
    in the copy); else None."""
    try:
        return _LATIN1_NEEDLES[needle]
    except KeyError:
        pass
    try:
        encoded: bytes | None = needle.encode("latin-1")
    except UnicodeEncodeError:
        encoded = None
    if encoded is not None and b"?" in encoded:
        encoded = None
    _LATIN1_NEEDLES[needle] = encoded
    return encoded


class _Slot(threading.local):
    """The searches of the long text this thread is reading."""

    searched: _Searched | None = None


# One text at a time per thread, found again by identity: the scanners get the text, not a
# handle to its searches. Per thread, so parses in two threads do not keep replacing each
# other's searches; a _Searched holds its own text alive, so no other text can be it.
_SLOT = _Slot()


def _searched(text: str) -> _Searched | None:
    """The remembered searches of a long text; None for a short one, read whole anyway."""
    if not REMEMBER_SEARCHES or len(text) <= _SHARED_STRETCH_GAP:
        return None
    searched = _SLOT.searched
    if searched is None or searched.text is not text:
        searched = _SLOT.searched = _Searched(text)
    return searched


def forget_searches() -> None:
    """Let go of this thread's last long text's searches (and the text): its parse is done."""
    _SLOT.searched = None


def _visible(piece: str) -> int:
    """How many characters of piece are not white space: str.split splits at the characters
    the regex's white-space class matches."""
    return sum(map(len, piece.split()))


def _reach_back(text: str, position: int, floor: int) -> int:
    """A start at or after floor with NEEDLE_REACH characters other than white space from it
    to position, or floor when there are fewer. Each step looks back at least NEEDLE_REACH
    characters: a long run of white space costs a few steps, not one per character."""
    if position - floor <= NEEDLE_REACH:  # too few characters of any kind
        return floor
    start, missing = position, NEEDLE_REACH
    while missing > 0 and start > floor:
        step_start = max(start - max(2 * missing, NEEDLE_REACH), floor)
        missing -= _visible(text[step_start:start])
        start = step_start
    return start


def _reach_ahead(text: str, position: int, ceiling: int) -> int:
    """An end at or before ceiling with NEEDLE_REACH characters other than white space from
    position to it, or ceiling when there are fewer; stepped as _reach_back."""
    if ceiling - position <= NEEDLE_REACH:
        return ceiling
    end, missing = position, NEEDLE_REACH
    while missing > 0 and end < ceiling:
        step_end = min(end + max(2 * missing, NEEDLE_REACH), ceiling)
        missing -= _visible(text[end:step_end])
        end = step_end
    return end


def lines_led_by(
    text: str, glyphs: str, indent: int, start: int = 0, end: int | None = None
) -> list[int]:
    """The starts of the lines in text[start:end] where one of the glyphs stands after at most
    `indent` characters, in order: the only places a pattern that begins at a line's start
    with its indentation and a glyph can match. Found from the glyphs, not by trying the
    pattern at every line."""
    heads = set()
    for glyph in glyphs:
        at = text.find(glyph, start, end)
        while at >= 0:
            look_from = max(at - indent - 1, 0)
            newline = text.rfind("\n", look_from, at)
            # No line break within reach: the line starts too far back, unless at the text's.
            within_reach = newline >= 0 or look_from == 0
            if within_reach and newline + 1 >= start:
                heads.add(newline + 1)
            at = text.find(glyph, at + 1, end)
    return sorted(heads)


def all_needles(*gated: Gated) -> tuple[str, ...]:
    """Every needle of these patterns: when none occurs, none of them can match. A needle that
    contains another adds nothing to that test and is left out."""
    needles = {needle for pattern in gated for needle in pattern.needles}
    return tuple(
        sorted(
            needle
            for needle in needles
            if not any(other != needle and other in needle for other in needles)
        )
    )


def module_gates(namespace: dict[str, object], *extra: Gated) -> tuple[Gated, ...]:
    """The Gated patterns a scanner module defines, plus `extra` ones kept in tables."""
    return (*(value for value in namespace.values() if isinstance(value, Gated)), *extra)


#: Printable ASCII by the share of corpus texts holding each character, most common first.
#: A needle is filed under its least common character; characters not listed count as rarer.
_COMMON_CHARACTERS = " ertsialomuhcnypdgv:/Y.A()21'05Pfw,xEkC43\nb-qT9M6IUSR"


def _rarest(needle: str) -> str:
    def commonness(char: str) -> int:
        index = _COMMON_CHARACTERS.find(char)
        return len(_COMMON_CHARACTERS) - index if index >= 0 else 0

    return min(needle, key=commonness)


#: A needle, the patterns it opens, and the needles that contain it (tested only when it occurs).
_Entry = tuple[str, tuple[Gated, ...], tuple["_Entry", ...]]


class GateIndex:
    """Which of many Gated patterns can match a text, found once for all of them.

    A substring test costs about as much as a pass over the text; a one-character test is a
    memchr, many times cheaper. So each needle is filed under its rarest character and tested
    only when that character occurs, and a needle that contains another ("spend cap",
    "spend") only when the other occurs. Which patterns open is exactly what testing each
    pattern's needles would give.
    """

    __slots__ = ("_by_character",)

    def __init__(self, gated: Iterable[Gated]) -> None:
        gates_of: dict[str, list[Gated]] = {}
        for gate in gated:
            for needle in gate.needles:
                gates_of.setdefault(needle, []).append(gate)
        # Each needle hangs under the longest other needle it contains, if any.
        parent_of = {
            needle: max(
                (other for other in gates_of if other != needle and other in needle),
                key=len,
                default=None,
            )
            for needle in gates_of
        }

        def entry(needle: str) -> _Entry:
            inner = tuple(entry(child) for child in sorted(gates_of) if parent_of[child] == needle)
            return needle, tuple(gates_of[needle]), inner

        by_character: dict[str, list[_Entry]] = {}
        for needle in sorted(gates_of):
            if parent_of[needle] is None:
                by_character.setdefault(_rarest(needle), []).append(entry(needle))
        self._by_character = tuple(
            (character, tuple(entries)) for character, entries in sorted(by_character.items())
        )

    def open(self, text: str) -> set[Gated]:
        """The patterns with a needle in the text."""
        searched = _searched(text)
        # In a long text each needle's search is remembered for the gates that list it.
        holds = text.__contains__ if searched is None else searched.holds
        opened: set[Gated] = set()
        for character, entries in self._by_character:
            if character in text:
                for needle, gates, inner in entries:
                    if holds(needle):
                        opened.update(gates)
                        if inner:
                            _open_entries(holds, inner, opened)
            elif searched is not None:
                searched.lack(entries)
        return opened


def _open_entries(
    holds: Callable[[str], bool], entries: tuple[_Entry, ...], opened: set[Gated]
) -> None:
    for needle, gates, inner in entries:
        if holds(needle):
            opened.update(gates)
            if inner:
                _open_entries(holds, inner, opened)


def wrappable(phrase: str) -> str:
    """A regex for a phrase that a terminal may have wrapped anywhere, even inside a word:
    "try a\\n  gain at". Spaces match any white space; between letters a line break with its
    indentation may stand."""
    wrap = r"(?:\n[ \t]{0,12})?"
    parts = []
    for word in phrase.split(" "):
        parts.append(wrap.join(re.escape(char) for char in word))
    return r"\s{1,12}".join(parts)
