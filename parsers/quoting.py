"""Rule 8: a banner that someone quotes is not a stop.

An agent talking about limits ("the CLI said 'You've hit your limit · resets 5pm' earlier")
and assistant content in a transcript (Claude's ⏺ lines, Gemini's ✦ lines) mention banners
without being stopped by them.
"""

from __future__ import annotations

import re

from parsers.text import Text

_ASSISTANT_LINE = re.compile(r"[ \t]{0,8}(?:⏺|✦|●\s{0,2}(?:I|The|It|You)\b)")
_OPENING_QUOTES = "\"'`«"
_CLOSING_QUOTES = "\"'`»"
# Before an opening quote, these mean a JSON value or a list, not prose.
_JSON_CONTEXT = ":[{,("


def is_quoted(text: Text, start: int, end: int) -> bool:
    """Whether norm[start:end] stands inside assistant prose or inside quotation marks that
    prose continues after."""
    norm = text.norm
    line_start = text.line_start(start)
    if _ASSISTANT_LINE.match(norm, line_start):
        # A transcript flattened onto one line: after the tool-result glyph ⎿ (folded to a
        # space in norm) the words are the CLI's own output again.
        before = text.original[text.original_offset(line_start) : text.original_offset(start)]
        return "⎿" not in before
    before = norm[line_start:start].rstrip()
    if not before or before[-1] not in _OPENING_QUOTES:
        return False
    # An escaped quote (\") is a string inside serialized JSON, not prose.
    ahead_of_quote = before[:-1].rstrip().removesuffix("\\").rstrip()
    if ahead_of_quote and ahead_of_quote[-1] in _JSON_CONTEXT:
        return False
    line_end = text.line_end(end)
    rest = norm[end:line_end]
    close = next((i for i, char in enumerate(rest) if char in _CLOSING_QUOTES), -1)
    if close < 0:
        return False
    return bool(re.search(r"[A-Za-z]{2}", rest[close + 1 :]))
