"""Rule 8: a banner that someone quotes is not a stop.

An agent talking about limits ("the CLI said 'You've hit your limit · resets 5pm' earlier")
mentions a banner without being stopped by it. Only quotation marks make a banner quoted:
Claude draws its own live banners and errors on ⏺ and ● lines too, so a line's glyph alone
says nothing, and missing a live banner could let an earlier reset decide.
"""

from __future__ import annotations

import re

from rewake.parsers.text import Text

_ASSISTANT_LINE = re.compile(r"[ \t]{0,8}[⏺✦]")
_OPENING_QUOTES = "\"'`«"
_CLOSING_QUOTES = "\"'`»"
# Before an opening quote, these mean a JSON value or a list, not prose.
_JSON_CONTEXT = ":[{,("
#: How far along its line the quotation marks around a banner are looked for.
_REACH = 300
_WORD = re.compile(r"[A-Za-z]{2}")


def is_quoted(text: Text, start: int, end: int) -> bool:
    """Whether norm[start:end] stands inside quotation marks in prose: prose continues after
    the closing mark, or the line is the assistant's (⏺, ✦)."""
    norm = text.norm
    # Most banners follow a word or a separator: no opening quote can stand before them, and
    # the line need not be found.
    if start == 0 or (norm[start - 1] not in _OPENING_QUOTES and not norm[start - 1].isspace()):
        return False
    line_start = text.line_start_within(start, _REACH)
    before = norm[line_start:start].rstrip()
    if not before or before[-1] not in _OPENING_QUOTES:
        return False
    # An escaped quote (\") is a string inside serialized JSON, not prose.
    ahead_of_quote = before[:-1].rstrip().removesuffix("\\").rstrip()
    if ahead_of_quote and ahead_of_quote[-1] in _JSON_CONTEXT:
        return False
    rest = norm[end : text.line_end_within(end, _REACH)]
    close = next((i for i, char in enumerate(rest) if char in _CLOSING_QUOTES), -1)
    if close < 0:
        return False
    if _WORD.search(rest, close + 1):
        return True
    return bool(_ASSISTANT_LINE.match(norm, text.line_start(start)))
