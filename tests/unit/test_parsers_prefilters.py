"""The shortcuts that make the parser fast change no answer: the fold, the gates, the lookahead."""

from __future__ import annotations

import random
import re
from pathlib import Path

from parsers import claude
from parsers.grammar import Gated, all_needles
from parsers.text import _FOLD, fold, normalize

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


def test_stop_lookahead_hides_no_banner() -> None:
    """The first-character lookahead of Claude's banner pattern finds what the pattern without
    it finds, on every corpus text."""
    source = claude._STOP.pattern.pattern
    lookahead = re.match(r"\(\?=\[[^\]]+\]\)", source)
    assert lookahead is not None
    plain = re.compile(source[lookahead.end() :])
    # One line per alternative, in each case it accepts, then every captured message.
    heads = (
        "5-hour limit reached\nsession limit reached\nSession limit reached\n"
        "Opus weekly limit reached\nSonnet weekly limit reached\nFable weekly limit reached\n"
        "Haiku weekly limit reached\nWeekly limit reached\nMonthly limit reached\n"
        "monthly limit reached\nYou've hit your limit\nYou're out of extra usage\n"
        "Claude usage limit reached\nLimit reached · resets 5pm\n"
    )
    texts = [heads] + [path.read_text(encoding="utf-8") for path in sorted(CORPUS.glob("*/*.txt"))]
    for text in texts:
        norm = normalize(text).norm
        expected = [(m.span(), m.groupdict()) for m in plain.finditer(norm)]
        assert [(m.span(), m.groupdict()) for m in claude._STOP.pattern.finditer(norm)] == expected
