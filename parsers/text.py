"""Terminal text made searchable: escapes removed, look-alike characters folded, offsets kept.

Patterns run on `Text.norm`; every offset into it maps back to the caller's original text with
`Text.original_offset`, so evidence always quotes what the CLI printed.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

# CSI (colours, cursor moves), OSC (titles, OSC 8 hyperlinks) ended by BEL or ST or cut off,
# and the two-byte escapes. Each alternative is a single bounded or negated-class run: linear.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x9b[0-?]*[ -/]*[@-~]"
    r"|\x1b[@-Z\\-_]"
)


_NEWLINE = re.compile("\n")
#: How far along a line its start or end is looked for before every line break is listed:
#: most lines are short, and listing the breaks of a megabyte costs a pass of its own.
_LINE_LOOK = 1024


def _fold_table() -> dict[int, str]:
    table: dict[int, str] = {}
    for code in range(0x00, 0x20):
        if code != 0x0A:
            table[code] = " "
    table[0x7F] = " "
    for code in range(0x80, 0xA0):
        table[code] = " "
    # Box drawing and block elements are borders and bars, never words.
    for code in range(0x2500, 0x25A0):
        table[code] = " "
    for char in "\u23bf\u2503\u2502\ufeff\u200b\u200c\u200d\u2060":
        table[ord(char)] = " "
    for char in "\u00a0\u2007\u202f\u2009\u200a\u2002\u2003\u3000":
        table[ord(char)] = " "
    # Claude 1.x printed U+2219 where 2.x prints U+00B7; one separator to match.
    table[0x2219] = "\u00b7"
    table[0x2022] = "\u00b7"
    for char in "\u2018\u2019\u02bc\u2032":
        table[ord(char)] = "'"
    for char in "\u201c\u201d":
        table[ord(char)] = '"'
    return table


_FOLD = _fold_table()


def _character_class(codes: list[int]) -> str:
    """A regex class of these code points, consecutive ones as ranges."""
    parts = []
    index = 0
    while index < len(codes):
        last = index
        while last + 1 < len(codes) and codes[last + 1] == codes[last] + 1:
            last += 1
        first_char, last_char = re.escape(chr(codes[index])), re.escape(chr(codes[last]))
        parts.append(first_char if last == index else f"{first_char}-{last_char}")
        index = last + 1
    return "[" + "".join(parts) + "]"


# Runs of characters the fold changes. str.translate looks every character of a non-ASCII
# text up in the table; the regex skips unchanged ones in C, so only the runs (box borders,
# odd spaces, quotes) are translated.
_FOLDABLE_RUN = re.compile(_character_class(sorted(_FOLD)) + "+")


def _fold_run(match: re.Match[str]) -> str:
    return match.group().translate(_FOLD)


def fold(text: str) -> str:
    """text.translate(_FOLD), at a fraction of the cost on text that is mostly unchanged."""
    # In ASCII the fold changes only control characters, the ones isprintable rejects besides
    # the newline: two passes in C tell a plain ASCII text without running the regex.
    if text.isascii() and text.replace("\n", " ").isprintable():
        return text
    return _FOLDABLE_RUN.sub(_fold_run, text)


@dataclass(slots=True)
class Text:
    """The original text and its searchable form, with the map between their offsets."""

    original: str
    norm: str
    # (norm offset, original offset) at the start of every kept run; strictly increasing.
    _runs_norm: list[int] = field(default_factory=list)
    _runs_orig: list[int] = field(default_factory=list)
    _newlines: list[int] | None = None

    def original_offset(self, norm_offset: int) -> int:
        """Where a position in `norm` stands in the original text."""
        index = bisect_right(self._runs_norm, norm_offset) - 1
        if index < 0:
            return norm_offset
        return self._runs_orig[index] + (norm_offset - self._runs_norm[index])

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The original span of norm[start:end], trimmed of surrounding white space."""
        while start < end and self.norm[start].isspace():
            start += 1
        while end > start and self.norm[end - 1].isspace():
            end -= 1
        if len(self._runs_norm) == 1:
            # One kept run (no escape, or escapes only before it): a plain shift, no search.
            shift = self._runs_orig[0] - self._runs_norm[0]
            return start + shift, max(start, end) + shift
        original_start = self.original_offset(start)
        original_end = self.original_offset(end - 1) + 1 if end > start else original_start
        return original_start, original_end

    def line_start(self, offset: int) -> int:
        """Where the line holding norm[offset] starts: a look back along the line, and on a
        line longer than _LINE_LOOK a binary search over every line break (a megabyte-long
        line with many matches on it stays linear)."""
        look_from = max(offset - _LINE_LOOK, 0)
        newline = self.norm.rfind("\n", look_from, offset)
        if newline >= 0 or look_from == 0:
            return newline + 1
        newlines = self._line_breaks()
        index = bisect_left(newlines, offset) - 1
        return newlines[index] + 1 if index >= 0 else 0

    def line_end(self, offset: int) -> int:
        """Where the line holding norm[offset] ends (its line break, or the text's end); as
        line_start, a look along the line first."""
        look_to = offset + _LINE_LOOK
        newline = self.norm.find("\n", offset, look_to)
        if newline >= 0:
            return newline
        if look_to >= len(self.norm):
            return len(self.norm)
        newlines = self._line_breaks()
        index = bisect_left(newlines, offset)
        return newlines[index] if index < len(newlines) else len(self.norm)

    def line_start_within(self, offset: int, reach: int) -> int:
        """max(line_start(offset), offset - reach), found by looking back at most `reach`
        characters: no list of every line break is built for one bounded look."""
        newline = self.norm.rfind("\n", max(offset - reach - 1, 0), offset)
        return newline + 1 if newline >= 0 else max(offset - reach, 0)

    def line_end_within(self, offset: int, reach: int) -> int:
        """min(line_end(offset), offset + reach), looking ahead at most `reach` characters."""
        newline = self.norm.find("\n", offset, offset + reach)
        return newline if newline >= 0 else min(offset + reach, len(self.norm))

    def around(self, start: int, end: int, reach: int = 240) -> str:
        """norm[start:end] with the rest of its line(s), at most `reach` on either side."""
        return self.norm[self.line_start_within(start, reach) : self.line_end_within(end, reach)]

    def _line_breaks(self) -> list[int]:
        if self._newlines is None:
            self._newlines = [match.start() for match in _NEWLINE.finditer(self.norm)]
        return self._newlines


def normalize(original: str) -> Text:
    """Strip terminal escapes and fold look-alike characters, remembering where each run came
    from. Replacements are one character for one, so only removed escapes shift offsets."""
    if "\x1b" not in original and "\x9b" not in original:
        # No escapes: one run, offsets equal.
        return Text(original, fold(original), [0], [0])
    runs_norm: list[int] = []
    runs_orig: list[int] = []
    pieces: list[str] = []
    norm_length = 0
    kept_from = 0
    for match in _ESCAPES.finditer(original):
        if match.start() > kept_from:
            runs_norm.append(norm_length)
            runs_orig.append(kept_from)
            piece = original[kept_from : match.start()]
            pieces.append(piece)
            norm_length += len(piece)
        kept_from = match.end()
    if kept_from < len(original) or not runs_norm:
        runs_norm.append(norm_length)
        runs_orig.append(kept_from)
        pieces.append(original[kept_from:])
    norm = fold("".join(pieces))
    return Text(original=original, norm=norm, _runs_norm=runs_norm, _runs_orig=runs_orig)
