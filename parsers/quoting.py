"""Rule 8: a banner that someone quotes, or that stands in code or a tool's output, is not a stop.

An agent talking about limits ("the CLI said 'You've hit your limit · resets 5pm' earlier")
mentions a banner without being stopped by it. Quotation marks in prose make a banner quoted:
Claude draws its own live banners and errors on ⏺ and ● lines too, so a line's glyph alone
says nothing, and missing a live banner could let an earlier reset decide.

Text the CLI shows from elsewhere holds banners that stopped nothing: a file read with line
numbers ("   12→"), a comment (// ..., /** ... */), a string constant (= "..."), a tool's
result (named by its tool_use_id), a pretty-printed JSON string value. The CLI prints its own
banners at the start of a line, or after its ⎿ / ● / ⚠ glyphs, never after these.
"""

from __future__ import annotations

import re

from parsers.text import Text

_ASSISTANT_LINE = re.compile(r"[ \t]{0,8}[⏺✦]")
_OPENING_QUOTES = "\"'`«"
_CLOSING_QUOTES = "\"'`»"
# Before an opening quote, these mean a JSON value or a list, not prose.
_JSON_CONTEXT = ":[{,("
#: How far along its line the quotation marks around a banner are looked for.
_REACH = 300
_WORD = re.compile(r"[A-Za-z]{2}")


#: What may stand before a banner on its line when it is shown from a file, code or a tool:
#: a line number of a file read, a comment's opening, an assignment's opening quote, a JSON
#: key of a pretty-printed value. Anchored at the line's start, run on its first part only.
_SHOWN_PREFIX = re.compile(
    r"[ \t]{0,40}(?:"
    # A file read ("    12→", Claude's Read tool) or a comment line, also as a JSON value.
    r"(?:\"[^\"\n]{1,60}\"[ \t]{0,4}:[ \t]{0,4}\"[ \t]{0,4})?(?:\d{1,7}[ \t]{0,2}→|//|/\*|<!--)"
    r"|(?P<doc>\*[ \t])"  # a doc comment's inner line, when a /* is open above it
    r"|[^\n]{0,120}?[=(][ \t]{0,4}[\"'`/]"  # x = "..., f("... or a /regex/
    r")"
)
#: A tool's result names the call it answers; Claude's terminal never shows the id itself.
_TOOL_RESULT_ID = re.compile(r"toolu_|tool_use_id|\"tool_result\"")
#: How far before a banner a tool result's id, or a comment's opening, is looked for.
_LOOK_BACK = 400


def is_quoted(text: Text, start: int, end: int) -> bool:
    """Whether norm[start:end] is a banner someone shows rather than the CLI's own: inside
    quotation marks in prose, or in a file read, code, or a tool's result (see above)."""
    return _in_quotes(text, start, end) or _shown(text, start)


def _shown(text: Text, start: int) -> bool:
    norm = text.norm
    back = max(0, start - _LOOK_BACK)
    line_start = text.line_start_within(start, _REACH)
    prefix = _SHOWN_PREFIX.match(norm, line_start, start) if line_start < start else None
    if prefix is not None:
        if prefix.group("doc") is None:
            return True
        # " * ..." is a bullet in prose (Gemini prints its quota lines so) unless a comment
        # opened above it is still open.
        if norm.rfind("/*", back, start) > norm.rfind("*/", back, start):
            return True
    return bool(_TOOL_RESULT_ID.search(norm, back, start))


def _in_quotes(text: Text, start: int, end: int) -> bool:
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
