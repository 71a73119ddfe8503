"""`rewake.printable`: what a terminal would act on is shown, never sent raw; the rest of the
text, and a JSON value read back, are unchanged."""

from __future__ import annotations

import json

import pytest

from rewake.printable import json_printable, printable

#: Every character a terminal may act on: C0 but tab, DEL, C1, the Unicode line separators and
#: the bidirectional controls.
ACTED_ON = [
    *(chr(c) for c in range(0x20) if c != 0x09),
    *(chr(c) for c in range(0x7F, 0xA0)),
    "\u061c", "\u200e", "\u200f", "\u2028", "\u2029",
    *(chr(c) for c in range(0x202A, 0x202F)),
    *(chr(c) for c in range(0x2066, 0x206A)),
]  # fmt: skip


@pytest.mark.parametrize("char", ACTED_ON, ids=[f"U+{ord(c):04X}" for c in ACTED_ON])
def test_each_control_character_is_shown_as_an_escape(char: str) -> None:
    """A control character becomes `\\xNN` (or `\\uNNNN`) on one line; only the line feed
    survives, and only where a block of CLI text asks for newlines."""
    shown = printable(f"a{char}b")
    code = ord(char)
    assert shown == (f"a\\x{code:02x}b" if code < 0x100 else f"a\\u{code:04x}b")
    kept = printable(f"a{char}b", newlines=True)
    assert kept == ("a\nb" if char == "\n" else shown)


def test_words_tabs_and_non_latin_text_are_unchanged() -> None:
    """Ordinary text (tabs, accents, box drawing, emoji, CJK) passes as it is."""
    text = "résumé\t── 5-hour limit · resets 5pm (Europe/Berlin) ⏳ 東京"
    assert printable(text) == text


def test_colour_codes_are_dropped_and_other_sequences_shown() -> None:
    """A CLI's colours carry no words and go; an OSC 52 clipboard write or an 8-bit CSI is
    shown, so a reader sees that the text tried one."""
    assert printable("\x1b[1;31mError\x1b[0m: x") == "Error: x"
    assert printable("\x1b]52;c;aGk=\x07") == "\\x1b]52;c;aGk=\\x07"
    assert printable("\x9b2J") == "\\x9b2J"


def test_printable_is_idempotent_and_takes_any_value() -> None:
    """Applying it twice changes nothing more; a non-string value is shown as its str."""
    once = printable("\x1b]0;t\x07\x9d")
    assert printable(once) == once
    assert printable(42) == "42" and printable(None) == "None"


def test_json_printable_escapes_what_json_leaves_raw_and_reads_back_the_same() -> None:
    """`json.dumps` escapes C0 but leaves DEL, C1 (U+009B CSI, U+009D OSC), the separators and
    the bidirectional controls raw; here they are \\u escapes, and the value is the same."""
    value = {"code": "\x9b2J\x9d0;owned\x9c", "zone": "\u202eEurope/Berlin\x7f", "n": [1, None]}
    text = json_printable(value, indent=2)
    assert not any(char in text for char in ACTED_ON if char != "\n")
    assert "\\u009b2J" in text and "\\u202e" in text
    assert json.loads(text) == value
