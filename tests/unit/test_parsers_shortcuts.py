"""The parser's shortcuts over text and JSON lines give what the plain ways give."""

from __future__ import annotations

import random
import re

import pytest

from rewake.parsers import text as text_module
from rewake.parsers.grammar import lines_led_by
from rewake.parsers.structured import json_lines, may_hold_json
from rewake.parsers.text import normalize


def test_bounded_line_looks_equal_line_bounds_capped_by_reach() -> None:
    """line_start_within and line_end_within are line_start and line_end capped at `reach`,
    at every offset of texts with long, short and empty lines."""
    rng = random.Random(11)
    for _ in range(300):
        original = "".join(rng.choice("ab \n") for _ in range(rng.randint(0, 60)))
        text = normalize(original)
        for reach in (0, 1, 3, 7, 240):
            for offset in range(len(text.norm) + 1):
                expected_start = max(text.line_start(offset), offset - reach)
                expected_end = min(text.line_end(offset), offset + reach)
                assert text.line_start_within(offset, reach) == expected_start
                assert text.line_end_within(offset, reach) == expected_end


def test_line_bounds_equal_the_line_breaks_around_an_offset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """line_start and line_end give the line break before and after every offset, whether the
    look along the line finds it or the list of every break is searched."""
    monkeypatch.setattr(text_module, "_LINE_LOOK", 5)
    rng = random.Random(12)
    for _ in range(300):
        original = "".join(rng.choice("ab \n" if rng.random() < 0.5 else "ab") for _ in range(40))
        text = normalize(original)
        norm = text.norm
        for offset in range(len(norm) + 1):
            assert text.line_start(offset) == norm.rfind("\n", 0, offset) + 1
            following = norm.find("\n", offset)
            assert text.line_end(offset) == (following if following >= 0 else len(norm))


def test_lines_led_by_a_glyph_are_every_line_a_pattern_at_its_start_matches() -> None:
    """The lines lines_led_by gives are a superset of the line starts where a pattern of
    indentation and a glyph matches, within the span asked for, and in order."""
    pattern = re.compile(r"^[ \t]{0,3}[>❯] \S", re.MULTILINE)
    rng = random.Random(13)
    for _ in range(2000):
        text = "".join(rng.choice("ab >❯\t\n") for _ in range(rng.randint(0, 40)))
        start = rng.randint(0, len(text))
        end = rng.randint(start, len(text))
        heads = lines_led_by(text, ">❯", 3, start, end)
        assert heads == sorted(set(heads))
        expected = [match.start() for match in pattern.finditer(text, start, end)]
        assert [head for head in heads if pattern.match(text, head, end)] == expected


def test_original_span_of_one_run_is_a_shift() -> None:
    """A text with one kept run (escapes only before it) maps spans by a shift, trimmed as
    before, and an empty or reversed span to its start."""
    text = normalize("\x1b[1m  usage limit  ")
    assert text.original_span(0, len(text.norm)) == (6, 17)
    assert text.original_span(3, 3) == (7, 7)
    assert text.original_span(5, 2) == (9, 9)


def test_may_hold_json_is_true_for_every_text_with_a_json_line() -> None:
    """The JSON shortcut skips only texts where no line starts with a brace."""
    for text in ('{"a":1}', 'x\n{"a":1}', "x {\n}", 'x\n {"a":1}', "", "{"):
        if list(json_lines(text)):
            assert may_hold_json(text)
    assert not may_hold_json('x {"a":1}')
