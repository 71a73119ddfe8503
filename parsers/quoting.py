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

from rewake.parsers.text import Text

_ASSISTANT_LINE = re.compile(r"[ \t]{0,8}[⏺✦]")
_OPENING_QUOTES = "\"'`«"
_CLOSING_QUOTES = "\"'`»"
# Before an opening quote, these mean a JSON value or a list, not prose.
_JSON_CONTEXT = ":[{,("
#: How far along its line the quotation marks around a banner are looked for.
_REACH = 300
_WORD = re.compile(r"[A-Za-z]{2}")
# Only a sentence's end may follow: after a comma, a "+" or a ";" the quotation is a string
# in a list or a sum, as a CLI's own error dump prints them ('Please retry in 51820.6s.',).
_LINE_END_AFTER_QUOTE = re.compile(r"[ \t.!?)]*")


#: What may stand before a banner on its line when it is shown from a file, code or a tool:
#: a line number of a file read, a comment's opening, an assignment's opening quote, a JSON
#: key of a pretty-printed value. Anchored at the line's start, run on its first part only.
_SHOWN_PREFIX = re.compile(
    r"[ \t]{0,40}(?:"
    # A file read ("    12→", Claude's Read tool) or a comment line, also as a JSON value.
    r"(?:\"[^\"\n]{1,60}\"[ \t]{0,4}:[ \t]{0,4}\"[ \t]{0,4})?(?:\d{1,7}[ \t]{0,2}→|//|/\*|<!--)"
    r"|(?P<doc>\*[ \t])"  # a doc comment's inner line, when a /* is open above it
    r"|[^\n]{0,120}?[=(][ \t]{0,4}[\"'`/]"  # x = "..., f("... or a /regex/
    r"|/"  # a regex literal in a list: [ /You've hit your limit/i ]
    # A prompt line: what the user typed (not a menu's cursor: "❯ 1. Stop and wait ...").
    r"|❯[ \t](?![ \t]{0,3}\d{1,2}\.)"
    r")"
)
#: A line of code comment, or of a numbered file read: a banner right under it is in the file.
_CODE_LINE = re.compile(r"[ \t]{0,40}(?://|/\*|\*/|\d{1,7}[ \t]{0,2}→)")
_FENCE = "```"
#: How far back a Markdown code fence that is still open is looked for.
_FENCE_REACH = 4000
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
    if _TOOL_RESULT_ID.search(norm, back, start):
        return True
    if _CODE_LINE.match(norm, _previous_line_start(text, line_start, back)):
        return True
    # Inside a Markdown code fence someone opened above (an odd count of fences before it).
    fences = norm.count(_FENCE, max(0, start - _FENCE_REACH), start)
    return fences % 2 == 1


def _previous_line_start(text: Text, line_start: int, back: int) -> int:
    """Where the last line with words before the banner's line starts (within reach), or the
    banner's own line start when there is none."""
    norm = text.norm
    end = line_start - 1
    while end > back:
        start = norm.rfind("\n", back, end) + 1
        if start <= back and back > 0:
            break
        if norm[start:end].strip():
            return start
        end = start - 1
    return line_start


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
    # The whole quotation ends the line: a banner the CLI prints is never put in quotes.
    if _LINE_END_AFTER_QUOTE.fullmatch(rest, close + 1):
        return True
    return bool(_ASSISTANT_LINE.match(norm, text.line_start(start)))
